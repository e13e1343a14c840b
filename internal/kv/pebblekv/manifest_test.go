package pebblekv_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// manifestStore writes a store whose MANIFEST holds several records (one
// per flush) on a memory file system, closed, and returns its MANIFEST.
func manifestStore(t *testing.T) (*pebblekv.Options, vfs.FS, string) {
	t.Helper()
	mem := vfs.NewMem()
	opts := &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1}
	writeValues(t, opts, 20000, 100)
	desc, err := pebble.Peek("db", mem)
	if err != nil || !desc.Exists {
		t.Fatalf("Peek: %v %+v", err, desc)
	}
	return opts, mem, desc.ManifestFilename
}

func writeAt(t *testing.T, fs vfs.FS, name string, b []byte, off int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedManifestFailsOpen: a MANIFEST damaged before its last record
// fails the open, read-write and read-only, naming the file, and no file
// of the store is deleted. Before, Pebble took the damaged record for
// the end of the MANIFEST: the store opened as it was then (here with
// 14,651 of the 20,000 values, those its write-ahead log still held, and
// no error), and the sstables written since were deleted as obsolete.
func TestDamagedManifestFailsOpen(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		opts, fs, manifest := manifestStore(t)
		// Damage the second record (the first holds the comparer, and
		// Pebble refuses a MANIFEST without it), one of several.
		f, err := fs.Open(manifest)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 7)
		f.ReadAt(head, 0)
		f.Close()
		second := int64(7 + binary.LittleEndian.Uint16(head[4:6]))
		writeAt(t, fs, manifest, []byte{0xff, 0xff}, second+10)
		before, _ := fs.List("db")
		o := *opts
		o.ReadOnly = readOnly
		db, err := pebblekv.Open("db", &o)
		if err == nil {
			n := 0
			scanErr := scanAll(db) // what a server or a check then read
			db.View(t.Context(), func(r kv.Reader) error {
				it, _ := r.NewIter(kv.IterOptions{})
				defer it.Close()
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				return nil
			})
			db.Close()
			t.Errorf("read-only %v: Open of a store whose MANIFEST is damaged succeeded, with %d of 20000 values (scan: %v)", readOnly, n, scanErr)
		} else if !errors.Is(err, pebblekv.ErrCorruption) || !strings.Contains(err.Error(), fs.PathBase(manifest)) {
			t.Errorf("read-only %v: Open: %v, want ErrCorruption naming %s", readOnly, err, manifest)
		}
		after, _ := fs.List("db")
		slices.Sort(before)
		slices.Sort(after)
		for _, name := range before {
			if (strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")) && !slices.Contains(after, name) {
				t.Errorf("read-only %v: %s was deleted", readOnly, name)
			}
		}
	}
}

// TestTornManifestTailOpens: a MANIFEST whose last record is cut short, as
// a crash in the middle of its write leaves it, still opens: that is the
// one damage Pebble is right to read as the end.
func TestTornManifestTailOpens(t *testing.T) {
	opts, fs, manifest := manifestStore(t)
	fi, err := fs.Stat(manifest)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenReadWrite(manifest, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Rewrite it without its last 5 bytes.
	w, err := fs.Create(manifest, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b[:len(b)-5])
	w.Close()
	db, err := pebblekv.Open("db", opts)
	if err != nil {
		t.Fatalf("Open after a torn last record: %v", err)
	}
	db.Close()
}
