package pebblekv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/kvtest"
	"github.com/partita/partita/internal/kv/pebblekv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.DB {
		db, err := pebblekv.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestRangesOneState(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kvtest.RangesOneState(t, db)
}

// TestReopen checks that committed data survives a close and reopen.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = pebblekv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wantValue(t, db, "k", "v")
}

// wantValue fails t unless db holds value at key.
func wantValue(t *testing.T, db kv.DB, key, value string) {
	t.Helper()
	err := db.View(t.Context(), func(r kv.Reader) error {
		v, err := r.Get([]byte(key))
		if err == nil && string(v) != value {
			t.Errorf("Get(%s) = %q, want %q", key, v, value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenOlderFormat opens a store written in Pebble's oldest supported
// format (row blocks, no blob files), as a partita before value
// separation left it: the data is readable, and new large values are
// written and read back after the format is ratcheted up.
func TestOpenOlderFormat(t *testing.T) {
	dir := t.TempDir()
	old, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatMinSupported})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("v"), 4096)
	if err := old.Set([]byte("old"), big, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := old.Flush(); err != nil { // an sstable in the old format
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebblekv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("new"), big[:1000]) }); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"old": 4096, "new": 1000} {
		err := db.View(t.Context(), func(r kv.Reader) error {
			v, err := r.Get([]byte(key))
			if err == nil && len(v) != want {
				t.Errorf("Get(%s): %d bytes, want %d", key, len(v), want)
			}
			return err
		})
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
	}
}

// BenchmarkUpdate100x1K is the engine's ceiling for $batch: synced commits
// of 100 new 1 KiB values from 16 concurrent writers, no HTTP and no
// entity encoding. Run it long enough for flushes and compactions to count:
//
//	go test ./internal/kv/pebblekv -run '^$' -bench Update100x1K -benchtime 3000x
func BenchmarkUpdate100x1K(b *testing.B) {
	db, err := pebblekv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// Values are 1 KiB windows, each at its own offset, of a pool of random
	// characters from a 64-character alphabet: like the bench's payloads
	// (6 random bits a byte), Snappy cannot shrink them (a repeating pattern
	// would be compressed in the blob files and flatter the engine).
	pool := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pool {
		pool[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"[rng.IntN(64)]
	}
	var next atomic.Uint64
	b.SetBytes(100 * 1024)
	b.SetParallelism(8) // 16 writers on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := make([]byte, 0, 32)
		for pb.Next() {
			base := next.Add(100) - 100
			err := db.Update(context.Background(), func(tx kv.Txn) error {
				for i := range uint64(100) {
					key = fmt.Appendf(key[:0], "t/p%04d/r%012d", (base/100)%16, base+i)
					off := (base + i) * 7919 % uint64(len(pool)-1024)
					if err := tx.Set(key, pool[off:off+1024]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "entities/s")
}

// writeValues opens a store at "db" with opts, writes n values of size
// bytes under the keys k000000, k000001, …, and closes it. With
// opts.SeparateValues, values of 256 bytes or more must have gone to blob
// files.
func writeValues(t *testing.T, opts *pebblekv.Options, n, size int) {
	t.Helper()
	db, err := pebblekv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), size)
	for i := 0; i < n; i++ {
		key := []byte(fmt.Sprintf("k%06d", i))
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(key, value) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if size < 256 || !opts.SeparateValues {
		return
	}
	if len(blobFiles(t, opts.FS)) == 0 {
		t.Fatal("no blob files were written")
	}
}

// unreadableBlobs returns a store holding 4,096 values of 1 KiB in blob
// files that can no longer be read.
func unreadableBlobs(t *testing.T) *pebblekv.DB {
	return failingBlobs(t, func() bool { return true })
}

// failingBlobs returns a store holding 4,096 values of 1 KiB in blob
// files, reopened so that, once open, a read of a blob file fails when
// fail says so.
func failingBlobs(t *testing.T, fail func() bool) *pebblekv.DB {
	t.Helper()
	mem := vfs.NewMem()
	opts := &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1, SeparateValues: true}
	writeValues(t, opts, 4096, 1024)
	failing := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, ".blob") && fail() {
			return errorfs.ErrInjected
		}
		return nil
	})}
	opts.FS = errorfs.Wrap(mem, failing)
	db, err := pebblekv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	failing.On()
	return db
}

// TestIteratorReportsValueReadErrors checks that a value that cannot be read
// (separated values live in blob files, read when Value is called) is
// reported by Error instead of looking like an empty value.
func TestIteratorReportsValueReadErrors(t *testing.T) {
	db := unreadableBlobs(t)
	n := 0
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if v := it.Value(); v == nil {
				break
			}
			n++
		}
		return it.Error()
	})
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("after %d values, the iterator's error = %v, want the injected read error", n, err)
	}
}

// storeWithWALDir opens a store whose log is in a directory of its own,
// holding k=v, and returns both directories and the open store.
func storeWithWALDir(t *testing.T) (dir, wal string, db *pebblekv.DB) {
	t.Helper()
	dir, wal = t.TempDir(), filepath.Join(t.TempDir(), "wal")
	db, err := pebblekv.Open(dir, &pebblekv.Options{WALDir: wal})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	return dir, wal, db
}

// TestWALDir: with Options.WALDir the log files are written there, the
// data survives a reopen with the same WALDir, and opening with another
// WALDir fails (Pebble's OPTIONS check), since it would miss the log,
// saying in one line where the log is.
func TestWALDir(t *testing.T) {
	dir, wal, db := storeWithWALDir(t)
	for d, want := range map[string]bool{wal: true, dir: false} {
		logs, _ := filepath.Glob(filepath.Join(d, "*.log"))
		if (len(logs) > 0) != want {
			t.Errorf("log files in %s: %v, want some: %v", d, logs, want)
		}
	}
	db.Close()

	// A relative WALDir is relative to the working directory, as in
	// Pebble (not to the data directory).
	wd := t.TempDir()
	t.Chdir(wd)
	rel := t.TempDir()
	db2, err := pebblekv.Open(rel, &pebblekv.Options{WALDir: "wal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db2.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if logs, _ := filepath.Glob(filepath.Join(wd, "wal", "*.log")); len(logs) == 0 {
		t.Errorf("relative WALDir: no log files in %s", filepath.Join(wd, "wal"))
	}
	db2.Close()

	if db, err := pebblekv.Open(dir, nil); err == nil {
		db.Close()
		t.Fatal("opened without the WALDir the store was written with")
	} else if want := "the store's write-ahead log is in " + wal + ", where it was last served from (--wal-dir " + wal + "), not where this start says (no --wal-dir)"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("opened without the WALDir: %q; want one line with %q", err, want)
	}
	db, err = pebblekv.Open(dir, &pebblekv.Options{WALDir: wal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wantValue(t, db, "k", "v")
}

// mountTmpfs mounts a tmpfs with options opts for the test, or skips it
// where mounting is not allowed (not root), saying so.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("NOTICE: cannot mount a tmpfs here (%v: %s); %s skipped", err, strings.TrimSpace(string(out)), t.Name())
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// guardedStore opens a store in dir with o for the disk guard's tests
// and returns a write of one key, which it checks succeeds at first.
func guardedStore(t *testing.T, dir string, o *pebblekv.Options) (set func() error) {
	t.Helper()
	db, err := pebblekv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	set = func() error {
		return db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) })
	}
	if err := set(); err != nil {
		t.Fatalf("with room: %v", err)
	}
	return set
}

// TestWALDirLowSpace: the free-space guard watches the WAL's directory as
// well as the data directory, since Pebble dies when either fills. The WAL
// is on a small tmpfs that a filler leaves almost full; the data
// directory has room.
func TestWALDirLowSpace(t *testing.T) {
	mnt := mountTmpfs(t, "size=16m")
	set := guardedStore(t, t.TempDir(), &pebblekv.Options{WALDir: filepath.Join(mnt, "wal"), MemTableSize: 1 << 20, MinFreeBytes: 6 << 20})
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 12<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	err := set()
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); err = set() {
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(err, pebblekv.ErrLowDiskSpace) || !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("WAL directory nearly full: Update = %v, want ErrLowDiskSpace and ErrUnavailable", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := set(); err != nil {
		t.Errorf("after the filler is gone: %v", err)
	}
}

// fatalStore opens a store on an in-memory file system that fails the
// operations fail picks once the returned toggle is on. Options.OnFatal
// sends what the store reports to the returned channel. The store is left
// open: a fatal error leaves Pebble's goroutine blocked.
func fatalStore(t *testing.T, fail func(op errorfs.Op) error) (*pebblekv.DB, *errorfs.Toggle, chan error) {
	t.Helper()
	return fatalStoreOn(t, vfs.NewMem(), fail)
}

// fatalStoreOn is fatalStore on mem.
func fatalStoreOn(t *testing.T, mem *vfs.MemFS, fail func(op errorfs.Op) error) (*pebblekv.DB, *errorfs.Toggle, chan error) {
	t.Helper()
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(fail)}
	fatal := make(chan error, 1)
	db, err := pebblekv.Open("db", &pebblekv.Options{
		FS:           errorfs.Wrap(mem, toggle),
		MemTableSize: 1 << 20,
		MinFreeBytes: -1,
		Logger:       slog.New(slog.DiscardHandler),
		OnFatal:      func(err error) { fatal <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, toggle, fatal
}

// writeUntilFatal writes 1 KiB values from a goroutine of its own (the
// write that hits the error never returns) until the store reports a
// fatal error, and returns it.
func writeUntilFatal(t *testing.T, db *pebblekv.DB, fatal chan error) error {
	t.Helper()
	go func() {
		value := bytes.Repeat([]byte("v"), 1024)
		for i := 0; i < 1<<20; i++ {
			key := []byte(fmt.Sprintf("k%07d", i))
			if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(key, value) }); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-fatal:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("no fatal error reported within 60 s")
		return nil
	}
}

// TestFatalWALError: a failed write to the write-ahead log is reported to
// Options.OnFatal (Pebble's commit pipeline cannot go on), not panicked
// into whichever request was committing.
func TestFatalWALError(t *testing.T) {
	db, toggle, fatal := fatalStore(t, func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) && strings.HasSuffix(op.Path, ".log") {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})
	toggle.On()
	err := writeUntilFatal(t, db, fatal)
	if !errors.Is(err, pebblekv.ErrFatal) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("OnFatal got %v, want ErrFatal and ENOSPC", err)
	}
}

// TestFatalPermissionLoss: when the data directory stops accepting new
// files, the flush that can never succeed (and would leave every later
// write stalled) and the log rotation that Pebble panics on are both
// reported to Options.OnFatal.
func TestFatalPermissionLoss(t *testing.T) {
	db, toggle, fatal := fatalStore(t, func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate || op.Kind == errorfs.OpReuseForWrite {
			return &os.PathError{Op: "open", Path: op.Path, Err: syscall.EACCES}
		}
		return nil
	})
	toggle.On()
	err := writeUntilFatal(t, db, fatal)
	if !errors.Is(err, pebblekv.ErrFatal) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("OnFatal got %v, want ErrFatal and EACCES", err)
	}
}

// TestFatalTableWriteIOError: a flush whose sstable or blob file writes
// fail with an I/O error would fail again at every retry, with the
// memtables filling behind it; it is reported to Options.OnFatal. The
// disk reports little free space, so table files are written straight
// through and the error reaches Pebble as a failed write (gathered, it
// would be fatal at the file's sync anyway).
func TestFatalTableWriteIOError(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 100 << 20, TotalBytes: 1 << 30})
	db, toggle, fatal := fatalStoreOn(t, mem, func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) &&
			(strings.HasSuffix(op.Path, ".sst") || strings.HasSuffix(op.Path, ".blob")) {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.EIO}
		}
		return nil
	})
	toggle.On()
	err := writeUntilFatal(t, db, fatal)
	if !errors.Is(err, pebblekv.ErrFatal) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("OnFatal got %v, want ErrFatal and EIO", err)
	}
}

// TestOpenCannotRecover: when replaying the write-ahead log cannot be
// written out (the disk is full), Open fails at once with
// ErrCannotRecover instead of retrying forever.
func TestOpenCannotRecover(t *testing.T) {
	mem := vfs.NewMem()
	writeValues(t, &pebblekv.Options{FS: mem, MinFreeBytes: -1}, 1, 1) // in the WAL only
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".sst") {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	toggle.On()
	// Pebble's Open goes on retrying in the background; let it finish.
	t.Cleanup(toggle.Off)
	done := make(chan error, 1)
	go func() {
		_, err := pebblekv.Open("db", &pebblekv.Options{FS: errorfs.Wrap(mem, toggle), MinFreeBytes: -1, Logger: slog.New(slog.DiscardHandler)})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, pebblekv.ErrCannotRecover) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Open = %v, want ErrCannotRecover and ENOSPC", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open neither returned nor failed within 30 s")
	}
}

// countingHandler counts the log records whose message starts with prefix.
type countingHandler struct {
	prefix string
	n      *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// TestBackgroundErrorsNotFlooded: a flush that keeps failing for want of
// space (retried by Pebble while the free-space guard refuses writes) is
// logged once, not at every retry.
func TestBackgroundErrorsNotFlooded(t *testing.T) {
	var n atomic.Int64
	toggle := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".sst") {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	db, err := pebblekv.Open("db", &pebblekv.Options{
		FS:           errorfs.Wrap(vfs.NewMem(), toggle),
		MemTableSize: 1 << 20,
		Logger:       slog.New(countingHandler{prefix: "background error", n: &n}),
		OnFatal:      func(err error) { t.Errorf("OnFatal(%v) with the guard on", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	toggle.On()
	value := bytes.Repeat([]byte("v"), 1024)
	for i := 0; i < 3000; i++ { // three memtables' worth: flushes are due
		key := []byte(fmt.Sprintf("k%05d", i))
		if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set(key, value) }); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // Pebble retries meanwhile
	if got := n.Load(); got < 1 || got > 2 {
		t.Errorf("%d background error lines in about 2 s of failing flushes, want 1 (or 2)", got)
	}
	toggle.Off()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIteratorValueErrorIsSticky: a value that cannot be read leaves its
// error with the iterator through later seeks. Pebble's own iterator
// clears it at the next seek, so a caller seeking key by key (a batch's
// reads of current values) saw nil for the unreadable value, as if the
// entity were absent, and no error at the end once a later value read.
func TestIteratorValueErrorIsSticky(t *testing.T) {
	// Only the first blob read fails: later values would read fine.
	var fails atomic.Int32
	fails.Store(1)
	db := failingBlobs(t, func() bool { return fails.Add(-1) >= 0 })
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		if !it.SeekGE([]byte("k000000")) {
			t.Fatal("k000000 not found")
		}
		if v := it.Value(); v != nil {
			t.Fatalf("the first blob read was to fail; got %d bytes", len(v))
		}
		if it.SeekGE([]byte("k002000")) {
			t.Errorf("a seek after a failed value read positioned the iterator (value %d bytes)", len(it.Value()))
		}
		return it.Error()
	})
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("the iterator's error after a seek = %v, want the injected read error", err)
	}
}

// TestGetReportsValueReadErrors: a point read of a separated value whose
// blob read fails returns the error. Pebble v2.1's Get returns nil and no
// error then (its Iterator.Value drops the error), which callers took
// for an empty value.
func TestGetReportsValueReadErrors(t *testing.T) {
	db := unreadableBlobs(t)
	for _, view := range []func(context.Context, func(kv.Reader) error) error{
		db.View,
		func(ctx context.Context, fn func(kv.Reader) error) error {
			return db.Update(ctx, func(tx kv.Txn) error { return fn(tx) })
		},
	} {
		err := view(context.Background(), func(r kv.Reader) error {
			v, err := r.Get([]byte("k000000"))
			if err == nil {
				t.Errorf("Get of an unreadable value: %d bytes and no error", len(v))
			}
			return err
		})
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("Get of an unreadable value: %v, want the injected read error", err)
		}
	}
}

// TestDirectoryReplacedIsFatal: a data directory moved away and replaced
// while the store is open (a backup restored in its place, a symlink
// re-pointed), or removed, stops the store within a second, before its
// next log or table lands among the new directory's files; Close still
// returns.
func TestDirectoryReplacedIsFatal(t *testing.T) {
	for _, c := range []struct {
		name  string
		after func(dir string) error
	}{
		{"replaced", func(dir string) error {
			if err := os.Rename(dir, dir+".old"); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o755)
		}},
		{"removed", os.RemoveAll},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			fatal := make(chan error, 1)
			db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, OnFatal: func(err error) { fatal <- err },
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			if err := c.after(dir); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-fatal:
				if !errors.Is(err, pebblekv.ErrFatal) || !errors.Is(err, pebblekv.ErrDirReplaced) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("OnFatal(%v); want ErrFatal and ErrDirReplaced naming %s", err, dir)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("the store's directory %s: no fatal error 2 s later", c.name)
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Errorf("the new directory holds %d files of the old store", len(names))
			}
		})
	}
}

// TestLockFileDeletedStillLocked: deleting a store's LOCK file while it
// is open (a "stale" lock removed by hand) no longer lets a second store
// open the directory: the directory's own lock refuses it before it
// writes anything there (it wrote a MANIFEST into the live store, and two
// servers then wrote files of the same numbers until neither opened). The
// first store stops within a second: its files were touched under it.
// Deleting every file stops it too, naming that, and the fatal line no
// longer promises what a restart cannot give.
func TestLockFileDeletedStillLocked(t *testing.T) {
	for _, c := range []struct {
		name string
		rm   func(dir string) error
	}{
		{"LOCK", func(dir string) error { return os.Remove(filepath.Join(dir, "LOCK")) }},
		{"every file", func(dir string) error {
			names, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			for _, n := range names {
				if err := os.RemoveAll(filepath.Join(dir, n.Name())); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			fatal := make(chan error, 1)
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, OnFatal: func(err error) { fatal <- err }, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
			if err := c.rm(dir); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadDir(dir)
			second, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, Logger: quiet})
			if err == nil {
				second.Close()
				t.Fatalf("a second store opened %s while the first had it open", dir)
			}
			if !errors.Is(err, pebblekv.ErrInUse) {
				t.Errorf("second Open: %v, want ErrInUse", err)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("the refused second Open changed the directory: %d entries, were %d", len(after), len(before))
			}
			select {
			case err := <-fatal:
				if !errors.Is(err, pebblekv.ErrFilesRemoved) {
					t.Fatalf("OnFatal(%v); want ErrFilesRemoved", err)
				}
				if m := pebblekv.FatalMessageFor(err); strings.Contains(m, "a restart recovers") || !strings.Contains(m, "removed or replaced") {
					t.Errorf("the fatal line for removed files: %q", m)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the store went on 2 s after its files were removed")
			}
		})
	}
}

// TestWALDirIsTheStoresOwn: Pebble locks only the data directory, and two
// stores given one WAL directory both wrote their "000004.log" there, over
// each other's. A second store is now refused a WAL directory in use, and
// a store is refused another store's WAL directory even when that store
// is closed (it would replay the other's logs as its own); the owner
// reopens with it, and each store is whole.
func TestWALDirIsTheStoresOwn(t *testing.T) {
	base := t.TempDir()
	wal := filepath.Join(base, "wal")
	open := func(name string) (*pebblekv.DB, error) {
		return pebblekv.Open(filepath.Join(base, name), &pebblekv.Options{WALDir: wal, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	a, err := open("a")
	if err != nil {
		t.Fatal(err)
	}
	set := func(db *pebblekv.DB, k string) error {
		return db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte(k), []byte(k)) })
	}
	if err := set(a, "a1"); err != nil {
		t.Fatal(err)
	}
	if b, err := open("b"); err == nil || !errors.Is(err, pebblekv.ErrInUse) || !strings.Contains(err.Error(), "WAL directory") {
		if b != nil {
			b.Close()
		}
		t.Fatalf("a second store on a WAL directory in use: Open = %v; want ErrInUse naming the WAL directory", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := open("b"); err == nil || !errors.Is(err, pebblekv.ErrWALDirOwned) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("a new store on another store's WAL directory: Open = %v; want ErrWALDirOwned", err)
	}
	if names, _ := os.ReadDir(filepath.Join(base, "b")); len(names) != 0 {
		t.Errorf("the refused store's data directory holds %d files", len(names))
	}
	a, err = open("a")
	if err != nil {
		t.Fatalf("the owner again: %v", err)
	}
	defer a.Close()
	err = a.View(t.Context(), func(r kv.Reader) error {
		v, err := r.Get([]byte("a1"))
		if err == nil && string(v) != "a1" {
			err = fmt.Errorf("a1 = %q", v)
		}
		return err
	})
	if err != nil {
		t.Fatalf("the owner's write: %v", err)
	}
}

// TestLowSpaceIsLogged: a store opened with more --min-free-mb than its
// disk has free refuses writes, and says why in the log at once (it was
// silent: only /readyz told), once, not at every check.
func TestLowSpaceIsLogged(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{MinFreeBytes: 1 << 60, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) })
	if !errors.Is(err, pebblekv.ErrLowDiskSpace) {
		t.Fatalf("Update with a minimum above the disk's free space: %v", err)
	}
	time.Sleep(600 * time.Millisecond) // two of the watcher's checks
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, "free disk space below the minimum"); n != 1 || !strings.Contains(out, "min_free_mb=1099511627776") {
		t.Errorf("the log names the low space %d times, want once with the minimum:\n%s", n, out)
	}
}

// TestReadOnlyWrongWALDir: a read-only open (partita check) given a WAL
// directory the store never used writes nothing there (it made the lock
// file, and warned that a missing directory could not be locked) and
// fails saying where the log is.
func TestReadOnlyWrongWALDir(t *testing.T) {
	dir, wal, db := storeWithWALDir(t)
	db.Close()
	empty, missing := t.TempDir(), filepath.Join(t.TempDir(), "nowhere")
	for _, other := range []string{empty, missing} {
		var logs strings.Builder
		db, err := pebblekv.Open(dir, &pebblekv.Options{ReadOnly: true, WALDir: other, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err == nil {
			db.Close()
			t.Fatalf("read-only open with --wal-dir %s: no error", other)
		}
		want := "the store's write-ahead log is in " + wal
		if other == missing {
			want = "WAL directory " + missing + " does not exist"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("read-only open with --wal-dir %s: %v; want %q", other, err, want)
		}
		if strings.Contains(logs.String(), "cannot be locked") {
			t.Errorf("read-only open with --wal-dir %s warned: %s", other, logs.String())
		}
		if names, _ := os.ReadDir(other); len(names) > 0 {
			t.Errorf("read-only open wrote %v into %s", names, other)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Errorf("read-only open made %s", missing)
		}
	}
	ro, err := pebblekv.Open(dir, &pebblekv.Options{ReadOnly: true, WALDir: wal})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	wantValue(t, ro, "k", "v")
}
