package tablestore

import (
	"bytes"
	"context"
	"hash/maphash"
	"sync"

	"github.com/partita/partita/internal/kv"
)

// partBounds remembers, for recently written partitions, a lowest and a
// highest key that no stored key of the partition lies outside. An insert
// whose key falls outside them cannot collide with a stored entity, so it
// skips the existence read: the guide's appending patterns (RowKeys that
// grow, or shrink as in the log tail's inverted ticks) then insert without
// reading. Only a store that is the sole writer of its kv.DB has them.
//
// Correctness rests on the bounds only ever widening while they are known:
// every write that may add a key widens its partition's bounds (if known)
// after its commit, and before it lets go of the key's lock, so a second
// insert of the same key finds the key within the bounds and reads.
// Deletes, replaces and merges, which add no key, leave the bounds as they
// are (wider than needed is safe). Bounds are learnt by reading the
// partition's first and last keys; the entry is put in place, marked
// loading, before that read, so a write that commits meanwhile either is
// seen by the read or widens the entry; a loading entry answers nothing.
// That needs reads through a transaction to see every commit made before
// the read (memkv's and pebblekv's do: neither reads from a snapshot taken
// when the transaction began). Forgetting an entry (the map is bounded) is
// always safe.
type partBounds struct {
	seed   maphash.Seed
	shards [boundsShards]boundsShard
}

const boundsShards = 32

// boundsPerShard is how many partitions a shard remembers (a variable for
// tests, which shrink it to make forgetting common).
var boundsPerShard = 1024

// boundsShardBytes bounds a shard's keys (partition prefixes and bounds,
// each up to a few KiB of a client's choosing), so that the 32 shards hold
// at most 8 MiB whatever keys writers send; typical keys fill the count
// first. boundOverhead approximates an entry's map slot and struct.
var boundsShardBytes = 256 << 10

const boundOverhead = 96

type boundsShard struct {
	mu    sync.Mutex
	m     map[string]*bound // partition key prefix → bounds
	bytes int               // of the entries in m: keys, bounds, overhead
	_     [32]byte
}

// cost is what an entry of partition prefix with bounds b counts against
// its shard's bytes.
func (b *bound) cost(prefix string) int { return len(prefix) + len(b.lo) + len(b.hi) + boundOverhead }

// set puts b in place as prefix's entry (nil: forgets it), keeping the
// shard's bytes, then trims the shard. The caller holds mu.
func (sh *boundsShard) set(prefix string, b *bound) {
	if old := sh.m[prefix]; old != nil {
		sh.bytes -= old.cost(prefix)
		delete(sh.m, prefix)
	}
	if b != nil {
		sh.m[prefix] = b
		sh.bytes += b.cost(prefix)
	}
	sh.trim()
}

// change runs fn, which changes prefix's entry b in place, keeping the
// shard's bytes, then trims the shard. The caller holds mu.
func (sh *boundsShard) change(prefix string, b *bound, fn func()) {
	before := b.cost(prefix)
	fn()
	sh.bytes += b.cost(prefix) - before
	sh.trim()
}

// trim forgets entries at random while the shard holds more than it may.
// Forgetting is always safe; an entry being answered from may go too, its
// answer still holds. The caller holds mu.
func (sh *boundsShard) trim() {
	for len(sh.m) > boundsPerShard || sh.bytes > boundsShardBytes {
		for k, e := range sh.m {
			sh.bytes -= e.cost(k)
			delete(sh.m, k)
			break
		}
	}
}

type bound struct {
	loading bool
	empty   bool   // no key is stored (when not loading)
	lo, hi  []byte // while loading: widenings seen so far (nil: none)
}

// excludes reports whether key lies outside known bounds.
func (b *bound) excludes(key []byte) bool {
	return !b.loading && (b.empty || bytes.Compare(key, b.lo) < 0 || bytes.Compare(key, b.hi) > 0)
}

// newPartBounds returns bounds for a store on db, or nil when db's
// iterators cannot find a range's last key.
func newPartBounds(ctx context.Context, db kv.DB) *partBounds {
	can := false
	err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte{nsEntities}, UpperBound: []byte{nsEntities + 1}})
		if err != nil {
			return err
		}
		_, can = it.(kv.LastIterator)
		return it.Close()
	})
	if err != nil || !can {
		return nil
	}
	b := &partBounds{seed: maphash.MakeSeed()}
	for i := range b.shards {
		b.shards[i].m = make(map[string]*bound)
	}
	return b
}

func (pb *partBounds) shard(prefix []byte) *boundsShard {
	return &pb.shards[maphash.Bytes(pb.seed, prefix)%boundsShards]
}

// absent reports whether key (of the partition whose keys start with
// prefix) is certainly not stored. The caller holds key's write lock. When
// the partition's bounds are unknown it learns them through r.
func (pb *partBounds) absent(r kv.Reader, prefix, key []byte) bool {
	sh := pb.shard(prefix)
	sh.mu.Lock()
	b := sh.m[string(prefix)]
	if b != nil {
		out := b.excludes(key)
		sh.mu.Unlock()
		return out
	}
	b = &bound{loading: true}
	sh.set(string(prefix), b)
	sh.mu.Unlock()

	lo, hi, empty, err := partitionEnds(r, prefix)

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[string(prefix)] != b {
		return false // forgotten meanwhile
	}
	if err != nil {
		sh.set(string(prefix), nil)
		return false
	}
	// Widenings that came in while the ends were read.
	if b.lo != nil {
		if empty || bytes.Compare(b.lo, lo) < 0 {
			lo = b.lo
		}
		if empty || bytes.Compare(b.hi, hi) > 0 {
			hi = b.hi
		}
		empty = false
	}
	sh.change(string(prefix), b, func() { b.loading, b.empty, b.lo, b.hi = false, empty, lo, hi })
	return b.excludes(key)
}

// widen follows every write that may add key (committed, failed or
// refused: wider is always safe), before the writer lets go of key's lock.
func (pb *partBounds) widen(prefix, key []byte) {
	sh := pb.shard(prefix)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.m[string(prefix)]
	if b == nil {
		return // unknown: whoever learns the bounds reads the stored keys
	}
	if !b.loading && b.empty {
		sh.change(string(prefix), b, func() {
			b.empty = false
			b.lo, b.hi = bytes.Clone(key), bytes.Clone(key)
		})
		return
	}
	lower := b.lo == nil || bytes.Compare(key, b.lo) < 0
	higher := b.hi == nil || bytes.Compare(key, b.hi) > 0
	if !lower && !higher {
		return
	}
	sh.change(string(prefix), b, func() {
		if lower {
			b.lo = bytes.Clone(key)
		}
		if higher {
			b.hi = bytes.Clone(key)
		}
	})
}

// partitionEnds reads the first and last stored keys that start with
// prefix.
func partitionEnds(r kv.Reader, prefix []byte) (lo, hi []byte, empty bool, err error) {
	end := bytes.Clone(prefix)
	end[len(end)-1]++ // prefix ends with str()'s terminator 0x00 0x01, so never 0xFF
	it, err := r.NewIter(kv.IterOptions{LowerBound: prefix, UpperBound: end})
	if err != nil {
		return nil, nil, false, err
	}
	defer it.Close()
	if !it.First() {
		return nil, nil, true, it.Error()
	}
	lo = bytes.Clone(it.Key())
	if !it.(kv.LastIterator).Last() {
		return nil, nil, false, it.Error()
	}
	hi = bytes.Clone(it.Key())
	return lo, hi, false, it.Error()
}
