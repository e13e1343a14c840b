package tablestore

import (
	"context"
	"time"

	"github.com/partita/partita/internal/kv"
)

// MapSizes reports how many entries the store's per-table maps hold: the
// table locks, the catalog cache and the shared-store hints (tests).
func MapSizes(s *Store) (locks, cache, hints int) {
	count := func(m interface{ Range(func(k, v any) bool) }) int {
		n := 0
		m.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	return s.locks.len(), count(&s.cache), count(&s.hints)
}

// MaxHints is the bound of the shared-store hints.
const MaxHints = maxHints

// SetBoundsPerShard changes how many partitions' bounds a shard of every
// store remembers, for tests; it returns a func that restores it.
func SetBoundsPerShard(n int) func() {
	old := boundsPerShard
	boundsPerShard = n
	return func() { boundsPerShard = old }
}

// SetBoundsShardBytes changes how many bytes of keys a shard of every
// store's bounds may hold, for tests; it returns a func that restores it.
func SetBoundsShardBytes(n int) func() {
	old := boundsShardBytes
	boundsShardBytes = n
	return func() { boundsShardBytes = old }
}

// BoundsBytes reports the bytes s's bounds hold, as counted against their
// budget, and checks that count against the entries themselves.
func BoundsBytes(s *Store) (counted, actual int) {
	if s.bounds == nil {
		return 0, 0
	}
	for i := range s.bounds.shards {
		sh := &s.bounds.shards[i]
		sh.mu.Lock()
		counted += sh.bytes
		for k, b := range sh.m {
			actual += b.cost(k)
		}
		sh.mu.Unlock()
	}
	return counted, actual
}

// BoundsKnown reports how many partitions' bounds s holds (loaded or
// loading).
func BoundsKnown(s *Store) int {
	if s.bounds == nil {
		return 0
	}
	n := 0
	for i := range s.bounds.shards {
		sh := &s.bounds.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// SetPurgeTimeout changes how long one purge attempt may take, for tests;
// it returns a func that restores it.
func SetPurgeTimeout(d time.Duration) func() {
	old := purgeTimeout
	purgeTimeout = d
	return func() { purgeTimeout = old }
}

// MaxPurges is how many dropped tables are purged at once.
func MaxPurges() int { return maxPurges }

// PurgeNow runs one purge attempt of the table as its catalog record now
// stands (live or dropped), for tests.
func PurgeNow(ctx context.Context, s *Store, account, name string) error {
	var t *tableRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		t, err = readTable(r, account, name)
		return err
	})
	if err != nil || t == nil {
		return err
	}
	return s.purge(ctx, t)
}
