package pebblekv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// storeOn opens a store on a memory file system wrapped by inject, with
// MaxSyncDuration limit; fatal errors go to the channel.
func storeOn(t *testing.T, inject errorfs.Injector, limit time.Duration, log *slog.Logger) (*pebblekv.DB, chan error) {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fatal := make(chan error, 1)
	db, err := pebblekv.Open("db", &pebblekv.Options{
		FS:              errorfs.Wrap(vfs.NewMem(), inject),
		MinFreeBytes:    -1,
		MaxSyncDuration: limit,
		Logger:          log,
		OnFatal:         func(err error) { fatal <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, fatal
}

// stallingStore opens a store whose write-ahead log syncs, once armed,
// take as long as hold says (a stalled disk: until the test ends).
func stallingStore(t *testing.T, limit time.Duration, hold func() time.Duration, log *slog.Logger) (*pebblekv.DB, *atomic.Bool, chan error) {
	t.Helper()
	armed := new(atomic.Bool)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	inject := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) && strings.HasSuffix(op.Path, ".log") {
			select {
			case <-time.After(hold()):
			case <-release:
			}
		}
		return nil
	})
	db, fatal := storeOn(t, inject, limit, log)
	return db, armed, fatal
}

// writeFor writes new keys for d, calling each after every write, and
// returns how many it wrote.
func writeFor(t *testing.T, db *pebblekv.DB, d time.Duration, each func()) int {
	t.Helper()
	value := bytes.Repeat([]byte("v"), 1024)
	n := 0
	for deadline := time.Now().Add(d); time.Now().Before(deadline); n++ {
		key := []byte(fmt.Sprintf("k%07d", n))
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(key, value) }); err != nil {
			t.Fatal(err)
		}
		each()
	}
	return n
}

// TestFatalDiskStall: a sync of the write-ahead log that the disk never
// answers is a fatal error (ErrDiskStalled) once MaxSyncDuration has
// passed, instead of a commit, and every write behind it, waiting for
// ever.
func TestFatalDiskStall(t *testing.T) {
	db, armed, fatal := stallingStore(t, time.Second, func() time.Duration { return time.Hour }, nil)
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("before"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	start := time.Now()
	err := writeUntilFatal(t, db, fatal)
	if !errors.Is(err, pebblekv.ErrFatal) || !errors.Is(err, pebblekv.ErrDiskStalled) {
		t.Fatalf("OnFatal got %v, want ErrFatal and ErrDiskStalled", err)
	}
	// The limit, plus up to one tick (2 s) of Pebble's disk-health checks.
	if took := time.Since(start); took < time.Second || took > 5*time.Second {
		t.Errorf("fatal after %s, want between the 1 s limit and 5 s", took)
	}
	if !strings.Contains(err.Error(), ".log") {
		t.Errorf("fatal error %q does not name the stalled file", err)
	}
}

// TestSlowDiskIsNotFatal: syncs that take a while but return are not a
// stall: with each WAL sync taking 300 ms and the limit at 1 s, writes go
// on for 4 s without a fatal error.
func TestSlowDiskIsNotFatal(t *testing.T) {
	db, armed, fatal := stallingStore(t, time.Second, func() time.Duration { return 300 * time.Millisecond }, nil)
	armed.Store(true)
	n := writeFor(t, db, 4*time.Second, func() {})
	select {
	case err := <-fatal:
		t.Fatalf("a slow but answering disk was fatal: %v", err)
	default:
	}
	if n > 14 {
		t.Errorf("%d writes in 4 s with 300 ms syncs: the syncs were not slowed, the test proves nothing", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSlowDiskIsLogged: a sync that takes longer than a quarter of the
// limit but returns within it is logged as slow, and is not fatal.
func TestSlowDiskIsLogged(t *testing.T) {
	var mu sync.Mutex
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	var once atomic.Bool
	db, armed, fatal := stallingStore(t, 6*time.Second, func() time.Duration {
		if once.CompareAndSwap(false, true) {
			return 4 * time.Second // Pebble looks every 2 s: one look sees it past 1.5 s
		}
		return 0
	}, log)
	armed.Store(true)
	if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fatal:
		t.Fatalf("a 4 s sync under a 6 s limit was fatal: %v", err)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "disk slow") {
		t.Errorf("a 4 s sync was not logged as slow:\n%s", logged.String())
	}
}

// TestOpenOnStalledDisk: a store whose disk stops answering while it
// opens fails to open with ErrDiskStalled after MaxSyncDuration, instead
// of an Open that never returns.
func TestOpenOnStalledDisk(t *testing.T) {
	mem := vfs.NewMem()
	writeValues(t, &pebblekv.Options{FS: mem, MinFreeBytes: -1}, 1, 1)
	release := make(chan struct{})
	t.Cleanup(func() {
		// The disk answers again: the Open that was given up on runs
		// on, and must find what it uses (the block cache) intact.
		close(release)
		time.Sleep(500 * time.Millisecond)
	})
	stall := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData {
			<-release
		}
		return nil
	})
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := pebblekv.Open("db", &pebblekv.Options{FS: errorfs.Wrap(mem, stall), MinFreeBytes: -1, MaxSyncDuration: time.Second, Logger: slog.New(slog.DiscardHandler)})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, pebblekv.ErrCannotRecover) || !errors.Is(err, pebblekv.ErrDiskStalled) {
			t.Fatalf("Open on a stalled disk: %v, want ErrCannotRecover and ErrDiskStalled", err)
		}
		if strings.Contains(err.Error(), "free space") {
			t.Errorf("a stalled disk blamed on space: %v", err)
		}
		t.Logf("Open failed after %s: %v", time.Since(start).Round(100*time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("Open on a stalled disk still waits after 30 s")
	}
}

// TestCorruptBlockIsFatalWithAdvice: a read that finds an sstable block
// failing its checksum stops the store (Pebble's policy, kept), and the
// log says what the fatal line cannot: a restart does not repair the
// file; check and restore from a backup.
func TestCorruptBlockIsFatalWithAdvice(t *testing.T) {
	mem := vfs.NewMem()
	opts := &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1}
	writeValues(t, opts, 30000, 100) // kept in the sstables' blocks
	var biggest string
	var size int64
	names, _ := mem.List("db")
	for _, n := range names {
		if !strings.HasSuffix(n, ".sst") {
			continue
		}
		if fi, err := mem.Stat("db/" + n); err == nil && fi.Size() > size {
			biggest, size = "db/"+n, fi.Size()
		}
	}
	if size < 64<<10 {
		t.Fatalf("no sstable of 64 KiB or more: %v", names)
	}
	f, err := mem.OpenReadWrite(biggest, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 64), size/2); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var logged strings.Builder
	var mu sync.Mutex
	opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	fatal := make(chan error, 1)
	opts.OnFatal = func(err error) { fatal <- err }
	db, err := pebblekv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	go db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			it.Value()
		}
		return it.Error()
	})
	select {
	case err := <-fatal:
		if !errors.Is(err, pebblekv.ErrCorruption) || !strings.Contains(err.Error(), biggest[3:]) {
			t.Errorf("OnFatal got %v, want ErrCorruption naming %s", err, biggest)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a scan over a corrupt sstable did not stop the store")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "restore the data directory from a backup") {
		t.Errorf("no advice logged:\n%s", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestStalledCheckpointIsNotFatal: a checkpoint (an online backup) whose
// destination stops answering holds up the backup alone. Its files go
// through the store's file system, hence past the stall watch, but the
// store still answers, so it must not stop: writes go on meanwhile.
func TestStalledCheckpointIsNotFatal(t *testing.T) {
	release := make(chan struct{})
	stall := errorfs.InjectorFunc(func(op errorfs.Op) error {
		// The image is built under ".backup.partial-…", then renamed. It
		// stalls at its first file's data, once its directory exists.
		if strings.Contains(op.Path, "backup") && op.Kind == errorfs.OpFileWrite {
			<-release
		}
		return nil
	})
	db, fatal := storeOn(t, stall, time.Second, nil)
	backup := make(chan error, 1)
	go func() { backup <- db.Checkpoint(context.Background(), "backup") }()
	writeFor(t, db, 4*time.Second, func() {
		select {
		case err := <-fatal:
			t.Fatalf("a stalled checkpoint destination stopped the store: %v", err)
		case err := <-backup:
			t.Fatalf("the checkpoint finished (%v) while its destination stalled: the test proves nothing", err)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	})
	// Half written, the image is not under the backup's name: a server
	// killed now would leave nothing there that opens as a store.
	if _, err := pebblekv.StoreFS(db).Stat("backup"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the backup's own name during the copy: Stat = %v; want it absent until the image is whole", err)
	}
	close(release)
	if err := <-backup; err != nil {
		t.Fatalf("the checkpoint, once its destination answered: %v", err)
	}
	names, err := pebblekv.StoreFS(db).List("")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "backup") {
		t.Fatalf("the listing beside the backup does not show it: %v", names)
	}
	for _, name := range names {
		if strings.Contains(name, "partial") {
			t.Errorf("%s is left beside the finished backup", name)
		}
	}
	if _, err := pebblekv.StoreFS(db).Stat("backup/" + pebblekv.StoreVersionFile); err != nil {
		t.Errorf("the finished backup: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFailingCheckpointIsNotFatal: a checkpoint whose destination fails
// its writes (a full target file system) fails the backup alone. Pebble
// writes the image's copy of the write-ahead log through the store's file
// system; it is not the store's log, and its write errors must not stop
// the store as the store's own log's would (here the log's copy is what
// fails).
func TestFailingCheckpointIsNotFatal(t *testing.T) {
	full := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.Contains(op.Path, "backup") && strings.HasSuffix(op.Path, ".log") && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) {
			return syscall.ENOSPC
		}
		return nil
	})
	db, fatal := storeOn(t, full, time.Second, nil)
	for i := range 100 {
		if err := db.Update(context.Background(), func(tx kv.Txn) error {
			return tx.Set(fmt.Appendf(nil, "k%03d", i), bytes.Repeat([]byte("v"), 1000))
		}); err != nil {
			t.Fatal(err)
		}
	}
	backup := make(chan error, 1)
	go func() { backup <- db.Checkpoint(context.Background(), "backup") }()
	select {
	case err := <-fatal:
		t.Fatalf("a full checkpoint destination stopped the store: %v", err)
	case err := <-backup:
		if err == nil {
			t.Fatal("the checkpoint onto a full destination succeeded: the test proves nothing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the checkpoint onto a full destination neither failed nor stopped the store in 30 s")
	}
	if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set([]byte("after"), []byte("x")) }); err != nil {
		t.Fatalf("a write after the failed checkpoint: %v", err)
	}
	names, err := pebblekv.StoreFS(db).List("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.Contains(name, "backup") {
			t.Errorf("%s is left after the failed checkpoint", name)
		}
	}
	select {
	case err := <-fatal:
		t.Fatalf("the store stopped: %v", err)
	default:
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
