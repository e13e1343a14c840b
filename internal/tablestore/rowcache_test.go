package tablestore

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

func TestRowCacheBounded(t *testing.T) {
	const budget = 1 << 20
	c := newRowCache(budget)
	val := bytes.Repeat([]byte{'v'}, 1000)
	for i := 0; i < 10_000; i++ {
		k := []byte(fmt.Sprintf("key-%06d", i))
		c.add(k, val, c.ticket(k))
	}
	n, used := c.len()
	if used > budget {
		t.Fatalf("%d bytes cached, budget %d", used, budget)
	}
	// Each shard is full to within one entry.
	entry := entrySize(len("key-000000"), len(val))
	if min := int64(budget) - rowCacheShards*entry; used < min {
		t.Errorf("%d bytes cached (%d rows), want at least %d", used, n, min)
	}
	for i := range c.shards {
		sh := &c.shards[i]
		if sh.used > c.perShard {
			t.Errorf("shard %d: %d bytes, budget %d", i, sh.used, c.perShard)
		}
		live := 0
		for _, e := range sh.ring {
			if e != nil {
				live++
			}
		}
		if live != len(sh.m) || len(sh.ring)-live != len(sh.free) {
			t.Errorf("shard %d: %d in ring, %d in map, %d free slots of %d", i, live, len(sh.m), len(sh.free), len(sh.ring))
		}
	}
	// A row too large for a shard is not cached.
	big := []byte("big")
	c.add(big, make([]byte, c.perShard), c.ticket(big))
	if _, ok := c.get(big); ok {
		t.Error("a row larger than a shard's eighth was cached")
	}
	if newRowCache(rowCacheShards*4096-1) != nil {
		t.Error("a cache below one page per shard was made")
	}
}

// TestRowCacheClock: an entry read since the hand last passed survives an
// eviction that takes an unread one.
func TestRowCacheClock(t *testing.T) {
	c := newRowCache(rowCacheShards * 64 << 10)
	// Nine keys of one shard, of which eight fit.
	var keys [][]byte
	target := c.shard([]byte("k0"))
	for i := 0; len(keys) < 9; i++ {
		k := []byte(fmt.Sprintf("k%d", i))
		if c.shard(k) == target {
			keys = append(keys, k)
		}
	}
	val := make([]byte, c.perShard/8-rowOverhead-32)
	for _, k := range keys[:8] {
		c.add(k, val, c.ticket(k))
	}
	if n, _ := c.len(); n != 8 {
		t.Fatalf("%d rows cached, want 8", n)
	}
	if _, ok := c.get(keys[0]); !ok {
		t.Fatal("first key not cached")
	}
	c.add(keys[8], val, c.ticket(keys[8]))
	_, ok0 := c.get(keys[0])
	_, ok1 := c.get(keys[1])
	_, ok8 := c.get(keys[8])
	if !ok0 || ok1 || !ok8 {
		t.Errorf("after evicting for a ninth: read key cached %v, unread %v, new %v; want true, false, true", ok0, ok1, ok8)
	}
}

// TestRowCacheTicket: a value read before a write's begin or end in its
// shard is refused, and so is one read while a write of the shard is in
// flight; one read after is taken; end puts back only keys that were
// cached at begin.
func TestRowCacheTicket(t *testing.T) {
	c := newRowCache(1 << 20)
	k, other := []byte("key"), []byte("other")
	tk := c.ticket(k)
	c.end(k, nil, c.begin(k)) // a write that failed
	c.add(k, []byte("old"), tk)
	if v, ok := c.get(k); ok {
		t.Fatalf("a read from before a write was cached: %q", v)
	}
	c.add(k, []byte("new"), c.ticket(k))
	if v, ok := c.get(k); !ok || string(v) != "new" {
		t.Fatalf("got %q, %v; want new", v, ok)
	}
	// A write of another key in the same shard refuses too: the epoch is
	// the shard's; and while it is in flight nothing of the shard is
	// taken, even with a ticket taken during it.
	for i := 0; c.shard(other) != c.shard(k); i++ {
		other = []byte(fmt.Sprintf("other%d", i))
	}
	tk = c.ticket(k)
	wasCached := c.begin(other)
	c.add(k, []byte("stale"), tk)
	c.add(k, []byte("during"), c.ticket(k))
	if v, ok := c.get(k); !ok || string(v) != "new" {
		t.Fatalf("a read during another key's write replaced the cached value: %q, %v", v, ok)
	}
	c.end(k, nil, c.begin(k))
	c.add(k, []byte("during"), c.ticket(k))
	if v, ok := c.get(k); ok {
		t.Fatalf("a value read while a write of the shard was in flight was cached: %q", v)
	}
	c.end(other, []byte("x"), wasCached)
	if _, ok := c.get(other); ok {
		t.Error("end cached a key that was not cached at begin")
	}
	// The write of a cached key: out of the cache from begin, back in as
	// committed at end.
	c.add(k, []byte("v1"), c.ticket(k))
	if !c.begin(k) {
		t.Fatal("begin: the key was cached")
	}
	if v, ok := c.get(k); ok {
		t.Errorf("between begin and end: %q cached, want a miss", v)
	}
	c.end(k, []byte("v2"), true)
	if v, ok := c.get(k); !ok || string(v) != "v2" {
		t.Errorf("after end: %q, %v; want v2", v, ok)
	}
	c.end(k, nil, c.begin(k)) // a delete
	if v, ok := c.get(k); ok {
		t.Errorf("after a delete: %q cached", v)
	}
	if _, used := c.len(); used != 0 {
		t.Errorf("%d bytes accounted with nothing cached", used)
	}
}

// TestRowCacheMemoryWithinBudget: what the cache holds in Go's heap stays
// within its budget whatever the entities' sizes, small ones included,
// where the per-entry overhead is most of it (with a flat 96 bytes an
// 8 MiB cache of 8-byte values took 10.8 MiB).
func TestRowCacheMemoryWithinBudget(t *testing.T) {
	const budget = 8 << 20
	for _, size := range []int{8, 100, 1000} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newRowCache(budget)
		val := make([]byte, size)
		for i := 0; i < 400_000; i++ {
			k := []byte(fmt.Sprintf("t\x00pk%06d\x00rk%06d", i%1000, i))
			c.add(k, val, c.ticket(k))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		n, used := c.len()
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%d-byte values: %d rows, %.1f MiB counted, %.1f MiB of heap", size, n, float64(used)/(1<<20), float64(heap)/(1<<20))
		// 5% for whatever else the test binary holds meanwhile; the flat
		// overhead this guards against was 35% over.
		if heap > budget*105/100 {
			t.Errorf("%d-byte values: the cache holds %.1f MiB of heap, budget %d MiB", size, float64(heap)/(1<<20), budget>>20)
		}
		if used < budget*3/4 {
			t.Errorf("%d-byte values: %.1f MiB counted, the cache is not filled (the test proves nothing)", size, float64(used)/(1<<20))
		}
		runtime.KeepAlive(c)
	}
}
