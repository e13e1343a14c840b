package pebblekv_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// blobStore writes 4,096 values of 1 KiB, kept in blob files, into a store
// on a memory file system and returns it closed, with its blob files.
func blobStore(t *testing.T) (*pebblekv.Options, vfs.FS, []string) {
	t.Helper()
	mem := vfs.NewMem()
	opts := &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1, SeparateValues: true}
	writeValues(t, opts, 4096, 1024)
	return opts, mem, blobFiles(t, mem)
}

// TestDamagedBlobFileFailsOpen: a blob file that is missing, shorter than
// the MANIFEST says, or whose footer is damaged fails the open, read-write
// (serve) and read-only (check), naming the file. Before, the open
// succeeded, as Pebble checks only the sstables, and the first read of a
// value in the file panicked inside Pebble ("unknown metadata type:
// <nil>"): partita check died with a stack trace, and a server answered
// those reads with recovered panics.
func TestDamagedBlobFileFailsOpen(t *testing.T) {
	damages := map[string]func(t *testing.T, fs vfs.FS, name string){
		"missing": func(t *testing.T, fs vfs.FS, name string) {
			if err := fs.Remove(name); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, fs vfs.FS, name string) {
			f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("short"))
			f.Close()
		},
		"footer": func(t *testing.T, fs vfs.FS, name string) {
			fi, err := fs.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0xa5, 0x5a}, fi.Size()-12); err != nil {
				t.Fatal(err)
			}
			f.Close()
		},
	}
	for what, damage := range damages {
		for _, readOnly := range []bool{false, true} {
			name := what + "/read-write"
			if readOnly {
				name = what + "/read-only"
			}
			t.Run(name, func(t *testing.T) {
				opts, fs, blobs := blobStore(t)
				damage(t, fs, "db/"+blobs[0])
				o := *opts
				o.ReadOnly = readOnly
				db, err := pebblekv.Open("db", &o)
				if err == nil {
					// What a check or a server then did: read everything.
					scanErr := scanAll(db)
					db.Close()
					t.Fatalf("read-only %v: Open of a store whose blob file is %s succeeded (a scan then: %v)", readOnly, what, scanErr)
				}
				if !errors.Is(err, pebblekv.ErrCorruption) || !strings.Contains(err.Error(), blobs[0]) {
					t.Errorf("read-only %v: Open: %v, want ErrCorruption naming %s", readOnly, err, blobs[0])
				}
			})
		}
	}
}

// TestBlobFileDamagedWhileOpenIsFatal: a blob file damaged after the
// store opened (not yet read, so not in Pebble's file cache) stops the
// store at the first read of a value in it, scan or Get, with
// ErrCorruption naming the file and the advice to restore, as a corrupt
// sstable block does. Before, Pebble's panic reached the caller (a
// request's recovered panic, a crash of partita check), and the Get's
// iterator it left behind made Close panic.
func TestBlobFileDamagedWhileOpenIsFatal(t *testing.T) {
	for _, read := range []string{"scan", "get"} {
		t.Run(read, func(t *testing.T) {
			opts, fs, blobs := blobStore(t)
			var logged strings.Builder
			var mu sync.Mutex
			opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
			fatal := make(chan error, 1)
			opts.OnFatal = func(err error) { fatal <- err }
			db, err := pebblekv.Open("db", opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blobs {
				f, err := fs.Create("db/"+b, vfs.WriteCategoryUnspecified)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			go func() {
				if read == "scan" {
					scanAll(db)
					return
				}
				db.View(context.Background(), func(r kv.Reader) error {
					_, err := r.Get([]byte("k000000"))
					return err
				})
			}()
			select {
			case err := <-fatal:
				if !errors.Is(err, pebblekv.ErrCorruption) || !strings.Contains(err.Error(), ".blob") {
					t.Errorf("OnFatal got %v, want ErrCorruption naming a blob file", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a read of a blob file that cannot be opened did not stop the store")
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(logged.String(), "restore the data directory from a backup") {
				t.Errorf("no advice logged:\n%s", logged.String())
			}
		})
	}
}

func scanAll(db *pebblekv.DB) error {
	return db.View(context.Background(), func(r kv.Reader) error {
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
}
