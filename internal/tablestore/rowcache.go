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
// Consistency: every write of an entity, holding its key's lock, takes
// the key out of the cache before its commit can become visible (begin,
// inside the transaction) and, once the commit returned, puts back what
// it committed if the key was cached (end; a failed write, which may have
// reached the engine, puts nothing back). While a write of the shard is
// between them the shard takes no value from readers, and end bumps the
// shard's epoch. A reader adds what it read only if the epoch has not
// moved since just before its read and no write is in flight (ticket,
// then add): a value read before a write's end is refused, one read
// after it is at least as new as the write. So while a write is in flight
// point reads go to the engine, as queries do: Pebble makes a commit
// visible before its log is synced, and a cache updated only after the
// sync answered the old value for those milliseconds to a client that
// had already seen the new one in a query (time going backwards, and half
// a batch when the two reads were of two of its entities).
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
	mu     sync.Mutex
	epoch  uint64 // bumped by every write's end in this shard
	writes int    // writes between their begin and their end
	m      map[string]*rowEntry
	ring   []*rowEntry // clock order; nil slots are free
	free   []int       // the nil slots of ring
	hand   int
	used   int64
	_      [32]byte // keep shards' locks off one cache line
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
	if sh.epoch != t || sh.writes > 0 {
		return
	}
	if old := sh.m[string(key)]; old != nil {
		sh.remove(old)
	}
	sh.insert(c.perShard, &rowEntry{key: string(key), val: append([]byte(nil), val...)}, size)
}

// begin takes key out of the cache before a write of it commits: from
// here to end, point reads of it, and of its shard, go to the engine. It
// reports whether key was cached, which end is told. The caller holds
// key's lock and calls end exactly once, whatever becomes of the write.
func (c *rowCache) begin(key []byte) (cached bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.writes++
	if old := sh.m[string(key)]; old != nil {
		sh.remove(old)
		return true
	}
	return false
}

// end follows begin once the write's commit returned. With put (the write
// committed, and key was cached at begin) key's value becomes val (nil:
// the entity was deleted), which the cache now owns and no one may
// modify; a key that was not cached stays out, so bulk writes do not
// sweep the cache.
func (c *rowCache) end(key, val []byte, put bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.epoch++
	sh.writes--
	size := entrySize(len(key), len(val))
	if !put || val == nil || size > c.perShard/8 {
		return
	}
	// Not cached now (begin took it out, readers add nothing while a
	// write is in flight, and the key's lock keeps other writers out);
	// checked all the same, as an entry replaced in the map without its
	// ring slot would leak its bytes from the budget for good.
	if old := sh.m[string(key)]; old != nil {
		sh.remove(old)
	}
	e := &rowEntry{key: string(key), val: val}
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
