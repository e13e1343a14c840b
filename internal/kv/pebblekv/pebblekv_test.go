package pebblekv_test

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2"

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
	err = db.View(t.Context(), func(r kv.Reader) error {
		v, err := r.Get([]byte("k"))
		if err == nil && string(v) != "v" {
			t.Errorf("Get(k) = %q, want v", v)
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
