package tablestore

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// rowCache keeps the stored values of recently read entities, so a point
// read of a hot entity costs a hash lookup instead of an engine read (for
// a row in a memtable, a skiplist seek whose nodes are cache misses; for
// one in an sstable, its blocks and its blob value). Only a store that is
// the sole writer of its kv.DB has one (not Options.Shared: another front
// end's writes would not invalidate it).
//
// Consistency: every write of an entity, still holding its key's lock,
// replaces the key's cached value with what it committed (update; a
// failed write, which may have reached the engine, drops it: invalidate),
// and each of those bumps the key's shard's epoch. A reader adds what it
// read only if the epoch has not moved since just before its read
// (ticket, then add). A reader that took its ticket after a write's
// update read after that write's commit, so what it adds is at least as
// new; one that took it before is refused, and one that adds before the
// write's update has its value replaced by it. Between a commit and its
// update, readers may still get the old value from the cache, as they may
// from the engine while the write is in flight: the write has not been
// acknowledged yet.
//
// The cache is bounded in bytes (keys, values and a fixed overhead per
// entry), per shard, and evicts with the clock algorithm: a hit marks an
// entry, and eviction passes over marked entries once, clearing the mark.
type rowCache struct {
	seed     maphash.Seed
	perShard int64 // byte budget of one shard
	shards   [rowCacheShards]rowShard
	hits     atomic.Uint64
	misses   atomic.Uint64
}

const (
	rowCacheShards = 64
	// rowOverhead is an entry's memory beyond its key and value bytes:
	// the entry struct (64 bytes), its share of the map's slots (a
	// string and a pointer, at the map's load, ~40-60) and of the clock
	// ring and its spare capacity (8-16). Measured beside the
	// allocations' rounding (entrySize): 130-170 bytes
	// (TestRowCacheMemoryWithinBudget).
	rowOverhead = 160
)

// entrySize is what an entry of key and val counts against the budget:
// both rounded up as the allocator rounds small objects, plus
// rowOverhead. With 96 bytes and no rounding, an 8 MiB cache of small
// entities took 10.8 MiB of heap.
func entrySize(key, val int) int64 {
	return int64(roundAlloc(key)+roundAlloc(val)) + rowOverhead
}

func roundAlloc(n int) int {
	if n <= 8 {
		return 8
	}
	return (n + 15) &^ 15
}

type rowShard struct {
	mu    sync.Mutex
	epoch uint64 // bumped by every invalidation in this shard
	m     map[string]*rowEntry
	ring  []*rowEntry // clock order; nil slots are free
	free  []int       // the nil slots of ring
	hand  int
	used  int64
	_     [32]byte // keep shards' locks off one cache line
}

type rowEntry struct {
	key  string
	val  []byte // immutable once added
	slot int    // index in ring
	ref  atomic.Bool
}

// newRowCache returns a cache of at most maxBytes, or nil when maxBytes is
// too small to hold anything useful.
func newRowCache(maxBytes int64) *rowCache {
	if maxBytes < rowCacheShards*4096 {
		return nil
	}
	c := &rowCache{seed: maphash.MakeSeed(), perShard: maxBytes / rowCacheShards}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*rowEntry)
	}
	return c
}

func (c *rowCache) shard(key []byte) *rowShard {
	return &c.shards[maphash.Bytes(c.seed, key)%rowCacheShards]
}

// get returns the cached value of key for a point read, counting the hit
// or miss; the caller must not modify the value.
func (c *rowCache) get(key []byte) ([]byte, bool) {
	v, ok := c.peek(key)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return v, ok
}

// peek is get without the count, for a write's read of the current value
// (an insert's is a miss by design).
func (c *rowCache) peek(key []byte) ([]byte, bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	e := sh.m[string(key)]
	sh.mu.Unlock()
	if e == nil {
		return nil, false
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return e.val, true
}

// ticket is taken just before reading key from the engine; add refuses the
// value read if an invalidation reached the shard since.
func (c *rowCache) ticket(key []byte) uint64 {
	sh := c.shard(key)
	sh.mu.Lock()
	t := sh.epoch
	sh.mu.Unlock()
	return t
}

// add caches a copy of val as key's value, read after ticket t was taken.
func (c *rowCache) add(key, val []byte, t uint64) {
	size := entrySize(len(key), len(val))
	if size > c.perShard/8 {
		return // one row must not flush a shard
	}
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.epoch != t {
		return
	}
	if old := sh.m[string(key)]; old != nil {
		sh.remove(old)
	}
	sh.insert(c.perShard, &rowEntry{key: string(key), val: append([]byte(nil), val...)}, size)
}

// invalidate forgets key's value; it follows a write of key that failed
// but may have reached the engine.
func (c *rowCache) invalidate(key []byte) { c.update(key, nil) }

// update follows a committed write of key: its cached value, if it has
// one, becomes val (nil: the entity was deleted), which the cache now owns
// and no one may modify. A key that is not cached stays out, so bulk
// writes do not sweep the cache.
func (c *rowCache) update(key, val []byte) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.epoch++
	old := sh.m[string(key)]
	if old == nil {
		return
	}
	sh.remove(old)
	size := entrySize(len(key), len(val))
	if val == nil || size > c.perShard/8 {
		return
	}
	e := &rowEntry{key: old.key, val: val}
	e.ref.Store(true)
	sh.insert(c.perShard, e, size)
}

// RowCacheStats are the row cache's figures (Store.RowCacheStats).
type RowCacheStats struct {
	Hits, Misses uint64 // point reads (Get Entity) answered and not answered
	Rows         int
	Bytes        int64 // as accounted against the budget
}

// RowCacheStats reports the row cache's figures; ok is false when the
// store has none.
func (s *Store) RowCacheStats() (st RowCacheStats, ok bool) {
	if s.rows == nil {
		return st, false
	}
	st.Rows, st.Bytes = s.rows.len()
	st.Hits, st.Misses = s.rows.hits.Load(), s.rows.misses.Load()
	return st, true
}

// len reports the number of cached rows and their bytes.
func (c *rowCache) len() (n int, bytes int64) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		bytes += sh.used
		sh.mu.Unlock()
	}
	return n, bytes
}

// insert adds e, of size bytes, evicting until it fits in budget.
func (sh *rowShard) insert(budget int64, e *rowEntry, size int64) {
	for sh.used+size > budget && sh.evictOne() {
	}
	e.slot = sh.freeSlot()
	sh.ring[e.slot] = e
	sh.m[e.key] = e
	sh.used += size
}

func (sh *rowShard) remove(e *rowEntry) {
	delete(sh.m, e.key)
	sh.ring[e.slot] = nil
	sh.free = append(sh.free, e.slot)
	sh.used -= entrySize(len(e.key), len(e.val))
}

// freeSlot returns a free index of the ring, growing it when none is.
func (sh *rowShard) freeSlot() int {
	if n := len(sh.free); n > 0 {
		i := sh.free[n-1]
		sh.free = sh.free[:n-1]
		return i
	}
	sh.ring = append(sh.ring, nil)
	return len(sh.ring) - 1
}

// evictOne removes one entry by the clock; false when the shard is empty.
func (sh *rowShard) evictOne() bool {
	if len(sh.m) == 0 {
		return false
	}
	for {
		sh.hand %= len(sh.ring)
		e := sh.ring[sh.hand]
		sh.hand++
		if e == nil {
			continue
		}
		if e.ref.Load() {
			e.ref.Store(false)
			continue
		}
		sh.remove(e)
		return true
	}
}
