package pebblekv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/kvtest"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestCheckpoint takes a checkpoint while writers commit two-key
// transactions, and opens it as a store of its own: every transaction that
// returned before the checkpoint began is in it, and every transaction in
// it is whole.
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var (
		acked atomic.Int64 // transactions 0..acked-1 of every writer returned
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	const writers = 4
	done := make([]atomic.Int64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				err := db.Update(t.Context(), func(tx kv.Txn) error {
					v := []byte(fmt.Sprint(i))
					if err := tx.Set([]byte(fmt.Sprintf("a/%d/%06d", w, i)), v); err != nil {
						return err
					}
					return tx.Set([]byte(fmt.Sprintf("b/%d/%06d", w, i)), v)
				})
				if err != nil {
					t.Error(err)
					return
				}
				done[w].Store(int64(i + 1))
				acked.Add(1)
			}
		}()
	}
	for acked.Load() < 200 {
		time.Sleep(5 * time.Millisecond)
	}
	var before [writers]int64
	for w := range writers {
		before[w] = done[w].Load()
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if err := db.Checkpoint(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()

	if err := db.Checkpoint(t.Context(), backup); !errors.Is(err, os.ErrExist) {
		t.Errorf("checkpoint into an existing directory: %v, want ErrExist", err)
	}

	// The backup records the store version before anything opens it.
	if v, err := os.ReadFile(filepath.Join(backup, pebblekv.StoreVersionFile)); err != nil || len(v) == 0 {
		t.Errorf("backup's store version file: %q, %v", v, err)
	}

	b, err := pebblekv.Open(backup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for w := range writers {
		a := countPrefix(t, b, fmt.Sprintf("a/%d/", w))
		bb := countPrefix(t, b, fmt.Sprintf("b/%d/", w))
		if a != bb {
			t.Errorf("writer %d: %d a-keys and %d b-keys in the checkpoint: a transaction is torn", w, a, bb)
		}
		if int64(a) < before[w] {
			t.Errorf("writer %d: %d transactions in the checkpoint, %d acknowledged before it", w, a, before[w])
		}
	}
}

func countPrefix(t *testing.T, db kv.DB, prefix string) int {
	return kvtest.Count(t, db, []byte(prefix), []byte(prefix+"\xff"))
}

// TestCheckpointWALDir: the checkpoint of a store whose log is apart opens
// without that log directory (it holds its own copy of the log), and
// holds writes that were only in the log.
func TestCheckpointWALDir(t *testing.T) {
	dir, wal := t.TempDir(), filepath.Join(t.TempDir(), "wal")
	db, err := pebblekv.Open(dir, &pebblekv.Options{WALDir: wal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if err := db.Checkpoint(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	b, err := pebblekv.Open(backup, nil)
	if err != nil {
		t.Fatalf("open the checkpoint of a store with a WALDir: %v", err)
	}
	defer b.Close()
	wantValue(t, b, "k", "v")
}

// TestReadOnly: a read-only open reads, refuses writes, and refuses a
// directory without a store, writing nothing into it (a store another
// process holds is refused too: e2e TestCheckBadInput).
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ro, err := pebblekv.Open(dir, &pebblekv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	wantValue(t, ro, "k", "v")
	if err := ro.Update(t.Context(), func(tx kv.Txn) error { return tx.Set([]byte("k2"), []byte("v")) }); err == nil {
		t.Error("a write to a read-only store succeeded")
	}

	empty := t.TempDir()
	if db, err := pebblekv.Open(empty, &pebblekv.Options{ReadOnly: true}); !errors.Is(err, pebblekv.ErrNoStore) {
		if err == nil {
			db.Close()
		}
		t.Errorf("read-only open of a directory without a store: %v, want ErrNoStore", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("read-only open wrote into %s: %v", empty, entries)
	}
}
