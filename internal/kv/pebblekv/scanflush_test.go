package pebblekv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// writeVersions writes keys 0..n-1, versions times each, 1 KiB values,
// all of it into the memtable.
func writeVersions(t *testing.T, db kv.DB, n, versions int) {
	t.Helper()
	val := make([]byte, 1024)
	for v := range versions {
		for start := 0; start < n; start += 100 {
			err := db.Update(context.Background(), func(tx kv.Txn) error {
				for i := start; i < min(start+100, n); i++ {
					val[0] = byte(v)
					if err := tx.Set(fmt.Appendf(nil, "k%06d", i), val); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// scanSteps scans the whole store and returns the internal entries
// Pebble's iterator stepped through and the keys it gave.
func scanSteps(t *testing.T, db *pebblekv.DB) (internal, user int) {
	t.Helper()
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			_ = it.Value()
		}
		st := pebblekv.IterStats(it)
		internal, user = st.ForwardStepCount[pebble.InternalIterCall], st.ForwardStepCount[pebble.InterfaceCall]
		if err := it.Error(); err != nil {
			return err
		}
		return it.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return internal, user
}

func waitFlushes(t *testing.T, db *pebblekv.DB, over int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); db.Metrics().Flush.Count <= over; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no flush within 20 s (flushes %d)", db.Metrics().Flush.Count)
		}
	}
}

// A scan that steps over many dead versions in the memtable has it
// flushed, and the scans after it step over one entry a key instead of
// one a version; a second such scan within the interval asks for no
// second flush.
func TestScanOverDeadVersionsFlushesMemtable(t *testing.T) {
	defer pebblekv.SetScanFlushPolicy(1000, 1<<20, time.Hour)()
	db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n, versions = 2000, 4
	writeVersions(t, db, n, versions)
	flushes := db.Metrics().Flush.Count

	internal, user := scanSteps(t, db)
	if user < n-1 || internal < versions*n-1 {
		t.Fatalf("first scan: %d internal steps, %d keys; want >= %d and %d (every version in the memtable)", internal, user, versions*n-1, n-1)
	}
	if got := pebblekv.ScanFlushes(db); got != 1 {
		t.Fatalf("a scan over %d dead versions asked for %d flushes, want 1", internal-user, got)
	}
	waitFlushes(t, db, flushes)
	if internal, user = scanSteps(t, db); internal != user {
		t.Fatalf("after the flush: %d internal steps for %d keys, want one a key", internal, user)
	}

	// New dead versions within the interval: no second flush.
	writeVersions(t, db, n, 2)
	if internal, user = scanSteps(t, db); internal-user < n {
		t.Fatalf("second round: %d internal steps, %d keys; want the new dead versions stepped over", internal, user)
	}
	if got := pebblekv.ScanFlushes(db); got != 1 {
		t.Fatalf("within the interval: %d flushes asked for, want still 1", got)
	}
}

// No flush for scans that step over nothing dead, over too few dead
// versions or too few for the keys they gave, or that find too little data
// in the memtable, nor on a read-only store.
func TestScanFlushNeedsDeadVersionsAndData(t *testing.T) {
	defer pebblekv.SetScanFlushPolicy(1000, 1<<20, 0)()
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	writeVersions(t, db, 3000, 1) // 3 MiB, no dead version
	if internal, user := scanSteps(t, db); internal != user || pebblekv.ScanFlushes(db) != 0 {
		t.Fatalf("live keys only (%d steps, %d keys): %d flushes asked for, want 0", internal, user, pebblekv.ScanFlushes(db))
	}
	writeVersions(t, db, 500, 1) // 500 dead versions among 3,000 keys: under minHidden
	if _, _ = scanSteps(t, db); pebblekv.ScanFlushes(db) != 0 {
		t.Fatalf("500 dead versions: %d flushes asked for, want 0", pebblekv.ScanFlushes(db))
	}
	writeVersions(t, db, 900, 1) // 1,400 dead versions, fewer than one for two keys
	if internal, user := scanSteps(t, db); internal-user < 1000 || pebblekv.ScanFlushes(db) != 0 {
		t.Fatalf("%d dead versions among %d keys: %d flushes asked for, want 0", internal-user, user, pebblekv.ScanFlushes(db))
	}

	// Enough dead versions, but less in the memtable than minUnflushed.
	restore := pebblekv.SetScanFlushPolicy(1000, 1<<30, 0)
	writeVersions(t, db, 3000, 1)
	if internal, user := scanSteps(t, db); internal-user < 3000 || pebblekv.ScanFlushes(db) != 0 {
		t.Fatalf("%d dead versions, 4 MiB unflushed under a 1 GiB threshold: %d flushes asked for, want 0", internal-user, pebblekv.ScanFlushes(db))
	}
	restore()

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = pebblekv.Open(dir, &pebblekv.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if internal, user := scanSteps(t, db); internal-user < 3000 || pebblekv.ScanFlushes(db) != 0 {
		t.Fatalf("read-only store, %d dead versions: %d flushes asked for, want 0", internal-user, pebblekv.ScanFlushes(db))
	}
}
