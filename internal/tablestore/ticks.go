package tablestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/partita/partita"
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
// keeps a ceiling at ceilingKey, written and synced before any Timestamp
// up to it is handed out: no Timestamp stored, or seen by a reader (Pebble
// shows a commit before its sync, so a reader may see a version a power
// cut then loses), passes the durable ceiling, and a restarted process
// counts from it whatever its clock says.
//
// The ceiling is kept ceilingStep ahead of the clock and of the last
// Timestamp. A write that finds less than half a step left starts a raise
// in the background and goes on; one that finds its Timestamp above the
// ceiling (after an idle spell, or a leap of the clock) waits for a raise
// and runs its transaction again. So a busy store syncs the ceiling once a
// second in the background, and a write after more than two seconds of
// quiet waits for one more sync. Raises are synced writes of one key, made one
// at a time, each higher than the last.
//
// A shared store has no ceiling: several front ends, each with its own
// clock, write it, and every update there reads the stored Timestamp
// (needsCurrent), so an entity's Timestamp never goes back; a delete then
// an insert across a clock set back can still repeat an old ETag.

// ceilingStep is how far ahead of the clock (and of the last Timestamp
// handed out) a raise puts the ceiling: 2 s in ticks. A restart may start
// the Timestamps up to that far ahead of the clock.
const ceilingStep = int64(20_000_000)

// maxCeilingTries bounds the runs of a write's transaction that find
// their Timestamp above the ceiling (each is followed by a raise above
// it: a second miss takes a clock that leaps again in between).
const maxCeilingTries = 4

// farAhead is how far the ceiling may be ahead of the clock at Open
// before it is logged: Timestamps will run that far ahead until the clock
// catches up (a clock that ran ahead while the store was written).
const farAhead = time.Minute

// ceilingError is returned from inside a transaction by a tick above the
// ceiling: nothing was handed out, and the transaction is run again once
// the ceiling is above need.
type ceilingError struct{ need int64 }

func (e *ceilingError) Error() string {
	return fmt.Sprintf("tablestore: Timestamp %d above the tick ceiling", e.need)
}

// loadCeiling reads the ceiling at Open: a restarted process counts from
// it. A store written before the ceiling existed has none; its first one
// is the greatest Timestamp stored (one pass over the entities, once).
func (s *Store) loadCeiling(ctx context.Context) error {
	if s.opts.Shared {
		s.ceiling.Store(math.MaxInt64)
		return nil
	}
	var c int64
	seeded := false
	start := time.Now()
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(ceilingKey)
		if err == nil {
			u, n := binary.Uvarint(v)
			if n <= 0 || n != len(v) || u > math.MaxInt64 {
				return fmt.Errorf("malformed tick ceiling %q", v)
			}
			c = int64(u)
			return nil
		}
		if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		seeded = true
		c, err = maxStoredTicks(ctx, r)
		return err
	})
	if err != nil {
		return fmt.Errorf("tablestore: read the tick ceiling: %w", err)
	}
	if seeded && c > 0 {
		if err := s.db.Update(ctx, func(tx kv.Txn) error { return tx.Set(ceilingKey, binary.AppendUvarint(nil, uint64(c))) }); err != nil {
			return fmt.Errorf("tablestore: write the first tick ceiling: %w", err)
		}
		s.opts.Logger.Info("the store's first tick ceiling is its greatest stored Timestamp (read once, after an upgrade)",
			"ceiling", edm.TimeFromTicks(c).UTC().Format(time.RFC3339Nano), "took", time.Since(start).Round(time.Millisecond).String())
	}
	s.ceiling.Store(c)
	s.lastTick.Store(c)
	if ahead := edm.TimeFromTicks(c).Sub(s.opts.Now()); ahead > farAhead {
		s.opts.Logger.Warn("the store's Timestamps are ahead of the clock: new ones go on from the last handed out, so that none repeats, until the clock catches up",
			"ahead", ahead.Round(time.Second).String(), "last", edm.TimeFromTicks(c).UTC().Format(time.RFC3339))
	}
	return nil
}

// maxStoredTicks returns the greatest Timestamp of the stored entities.
func maxStoredTicks(ctx context.Context, r kv.Reader) (int64, error) {
	it, err := r.NewIter(kv.IterOptions{LowerBound: []byte{nsEntities}, UpperBound: []byte{nsEntities + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var c int64
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		ts, err := decodeTicks(it.Value())
		if err != nil {
			return 0, fmt.Errorf("entity key %q: %w", it.Key(), err)
		}
		c = max(c, ts)
	}
	return c, it.Error()
}

// tick returns a fresh Timestamp, strictly greater than every one handed
// out before by this process (and, on the embedded store, by every
// process before it) and than after, so two writes of one entity never
// share an ETag even within one clock tick. A Timestamp above the ceiling
// is not handed out: the error is a *ceilingError (update runs the
// transaction again above it).
func (s *Store) tick(after int64) (int64, error) {
	now := edm.TicksFromTime(s.opts.Now())
	for {
		last := s.lastTick.Load()
		t := max(now, last+1, after+1)
		if t > s.ceiling.Load() {
			return 0, &ceilingError{need: t}
		}
		if s.lastTick.CompareAndSwap(last, t) {
			return t, nil
		}
	}
}

// update runs a write transaction whose function hands out Timestamps:
// the ceiling is raised ahead of it when needed, and a run that finds its
// Timestamp above the ceiling is run again above it. A write that cannot
// get under the ceiling is ServerBusy, which clients retry.
func (s *Store) update(ctx context.Context, fn func(kv.Txn) error) error {
	var need int64
	for try := 1; ; try++ {
		if err := s.reserve(ctx, need); err != nil {
			return err
		}
		err := s.db.Update(ctx, fn)
		var ce *ceilingError
		if !errors.As(err, &ce) {
			return err
		}
		if try == maxCeilingTries {
			return &partita.Error{Code: partita.CodeServerBusy, Message: partita.MsgServerBusy, Err: err}
		}
		need = ce.need
	}
}

// reserve makes sure the ceiling is above the clock, the last Timestamp
// and need, raising it (and waiting) when it is not, and starting a raise
// in the background when less than half a step is left.
func (s *Store) reserve(ctx context.Context, need int64) error {
	if s.opts.Shared {
		return nil
	}
	at := max(edm.TicksFromTime(s.opts.Now()), s.lastTick.Load()+1, need)
	c := s.ceiling.Load()
	switch {
	case at+ceilingStep/2 <= c:
		return nil
	case at <= c:
		if s.raising.CompareAndSwap(false, true) {
			s.purging.Add(1) // Close waits for it
			go func() {
				defer s.purging.Done()
				defer s.raising.Store(false)
				if err := s.raise(s.purgeCtx, 0); err != nil && s.purgeCtx.Err() == nil {
					s.opts.Logger.Warn("raise the tick ceiling", "err", err)
				}
			}()
		}
		return nil
	}
	return s.raise(ctx, need)
}

// raise writes, synced, a ceiling a step above the clock, the last
// Timestamp and need, unless one at least half a step above them is there
// (another raise got there first).
func (s *Store) raise(ctx context.Context, need int64) error {
	s.ceilMu.Lock()
	defer s.ceilMu.Unlock()
	at := max(edm.TicksFromTime(s.opts.Now()), s.lastTick.Load()+1, need)
	if at+ceilingStep/2 <= s.ceiling.Load() {
		return nil
	}
	c := at + ceilingStep
	if err := s.db.Update(ctx, func(tx kv.Txn) error { return tx.Set(ceilingKey, binary.AppendUvarint(nil, uint64(c))) }); err != nil {
		return fmt.Errorf("tablestore: raise the tick ceiling: %w", err)
	}
	s.ceiling.Store(c)
	return nil
}
