package tablestore

import (
	"context"
	"fmt"
	"math"

	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
)

// # Timestamps across restarts
//
// An entity's Timestamp is its ETag, so two versions of one entity must
// never share one: a stale If-Match would then pass. Within a process,
// tick hands out strictly increasing values, past the entity's stored one.
// Across a restart the clock alone is not enough: it may have been set
// back (a virtual machine's snapshot restored, a clock corrected), and a
// blind insert-or-replace, or a delete then an insert, does not read the
// entity's stored Timestamp on the embedded store. So the embedded store
// keeps a ceiling: the greatest of the keys under ceilingPrefix, each of
// which holds its value in the key. Every Timestamp committed is at most
// the ceiling committed before it or with it, and a restarted process
// counts from the ceiling, whatever its clock says.
//
// Keeping the ceiling ahead costs no sync: reserve, before a write's
// transaction, writes a new ceiling a step ahead of the clock whenever less
// than half a step is left, with kv.Prefacer (the write's own sync covers
// it; on a busy store, one small unsynced write every half second). A
// Timestamp that passes the ceiling anyway (the transaction stalled, or
// the clock jumped, after the reserve) writes its own ceiling key in its
// own transaction. Since each ceiling is a key of its own and the greatest
// wins, the order in which those commits reach the log does not matter:
// nothing a commit makes durable can lower the ceiling. The reserve deletes
// the keys below the one it writes, in the same batch.
//
// A shared store has no ceiling: several front ends, each with its own
// clock, write it, and every update there reads the stored Timestamp
// (needsCurrent), so an entity's Timestamp never goes back; a delete then
// an insert across a clock set back can still repeat an old ETag.

// ceilingStep is how far ahead of the clock (and of the last Timestamp
// handed out) the reserve puts the ceiling: 1 s in ticks. A restart may
// start the Timestamps up to that far ahead of the clock.
const ceilingStep = int64(10_000_000)

// loadCeiling reads the ceiling at Open: a restarted process counts from
// it. A store written before the ceiling existed has none: it starts from
// the clock, and its first write records one.
func (s *Store) loadCeiling(ctx context.Context) error {
	if s.opts.Shared {
		s.ceiling.Store(math.MaxInt64)
		return nil
	}
	var c int64
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		c, err = readCeiling(r, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("tablestore: read the tick ceiling: %w", err)
	}
	s.ceiling.Store(c)
	s.lastTick.Store(c)
	return nil
}

// readCeiling returns the greatest ceiling key's value (0 when there is
// none), calling each, when not nil, with every ceiling key and its value.
func readCeiling(r kv.Reader, each func(k []byte, ticks int64) error) (int64, error) {
	it, err := r.NewIter(kv.IterOptions{LowerBound: ceilingPrefix, UpperBound: append(ceilingPrefix[:len(ceilingPrefix):len(ceilingPrefix)], 0xFF)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var c int64
	for valid := it.First(); valid; valid = it.Next() {
		t, ok := ceilingOf(it.Key())
		if !ok {
			return 0, fmt.Errorf("malformed tick ceiling key %q", it.Key())
		}
		if each != nil {
			if err := each(it.Key(), t); err != nil {
				return 0, err
			}
		}
		c = max(c, t)
	}
	return c, it.Error()
}

// tick returns a fresh Timestamp, strictly greater than every one handed
// out before by this process (and, on the embedded store, by every
// process before it) and than after, so two writes of one entity never
// share an ETag even within one clock tick. tx is the transaction that
// stores it: should it pass the ceiling, tx carries a ceiling of its own.
func (s *Store) tick(tx kv.Txn, after int64) (int64, error) {
	now := edm.TicksFromTime(s.opts.Now())
	for {
		last := s.lastTick.Load()
		t := max(now, last+1, after+1)
		if s.lastTick.CompareAndSwap(last, t) {
			if t > s.ceiling.Load() {
				if err := tx.Set(ceilingKey(t), nil); err != nil {
					return 0, fmt.Errorf("write a tick ceiling: %w", err)
				}
			}
			return t, nil
		}
	}
}

// reserve makes sure the ceiling is at least half a step above the clock
// and the last Timestamp handed out, writing one a whole step above them
// when it is not. It runs outside transactions (kv.Prefacer's rule).
func (s *Store) reserve(ctx context.Context) error {
	if s.opts.Shared {
		return nil
	}
	if max(edm.TicksFromTime(s.opts.Now()), s.lastTick.Load())+ceilingStep/2 <= s.ceiling.Load() {
		return nil
	}
	s.ceilMu.Lock()
	defer s.ceilMu.Unlock()
	c := max(edm.TicksFromTime(s.opts.Now()), s.lastTick.Load()) + ceilingStep
	if c-ceilingStep/2 <= s.ceiling.Load() {
		return nil // raised meanwhile
	}
	write := func(tx kv.Txn) error {
		if _, err := readCeiling(tx, func(k []byte, t int64) error {
			if t < c {
				return tx.Delete(k) // the engine copies k
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.Set(ceilingKey(c), nil)
	}
	var err error
	g, _ := s.db.(guard)
	if p, ok := g.DB.(kv.Prefacer); ok {
		err = busy(p.Preface(ctx, write))
	} else {
		err = s.db.Update(ctx, write)
	}
	if err != nil {
		return fmt.Errorf("tablestore: raise the tick ceiling: %w", err)
	}
	s.ceiling.Store(c)
	return nil
}

// update runs a write transaction whose function hands out Timestamps,
// with the ceiling reserved ahead of it.
func (s *Store) update(ctx context.Context, fn func(kv.Txn) error) error {
	if err := s.reserve(ctx); err != nil {
		return err
	}
	return s.db.Update(ctx, fn)
}
