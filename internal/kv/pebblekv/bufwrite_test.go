package pebblekv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestBufferedFileMatchesDirectWrites drives a bufferedFile with random
// writes (small, around the buffer's size and larger) mixed with the
// operations Pebble makes on a file it builds, and compares what the file
// system holds after each of them with the bytes written so far.
func TestBufferedFileMatchesDirectWrites(t *testing.T) {
	for seed := range uint64(24) {
		rng := rand.New(rand.NewPCG(seed, 7))
		fs := vfs.NewMem()
		raw := createFile(t, fs, "000001.sst")
		f, _ := testTables(fs, nil).open("000001.sst", raw)
		if f.buf == nil {
			t.Fatal("a file on a file system that does not say its free space is not buffered")
		}
		var want []byte
		for op := range 40 {
			var err error
			switch k := rng.IntN(10); {
			case k < 6:
				n := []int{rng.IntN(64), rng.IntN(5000), writeBufferSize - 1 - rng.IntN(8), writeBufferSize + rng.IntN(3*writeBufferSize)}[rng.IntN(4)]
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				want = append(want, p...)
				if m, err := f.Write(p); err != nil || m != n {
					t.Fatalf("seed %d op %d: Write(%d) = %d, %v", seed, op, n, m, err)
				}
				// Pebble may reuse or scribble over a buffer once Write returns.
				for i := range p {
					p[i] = 0xEE
				}
				continue
			case k == 6:
				err = f.Sync()
			case k == 7:
				_, err = f.SyncTo(int64(len(want)))
			case k == 8:
				var st vfs.FileInfo
				if st, err = f.Stat(); err == nil && st.Size() != int64(len(want)) {
					t.Fatalf("seed %d op %d: Stat size %d, written %d", seed, op, st.Size(), len(want))
				}
			case k == 9:
				if len(want) == 0 {
					continue
				}
				off := rng.IntN(len(want))
				got := make([]byte, min(len(want)-off, 1+rng.IntN(9000)))
				if _, err = f.ReadAt(got, int64(off)); err == nil && !bytes.Equal(got, want[off:off+len(got)]) {
					t.Fatalf("seed %d op %d: ReadAt(%d) differs from what was written", seed, op, off)
				}
			}
			if err != nil {
				t.Fatalf("seed %d op %d: %v", seed, op, err)
			}
			if got := fileBytes(t, fs, "000001.sst"); !bytes.Equal(got, want) {
				t.Fatalf("seed %d op %d: the file holds %d bytes, %d were written", seed, op, len(got), len(want))
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := fileBytes(t, fs, "000001.sst"); !bytes.Equal(got, want) {
			t.Fatalf("seed %d: after Close the file holds %d bytes, %d were written", seed, len(got), len(want))
		}
	}
}

func fileBytes(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createFile creates name on fs.
func createFile(t *testing.T, fs vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// testTables is the tableFiles of a store on fs whose fatal errors go to
// onFatal.
func testTables(fs vfs.FS, onFatal func(error)) *tableFiles {
	f := &fataler{log: slog.New(slog.DiscardHandler), onFatal: onFatal, openFailed: make(chan error, 1)}
	f.opened.Store(true)
	return &tableFiles{fs: fs, fatal: f}
}

// failingFile fails every write after the first ok bytes.
type failingFile struct {
	vfs.File
	ok int
}

var errDiskBroken = errors.New("disk broken")

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) > f.ok {
		return 0, errDiskBroken
	}
	f.ok -= len(p)
	return f.File.Write(p)
}

// TestBufferedFileWriteErrorsReachTheWrite: a write that fails when the
// buffer is written out is reported by the Write that Pebble made, sticks,
// and the abort that follows (Pebble syncs and closes the file it
// abandons) gets it again without a fatal error.
func TestBufferedFileWriteErrorsReachTheWrite(t *testing.T) {
	fs := vfs.NewMem()
	raw := createFile(t, fs, "000002.blob")
	fatal := make(chan error, 1)
	f, _ := testTables(fs, func(err error) { fatal <- err }).open("000002.blob", &failingFile{File: raw})
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = f.Write(make([]byte, 16<<10))
	}
	if !errors.Is(werr, errDiskBroken) {
		t.Fatalf("writes of 1.6 MB to a broken disk = %v, want its error", werr)
	}
	if _, err := f.Write(make([]byte, 10)); !errors.Is(err, errDiskBroken) {
		t.Fatalf("Write after a failed write = %v, want the error", err)
	}
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }() // a fatal error would keep it for good
	select {
	case err := <-fatal:
		t.Fatalf("a failure Pebble was told of became fatal: %v", err)
	case err := <-synced:
		if !errors.Is(err, errDiskBroken) {
			t.Fatalf("Sync of the abandoned file = %v, want the write's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync of the abandoned file did not return")
	}
	if err := f.Close(); !errors.Is(err, errDiskBroken) {
		t.Fatalf("Close = %v, want the write's error", err)
	}
}

// TestBufferedFileSyncFailureIsFatal: gathered bytes that fail to write at
// the sync (where Pebble, told of a failed sync, would abort a file it has
// already closed and crash on a nil pointer) stop the store with the
// file's name instead; the sync does not return.
func TestBufferedFileSyncFailureIsFatal(t *testing.T) {
	fs := vfs.NewMem()
	raw := createFile(t, fs, "000003.sst")
	fatal := make(chan error, 1)
	f, _ := testTables(fs, func(err error) { fatal <- err }).open("000003.sst", &failingFile{File: raw})
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatalf("a gathered write failed at once: %v", err)
	}
	returned := make(chan error, 1)
	go func() { returned <- f.Sync() }() // blocks for good once fatal
	select {
	case err := <-fatal:
		if !errors.Is(err, errDiskBroken) || !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "000003.sst") {
			t.Fatalf("fatal error %v, want ErrFatal with the write's error and the file", err)
		}
	case err := <-returned:
		t.Fatalf("Sync returned %v instead of stopping the store", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no fatal error")
	}
}

// TestTableFilesStraightThroughWhenLow: with less than bufferMinFree free,
// a table file is written as Pebble writes it, so a write that fails for
// want of space fails as that write.
func TestTableFilesStraightThroughWhenLow(t *testing.T) {
	fs := vfs.NewMem()
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: bufferMinFree - 1, TotalBytes: 2 * bufferMinFree})
	raw := createFile(t, fs, "000004.sst")
	f, _ := testTables(fs, nil).open("000004.sst", raw)
	if f.buf != nil {
		t.Fatal("a table file is buffered with less than bufferMinFree free")
	}
	if _, err := f.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if got := fileBytes(t, fs, "000004.sst"); string(got) != "abc" {
		t.Fatalf("the file holds %q after a write, want it written through", got)
	}
	f.Close()
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: bufferMinFree, TotalBytes: 2 * bufferMinFree})
	raw = createFile(t, fs, "000005.sst")
	if f, _ := testTables(fs, nil).open("000005.sst", raw); f.buf == nil {
		t.Fatal("a table file is not buffered with bufferMinFree free")
	}
}

// TestTableFilesPaceFailures: failures in a run wait longer and longer
// (Pebble retries a failed flush at once), the run ends after
// failureQuiet without one, and a closing store does not wait.
func TestTableFilesPaceFailures(t *testing.T) {
	tf := testTables(vfs.NewMem(), nil)
	start := time.Now()
	for range 4 {
		tf.failed()
	}
	if d := time.Since(start); d < 75*time.Millisecond {
		t.Fatalf("four failures in a row waited %v, want at least 5+10+20+40 ms", d)
	}
	tf.last = time.Now().Add(-failureQuiet - time.Second)
	tf.failed()
	if tf.failures != 1 {
		t.Fatalf("a failure after %v of quiet counts as number %d of its run, want 1", failureQuiet, tf.failures)
	}
	// Under a short stall limit the wait stays well inside it.
	tf.maxWait = 30 * time.Millisecond
	tf.failures = 20
	start = time.Now()
	tf.failed()
	if d := time.Since(start); d < 30*time.Millisecond || d > 800*time.Millisecond { // uncapped: 1 s
		t.Fatalf("a long run's failure with a 30 ms cap waited %v", d)
	}
	tf.fatal.closing.Store(true)
	tf.failures = 20
	start = time.Now()
	tf.failed()
	if d := time.Since(start); d > 800*time.Millisecond { // not closing: 1 s
		t.Fatalf("a closing store's failure waited %v", d)
	}
}

// countingFS counts the writes that reach the file system, per file kind.
type countingFS struct {
	vfs.FS
	mu     sync.Mutex
	writes map[string]int
	bytes  map[string]int
}

func (fs *countingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, fs: fs, kind: name[strings.LastIndexByte(name, '.')+1:]}, nil
}

type countingFile struct {
	vfs.File
	fs   *countingFS
	kind string
}

func (f countingFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes[f.kind]++
	f.fs.bytes[f.kind] += len(p)
	f.fs.mu.Unlock()
	return f.File.Write(p)
}

// TestStoreGathersTableWrites: the stores Open makes write their sstables
// and blob files (SeparateValues, so that both are written) in pieces of a
// quarter MiB, not one block (4 KiB) at a time.
func TestStoreGathersTableWrites(t *testing.T) {
	fs := &countingFS{FS: vfs.NewMem(), writes: map[string]int{}, bytes: map[string]int{}}
	db, err := Open("db", &Options{FS: fs, NoSync: true, MinFreeBytes: -1, SeparateValues: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1024)
	for i := 0; i < 8000; i += 100 {
		b := db.db.NewBatch()
		for j := i; j < i+100; j++ {
			rng := rand.New(rand.NewPCG(uint64(j), 1))
			for k := range value {
				value[k] = byte(rng.Uint32())
			}
			if err := b.Set(fmt.Appendf(nil, "k%08d", j), value, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.bytes["blob"] < 8000*1024 {
		t.Fatalf("blob files got %d bytes, want the 8,000 values' %d", fs.bytes["blob"], 8000*1024)
	}
	for _, kind := range []string{"sst", "blob"} {
		if max := fs.bytes[kind]/(writeBufferSize/2) + 4; fs.writes[kind] > max {
			t.Errorf("%s files: %d writes for %d bytes, want at most %d", kind, fs.writes[kind], fs.bytes[kind], max)
		}
	}
}

// reservingFile has room for limit bytes: reserving beyond fails for want
// of space, writing beyond fails the same way.
type reservingFile struct {
	vfs.File
	limit, written int64
}

func (f *reservingFile) Preallocate(off, n int64) error {
	if off+n > f.limit {
		return syscall.ENOSPC
	}
	return nil
}

func (f *reservingFile) Write(p []byte) (int, error) {
	if f.written+int64(len(p)) > f.limit {
		return 0, syscall.ENOSPC
	}
	f.written += int64(len(p))
	return f.File.Write(p)
}

// TestStraightThroughRunsOutBeforeFinish: written straight through, a
// file runs out of space at a write that leaves finishSlack unwritten, so
// the last bytes Pebble writes when it finishes a file always fit.
func TestStraightThroughRunsOutBeforeFinish(t *testing.T) {
	fs := vfs.NewMem()
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 1 << 30})
	raw := createFile(t, fs, "000006.sst")
	rf := &reservingFile{File: raw, limit: 300 << 10}
	f, err := testTables(fs, nil).open("000006.sst", rf)
	if err != nil || f.buf != nil {
		t.Fatalf("open = %v, buffered %v; want straight through", err, f.buf != nil)
	}
	var werr error
	for werr == nil {
		_, werr = f.Write(make([]byte, 4096))
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("writes ended with %v, want ENOSPC", werr)
	}
	if room := rf.limit - rf.written; room < finishSlack {
		t.Fatalf("space ran out with %d bytes left, want at least the %d a finish needs", room, finishSlack)
	}
	full := &reservingFile{File: raw, limit: finishSlack - 1}
	if _, err := testTables(fs, nil).open("000007.sst", full); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open with no room for a finish = %v, want ENOSPC", err)
	}
}
