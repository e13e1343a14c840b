package pebblekv_test

import (
	"testing"

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
