package tablestore

import (
	"bytes"
	"context"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/invariants"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/odata"
)

// QueryEntities implements partita.Store. The filter is planned into key
// ranges (odata.PlanQuery); each range is scanned in key order and the
// whole filter is evaluated on every entity read, so the plan only decides
// how much is read, never what matches.
func (s *Store) QueryEntities(ctx context.Context, account, tableName string, q partita.Query, fn func(*partita.Entity) error) (partita.QueryInfo, error) {
	l := s.readLockTable(account, tableName)
	defer l.readUnlock()
	top := q.Top
	if top <= 0 || top > partita.MaxPageSize {
		top = partita.MaxPageSize
	}
	plan := odata.PlanQuery(q.Filter)
	if q.Within != nil {
		plan = plan.Clip(*q.Within)
	}
	pg := &page{ctx: ctx, q: q, top: top, fn: fn, deadline: s.opts.Now().Add(s.opts.ScanTimeBudget)}
	pg.info.Class = plan.Class
	err := s.db.View(ctx, func(r kv.Reader) error {
		t, err := s.queryTable(r, account, tableName)
		if err != nil {
			return err
		}
		var resume []byte
		if q.Next != nil {
			resume = entityKey(nil, t.id, q.Next.PartitionKey, q.Next.RowKey)
		}
		// One iterator for every range where the engine can move it
		// (kv.Rebounder): a Pebble iterator reads the store as of its
		// making, and one per range let a batch committed between two
		// ranges show in one and not the other: a page with half of it.
		var it kv.Iterator
		defer func() {
			if it != nil {
				it.Close()
			}
		}()
		for _, rg := range plan.Ranges {
			lo := position(t.id, rg.Start, false)
			hi := position(t.id, rg.End, true)
			if resume != nil {
				if bytes.Compare(resume, hi) >= 0 {
					continue
				}
				if bytes.Compare(resume, lo) > 0 {
					lo = resume
				}
			}
			if bytes.Compare(lo, hi) >= 0 {
				continue
			}
			if rb, ok := it.(kv.Rebounder); ok {
				rb.SetBounds(lo, hi)
			} else {
				if it != nil {
					it.Close()
				}
				if it, err = r.NewIter(kv.IterOptions{LowerBound: lo, UpperBound: hi, Rows: pg.rowsHint()}); err != nil {
					it = nil
					return err
				}
			}
			done, err := s.scan(it, pg)
			if err != nil || done {
				return err
			}
		}
		return nil
	})
	return pg.info, err
}

// queryTable is table for a query. On a shared store the catalog record is
// read in the query's snapshot (readTableInSnapshot): read by a statement
// of its own, it could be followed by a drop and a purge before the scan,
// which then returned an empty table, or part of one, as the table's
// contents.
func (s *Store) queryTable(r kv.Reader, account, tableName string) (*tableRecord, error) {
	if s.opts.Shared {
		return s.liveTable(r, account, tableName, readTableInSnapshot)
	}
	return s.table(r, account, tableName)
}

// rowsHint is what the page will read at least (kv.IterOptions.Rows):
// the entities it may still hold and the one after them, which names the
// continuation; 0 (unknown) for a page of the full size, which fetches
// as it always did.
func (pg *page) rowsHint() int {
	if pg.top >= partita.MaxPageSize {
		return 0
	}
	return pg.top - pg.matched + 1
}

// page is one page of a query, carried across the key ranges of its plan.
type page struct {
	ctx      context.Context
	q        partita.Query
	top      int       // entities the page may hold
	deadline time.Time // when the scan budget is spent
	fn       func(*partita.Entity) error

	e       partita.Entity // passed to fn, reused for every entity
	matched int            // entities passed to fn so far
	info    partita.QueryInfo
}

// scan reads one key range into pg. It returns done=true when the page is
// full or the budget is spent (pg.info.Next set if entities remain).
func (s *Store) scan(it kv.Iterator, pg *page) (bool, error) {
	filter, borrow := pg.q.Filter, pg.q.Borrow
	e, info := &pg.e, &pg.info
	var v view
	get := v.get
	for ok := it.First(); ok; ok = it.Next() {
		if pg.matched >= pg.top || info.Examined >= s.opts.MaxExamined ||
			(info.Examined&255 == 255 && (s.opts.Now().After(pg.deadline) || pg.ctx.Err() != nil)) {
			pk, rk, err := decodeEntityKey(it.Key())
			if err != nil {
				return false, err
			}
			info.Next = &partita.Key{PartitionKey: pk, RowKey: rk}
			return true, nil
		}
		info.Examined++
		if filter != nil {
			v.reset(it.Key(), it.Value())
			if !odata.Eval(filter, get) && !v.bad {
				continue
			}
		}
		if filter != nil && v.keysOK { // the filter already decoded them
			e.PartitionKey, e.RowKey = v.pk, v.rk
		} else {
			pk, rk, err := decodeEntityKey(it.Key())
			if err != nil {
				return false, err
			}
			e.PartitionKey, e.RowKey = pk, rk
		}
		val := it.Value()
		var lent []byte
		if borrow && invariants.Enabled {
			// Lend a copy, poisoned when fn returns, so that a callback
			// that keeps what it borrowed reads garbage in tests.
			lent = bytes.Clone(val)
			val = lent
		}
		if err := decodeEntityInto(val, e, borrow); err != nil {
			if ierr := it.Error(); ierr != nil {
				// The value could not be read (a checksum mismatch, an
				// I/O error): that, not "malformed", is what went wrong.
				return false, ierr
			}
			return false, err
		}
		if filter != nil && v.bad && !odata.Eval(filter, e.Get) {
			invariants.Poison(lent)
			continue
		}
		pg.matched++
		err := pg.fn(e)
		invariants.Poison(lent)
		if err == partita.ErrStopPage {
			pg.matched = pg.top // the page is full: report the next key, if any
		} else if err != nil {
			return false, err
		}
	}
	return false, it.Error()
}

// evalTable evaluates a Query Tables filter, whose only property is
// TableName.
func evalTable(f odata.Expr, name string) bool {
	return odata.Eval(f, func(p string) (edm.Value, bool) {
		if p == "TableName" {
			return edm.StringValue(name), true
		}
		return edm.Value{}, false
	})
}
