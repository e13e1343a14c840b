package pebblekv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// blobFiles lists the blob files in the store directory "db" of fs.
func blobFiles(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var blobs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".blob") {
			blobs = append(blobs, n)
		}
	}
	return blobs
}

// TestValuesInlineByDefault: a store keeps its values in its sstables,
// whatever their size (docs/PERFORMANCE.md, "Value separation, measured
// again"): no blob file is written by flushes or compactions.
func TestValuesInlineByDefault(t *testing.T) {
	mem := vfs.NewMem()
	db, err := pebblekv.Open("db", &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 4096 {
		for j := range value {
			value[j] = 'a' + byte(rng.IntN(26)) // not compressible below half
		}
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(fmt.Appendf(nil, "k%06d", i), value) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := pebblekv.CompactAll(db); err != nil {
		t.Fatal(err)
	}
	if blobs := blobFiles(t, mem); len(blobs) != 0 {
		t.Errorf("the store wrote blob files: %v", blobs)
	}
	if m := db.Metrics(); m.BlobFiles.LiveCount != 0 || m.Table.Local.LiveSize < 4096*1024/2 {
		t.Errorf("the sstables hold %d bytes and %d blob files are live, want the 4,096 values (%d bytes, compressed at best to about 0.6) in the sstables", m.Table.Local.LiveSize, m.BlobFiles.LiveCount, 4096*1024)
	}
}

// TestStoreWithBlobFilesReadAndCompacted: a store written with values in
// blob files (every store before 2026-11-27) opens with today's options
// and reads back every value; once every other key is rewritten and the
// keyspace compacted, the values left from the blob files are read back
// too and no blob file is referenced any more (compactions carry them
// inline).
func TestStoreWithBlobFilesReadAndCompacted(t *testing.T) {
	mem := vfs.NewMem()
	const n = 4096
	writeValues(t, &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1, SeparateValues: true}, n, 1024) // fails without blob files
	db, err := pebblekv.Open("db", &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old, rewritten := bytes.Repeat([]byte("v"), 1024), bytes.Repeat([]byte("w"), 1024)
	readAll := func(when string, rewrote bool) {
		t.Helper()
		err := db.View(context.Background(), func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{})
			if err != nil {
				return err
			}
			defer it.Close()
			i := 0
			for ok := it.First(); ok; ok = it.Next() {
				want := old
				if rewrote && i%2 == 0 {
					want = rewritten
				}
				if k := fmt.Sprintf("k%06d", i); string(it.Key()) != k || !bytes.Equal(it.Value(), want) {
					return fmt.Errorf("entry %d: key %q (want %q), value of %d bytes, not the one written", i, it.Key(), k, len(it.Value()))
				}
				i++
			}
			if err := it.Error(); err != nil {
				return err
			}
			if i != n {
				return fmt.Errorf("%d values, want %d", i, n)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	readAll("opened", false)
	for i := 0; i < n; i += 2 {
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(fmt.Appendf(nil, "k%06d", i), rewritten) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := pebblekv.CompactAll(db); err != nil {
		t.Fatal(err)
	}
	readAll("rewritten and compacted", true)
	if m := db.Metrics(); m.BlobFiles.LiveCount != 0 {
		t.Errorf("%d blob files still referenced after compacting the whole keyspace", m.BlobFiles.LiveCount)
	}
}

// TestIteratorPositioningErrorIsSticky: a seek that finds nothing because
// a block read failed leaves the iterator failed, as kv.Iterator promises:
// later seeks return false and Error returns the read error, even once
// the disk reads again. Pebble's iterator clears the error at the next
// seek, so a batch reading its entities with one iterator (readMany) took
// the unreadable one for absent.
func TestIteratorPositioningErrorIsSticky(t *testing.T) {
	mem := vfs.NewMem()
	writeValues(t, &pebblekv.Options{FS: mem, MemTableSize: 1 << 20, MinFreeBytes: -1}, 4096, 1024)
	failing := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	})}
	db, err := pebblekv.Open("db", &pebblekv.Options{FS: errorfs.Wrap(mem, failing), MemTableSize: 1 << 20, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		failing.On()
		if it.SeekGE([]byte("k001000")) {
			t.Fatalf("a seek with every sstable read failing found %q", it.Key())
		}
		failing.Off()
		if it.SeekGE([]byte("k002000")) {
			t.Errorf("a seek after a failed one positioned the iterator at %q", it.Key())
		}
		return it.Error()
	})
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("the iterator's error after a second seek = %v, want the injected read error", err)
	}
}
