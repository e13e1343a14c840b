package pebblekv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestBlockCacheHoldsBlocks: after the memtables have rotated a few times
// (Pebble charges each one against the block cache), a second scan of
// flushed and compacted data is served from the cache. With a cache of
// exactly CacheSize two memtables as large as it left it no room, and
// every read missed.
func TestBlockCacheHoldsBlocks(t *testing.T) {
	const memTable = 1 << 20
	db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1, MemTableSize: memTable, CacheSize: memTable})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	val := make([]byte, 1024)
	// 6 MiB over 512 keys (half a MiB, which fits the cache), in batches
	// of 64: the memtables grow to their full size and rotate several
	// times.
	for i := 0; i < 6<<10; i += 64 {
		err := db.Update(ctx, func(tx kv.Txn) error {
			for j := i; j < i+64; j++ {
				val[0] = byte(j)
				if err := tx.Set(fmt.Appendf(nil, "k%06d", j%512), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Compacted, so that the scans read the 512 live values alone (values
	// are kept inline: the dead versions' would not fit the cache).
	if err := pebblekv.CompactAll(db); err != nil {
		t.Fatal(err)
	}
	scan := func() int {
		n := 0
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{})
			if err != nil {
				return err
			}
			defer it.Close()
			for ok := it.First(); ok; ok = it.Next() {
				if len(it.Value()) != len(val) {
					return fmt.Errorf("value of %q: %d bytes", it.Key(), len(it.Value()))
				}
				n++
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := scan(); n != 512 {
		t.Fatalf("first scan: %d keys, want 512", n)
	}
	before := db.Metrics().BlockCache
	scan()
	after := db.Metrics().BlockCache
	hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
	t.Logf("second scan: %d hits, %d misses; cache holds %d bytes", hits, misses, after.Size)
	if after.Size == 0 || hits == 0 || misses > hits {
		t.Fatalf("second scan: %d block cache hits, %d misses, %d bytes cached: the cache keeps nothing", hits, misses, after.Size)
	}
}
