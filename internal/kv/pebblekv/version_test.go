package pebblekv_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestStoreVersion: a new data directory records the store version and
// Pebble's named format; a directory recorded by a newer partita is refused
// with a message naming both versions, before Pebble touches it; a
// damaged record is refused too.
func TestStoreVersion(t *testing.T) {
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(filepath.Join(dir, pebblekv.StoreVersionFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("partita store version %d\n", pebblekv.StoreVersion); string(b) != want {
		t.Errorf("%s = %q, want %q", pebblekv.StoreVersionFile, b, want)
	}
	desc, err := pebble.Peek(dir, vfs.Default)
	if err != nil {
		t.Fatal(err)
	}
	if desc.FormatMajorVersion != pebble.FormatValueSeparation {
		t.Errorf("format major version %s, want %s", desc.FormatMajorVersion, pebble.FormatValueSeparation)
	}

	newer := pebblekv.StoreVersion + 1
	if err := os.WriteFile(filepath.Join(dir, pebblekv.StoreVersionFile), fmt.Appendf(nil, "partita store version %d\n", newer), 0o644); err != nil {
		t.Fatal(err)
	}
	options, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	db, err = pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1})
	if err == nil {
		db.Close()
		t.Fatalf("opened a directory at store version %d", newer)
	}
	if !errors.Is(err, pebblekv.ErrNewerStore) {
		t.Errorf("Open = %v, want ErrNewerStore", err)
	}
	for _, want := range []string{fmt.Sprintf("store version %d", newer), fmt.Sprintf("up to %d", pebblekv.StoreVersion), dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open = %q, want it to contain %q", err, want)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*")); strings.Join(after, ",") != strings.Join(options, ",") {
		t.Errorf("the refused open changed the directory: OPTIONS files %v, then %v", options, after)
	}

	for _, bad := range []string{"", "partita store version x\n", "partita store version 0\n", "version 1\n"} {
		if err := os.WriteFile(filepath.Join(dir, pebblekv.StoreVersionFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1}); err == nil {
			db.Close()
			t.Errorf("opened with the version file %q", bad)
		}
	}
}

// TestOpenDirectoryOfEarlierRelease opens a directory as partita wrote it
// before the format was pinned and versioned: Pebble's FormatNewest with
// columnar blocks and value separation (blob files), no version file. Its
// values are read back, new ones written, and the version file appears.
func TestOpenDirectoryOfEarlierRelease(t *testing.T) {
	dir := t.TempDir()
	po := &pebble.Options{FormatMajorVersion: pebble.FormatNewest, MemTableSize: 1 << 20}
	po.Experimental.EnableColumnarBlocks = func() bool { return true }
	po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 256, MaxBlobReferenceDepth: 10,
			RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2}
	}
	old, err := pebble.Open(dir, po)
	if err != nil {
		t.Fatal(err)
	}
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i%100) }
	const n = 3000
	for i := range n {
		if err := old.Set(fmt.Appendf(nil, "k%05d", i), value(i), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob")); len(blobs) == 0 {
		t.Fatal("the earlier release's options wrote no blob files")
	}
	os.Remove(filepath.Join(dir, pebblekv.StoreVersionFile))

	db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("new"), value(7)) }); err != nil {
		t.Fatal(err)
	}
	got := 0
	err = db.View(t.Context(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte("k"), UpperBound: []byte("l")})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if want := fmt.Sprintf("k%05d", got); string(it.Key()) != want || !bytes.Equal(it.Value(), value(got)) {
				return fmt.Errorf("entry %d: key %q (%d bytes), want %q (%d bytes)", got, it.Key(), len(it.Value()), want, len(value(got)))
			}
			got++
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("read back %d values, want %d", got, n)
	}
	wantValue(t, db, "new", string(value(7)))
	if _, err := os.Stat(filepath.Join(dir, pebblekv.StoreVersionFile)); err != nil {
		t.Errorf("no version file after the open: %v", err)
	}
}
