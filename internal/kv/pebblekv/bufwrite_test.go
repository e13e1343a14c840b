package pebblekv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

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
		raw, err := fs.Create("000001.sst", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f := newBufferedFile(raw)
		var want []byte
		for op := range 40 {
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

// failingFile fails every write.
type failingFile struct{ vfs.File }

var errDiskBroken = errors.New("disk broken")

func (failingFile) Write([]byte) (int, error) { return 0, errDiskBroken }

// TestBufferedFileReportsWriteErrors: a write error of gathered bytes is
// reported by the Sync and Close that Pebble makes before it uses a
// file, and by every later write.
func TestBufferedFileReportsWriteErrors(t *testing.T) {
	raw, err := vfs.NewMem().Create("000002.blob", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f := newBufferedFile(failingFile{raw})
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatalf("a gathered write failed at once: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, errDiskBroken) {
		t.Fatalf("Sync = %v, want the write's error", err)
	}
	if _, err := f.Write(make([]byte, 100)); !errors.Is(err, errDiskBroken) {
		t.Fatalf("Write after a failed write = %v, want the error", err)
	}
	if err := f.Close(); !errors.Is(err, errDiskBroken) {
		t.Fatalf("Close = %v, want the write's error", err)
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
// and blob files in pieces of a quarter MiB, not one block (4 KiB) at a
// time.
func TestStoreGathersTableWrites(t *testing.T) {
	fs := &countingFS{FS: vfs.NewMem(), writes: map[string]int{}, bytes: map[string]int{}}
	db, err := Open("db", &Options{FS: fs, NoSync: true, MinFreeBytes: -1})
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
