package tablestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// GetEntity implements partita.Store.
func (s *Store) GetEntity(ctx context.Context, account, tableName string, key partita.Key) (*partita.Entity, error) {
	l := s.readLockTable(account, tableName)
	defer l.readUnlock()
	var e *partita.Entity
	err := s.db.View(ctx, func(r kv.Reader) error {
		if v, ok, err := s.sharedPointRead(r, account, tableName, key); ok || err != nil {
			if err == nil {
				e = &partita.Entity{PartitionKey: key.PartitionKey, RowKey: key.RowKey}
				err = decodeEntityCopy(v, e)
			}
			return err
		}
		t, err := s.table(r, account, tableName)
		if err != nil {
			return err
		}
		s.remember(account, tableName, t)
		k := entityKey(nil, t.id, key.PartitionKey, key.RowKey)
		var ticket uint64
		if s.rows != nil {
			if v, ok := s.rows.get(k); ok {
				// A cached value is never modified, so the entity may
				// borrow its strings.
				e = &partita.Entity{PartitionKey: key.PartitionKey, RowKey: key.RowKey}
				return decodeEntityInto(v, e, true)
			}
			ticket = s.rows.ticket(k)
		}
		v, err := r.Get(k)
		if errors.Is(err, kv.ErrNotFound) {
			return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		if err != nil {
			return err
		}
		if s.rows != nil {
			s.rows.add(k, v, ticket)
		}
		e = &partita.Entity{PartitionKey: key.PartitionKey, RowKey: key.RowKey}
		return decodeEntityCopy(v, e)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// sharedPointRead answers a point read on a shared store in one round
// trip: the table's catalog record and the entity under the table id last
// seen are read together, and the answer stands when the record still names
// that id (a re-created table has a new one). ok is false when the caller
// must fall back to the two-step read.
func (s *Store) sharedPointRead(r kv.Reader, account, tableName string, key partita.Key) (val []byte, ok bool, err error) {
	mg, isMulti := r.(kv.MultiGetter)
	if !s.opts.Shared || !isMulti {
		return nil, false, nil
	}
	cn := catalogName(account, tableName)
	hint, found := s.hints.Load(cn)
	if !found {
		return nil, false, nil
	}
	id := hint.(*tableRecord).id
	ck := catalogKey(account, tableName)
	vals, err := mg.GetMany([][]byte{ck, entityKey(nil, id, key.PartitionKey, key.RowKey)})
	if err != nil {
		return nil, false, err
	}
	if vals[0] == nil {
		s.forgetHint(cn)
		return nil, false, partita.NewError(partita.CodeTableNotFound, partita.MsgTableNotFound)
	}
	t, err := decodeCatalogEntry(ck, vals[0])
	if err != nil || t.id != id || t.state != stateActive {
		return nil, false, err // fall back: the table changed
	}
	if vals[1] == nil {
		return nil, false, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
	}
	return vals[1], true, nil
}

// Write implements partita.Store.
func (s *Store) Write(ctx context.Context, account, tableName string, op partita.Op) (partita.Result, error) {
	if op.Kind != partita.OpDelete {
		if err := op.Entity.Validate(); err != nil {
			return partita.Result{}, err
		}
	}
	l := s.readLockTable(account, tableName)
	defer l.readUnlock()
	pl := s.partLock(account, tableName, op.Entity.PartitionKey)
	pl.RLock()
	defer pl.RUnlock()
	kl := s.keyLock(account, tableName, op.Entity.PartitionKey, op.Entity.RowKey)
	kl.Lock()
	defer kl.Unlock()
	if res, ok, err := s.condWrite(ctx, account, tableName, op); ok || err != nil {
		return res, err
	}
	var res partita.Result
	var key, stored []byte
	var begun, cached bool // rowCache.begin: called, and its answer
	err := s.update(ctx, func(tx kv.Txn) error {
		t, err := s.table(tx, account, tableName)
		if err != nil {
			return err
		}
		s.remember(account, tableName, t)
		key = entityKey(nil, t.id, op.Entity.PartitionKey, op.Entity.RowKey)
		var cur []byte
		if s.needsCurrent(op.Kind) {
			// The key's lock is held, so a cached value is the latest
			// committed one (rowcache.go), and a key outside its
			// partition's bounds is not stored (bounds.go). An insert
			// skips the cache: its key is new as a rule, and the engine
			// answers the 409 of one that is not.
			var ok bool
			if s.bounds != nil && mayCreate(op.Kind) {
				ok = s.bounds.absent(tx, key[:partitionPrefixLen(key)], key) // cur stays nil
			}
			if !ok && s.rows != nil && op.Kind != partita.OpInsert {
				cur, ok = s.rows.peek(key)
			}
			if !ok {
				if cur, err = tx.Get(key); err != nil && !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("read entity: %w", err)
				}
			}
		}
		res, stored, err = s.apply(tx, key, op, cur)
		if err == nil && s.rows != nil && !begun { // once, should an engine run fn again
			// Out of the cache before the commit can be seen (rowcache.go).
			cached, begun = s.rows.begin(key), true
		}
		return err
	})
	if begun {
		// Back in, as committed; a failed commit, which may have
		// reached the engine, puts nothing back.
		s.rows.end(key, stored, cached && err == nil)
	}
	if s.bounds != nil && key != nil && mayCreate(op.Kind) {
		s.bounds.widen(key[:partitionPrefixLen(key)], key) // before the key's lock goes
	}
	if err != nil {
		return partita.Result{}, err
	}
	return res, nil
}

// mayCreate reports whether a write of kind k may store a key that was
// absent: those widen the partition's bounds, and their reads of the
// current value the bounds can spare (bounds.go).
func mayCreate(k partita.OpKind) bool {
	return k == partita.OpInsert || k == partita.OpInsertOrMerge || k == partita.OpInsertOrReplace
}

// maxHints bounds the shared-store hints (see Store.nHints).
const maxHints = 1 << 14

// remember notes, on a shared store, the catalog record a request found,
// for one-round-trip point reads and conditional writes of that table.
func (s *Store) remember(account, tableName string, t *tableRecord) {
	if !s.opts.Shared || t.raw == nil {
		return
	}
	if _, loaded := s.hints.Swap(catalogName(account, tableName), t); !loaded {
		if s.nHints.Add(1) > maxHints {
			s.hints.Clear()
			s.nHints.Store(0)
		}
	}
}

// forgetHint drops the hint of a table that is gone.
func (s *Store) forgetHint(cn string) {
	if _, loaded := s.hints.LoadAndDelete(cn); loaded {
		s.nHints.Add(-1)
	}
}

// condWrite performs a write in one statement when the engine can
// (kv.CondWriter), the store is shared, this process has seen the table's
// catalog record, and the write needs no current value: an insert, a
// replace with an ETag, or a delete. Everything the transaction would check
// becomes a condition of the statement: the catalog record is unchanged
// (the table still exists and is the same table), the entity is absent
// (insert) or present, and its value begins with the encoding of the
// ETag's Timestamp. ok is false when the statement did not apply (or could
// not be used): the caller then runs the transaction, which finds out why
// and returns the service's error, or applies the write if the state
// changed in between.
func (s *Store) condWrite(ctx context.Context, account, tableName string, op partita.Op) (partita.Result, bool, error) {
	g, _ := s.db.(guard)
	cw, can := g.condWriter()
	if !s.opts.Shared || !can {
		return partita.Result{}, false, nil
	}
	hint, found := s.hints.Load(catalogName(account, tableName))
	if !found {
		return partita.Result{}, false, nil
	}
	t := hint.(*tableRecord)
	e := op.Entity
	w := kv.CondWrite{
		GuardKey:   catalogKey(account, tableName),
		GuardValue: t.raw,
		Key:        entityKey(nil, t.id, e.PartitionKey, e.RowKey),
	}
	var after int64
	switch {
	case op.Kind == partita.OpInsert:
		w.Absent = true
	case op.Kind == partita.OpReplace && op.If.Kind == partita.IfETag:
		w.Prefix, after = valuePrefix(op.If.Ticks), op.If.Ticks
	case op.Kind == partita.OpDelete && op.If.Kind == partita.IfETag:
		w.Prefix = valuePrefix(op.If.Ticks)
	case op.Kind == partita.OpDelete && op.If.Kind == partita.IfExists:
	default:
		return partita.Result{}, false, nil
	}
	var ts int64
	if op.Kind != partita.OpDelete {
		ts, _ = s.tick(after) // a shared store has no ceiling, so no error
		stored := *e          // the caller's entity is left as it was
		stored.Timestamp = ts
		w.Value = appendEntity(make([]byte, 0, encodedSize(&stored)), &stored)
	}
	applied, err := cw(ctx, w)
	if err != nil || !applied {
		return partita.Result{}, false, err
	}
	return partita.Result{Timestamp: ts}, true, nil
}

// WriteBatch implements partita.Store: one kv transaction, one synced
// commit, all or nothing. The store checks the entity group rules itself:
// its locking (one partition lock) and its read of current values (one
// value per distinct key) depend on them.
func (s *Store) WriteBatch(ctx context.Context, account, tableName string, ops []partita.Op) ([]partita.Result, error) {
	if err := partita.CheckEntityGroup(ops); err != nil {
		return nil, err
	}
	for i, op := range ops {
		if op.Kind != partita.OpDelete {
			if err := op.Entity.Validate(); err != nil {
				return nil, &partita.BatchError{Index: i, Err: err}
			}
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	l := s.readLockTable(account, tableName)
	defer l.readUnlock()
	pl := s.partLock(account, tableName, ops[0].Entity.PartitionKey)
	pl.Lock()
	defer pl.Unlock()
	results := make([]partita.Result, len(ops))
	var keys [][]byte
	var vals [][]byte // written values, for the row cache
	var cached []bool // rowCache.begin's answers, once called
	err := s.update(ctx, func(tx kv.Txn) error {
		t, err := s.table(tx, account, tableName)
		if err != nil {
			return &partita.BatchError{Index: 0, Err: err}
		}
		keys = make([][]byte, len(ops))
		if s.rows != nil {
			vals = make([][]byte, len(ops))
		}
		read := make([]int, 0, len(ops)) // the operations that need their current value
		for i, op := range ops {
			keys[i] = entityKey(nil, t.id, op.Entity.PartitionKey, op.Entity.RowKey)
			if s.needsCurrent(op.Kind) {
				read = append(read, i)
			}
		}
		if s.bounds != nil && len(read) > 0 {
			// Keys outside the partition's bounds are not stored: their
			// reads are spared (the partition's lock is held).
			prefix := keys[0][:partitionPrefixLen(keys[0])]
			n := 0
			for _, i := range read {
				if !mayCreate(ops[i].Kind) || !s.bounds.absent(tx, prefix, keys[i]) {
					read[n] = i
					n++
				}
			}
			read = read[:n]
		}
		cur, err := readMany(tx, keys, read)
		if err != nil {
			return err
		}
		for i, op := range ops {
			var err error
			var v []byte
			results[i], v, err = s.apply(tx, keys[i], op, cur[i])
			if vals != nil {
				vals[i] = v
			}
			if err != nil {
				return &partita.BatchError{Index: i, Err: err}
			}
		}
		if s.rows != nil && cached == nil { // once, should an engine run fn again
			// Out of the cache before the commit can be seen (rowcache.go).
			cached = make([]bool, len(keys))
			for i, k := range keys {
				cached[i] = s.rows.begin(k)
			}
		}
		return nil
	})
	if cached != nil {
		for i, k := range keys {
			s.rows.end(k, vals[i], cached[i] && err == nil)
		}
	}
	if s.bounds != nil {
		// The lowest and highest key the batch may add widen the bounds
		// enough, before the partition's lock goes.
		var lo, hi []byte
		for i, k := range keys {
			if !mayCreate(ops[i].Kind) {
				continue
			}
			if lo == nil || bytes.Compare(k, lo) < 0 {
				lo = k
			}
			if hi == nil || bytes.Compare(k, hi) > 0 {
				hi = k
			}
		}
		if lo != nil {
			prefix := lo[:partitionPrefixLen(lo)]
			s.bounds.widen(prefix, lo)
			s.bounds.widen(prefix, hi)
		}
	}
	if err != nil {
		var be *partita.BatchError
		if !errors.As(err, &be) && errors.Is(err, kv.ErrKeyTooLarge) {
			// The engine refused a key at the commit, without saying
			// which: the operation with the longest keys has one the
			// engine cannot index (PostgreSQL's limit is on one index
			// row). Named, the failure is a changeset response with its
			// index, as for every other refused operation, not a bare
			// 400 that clients reading the failed operation's index lose.
			err = &partita.BatchError{Index: longestKeys(ops), Err: err}
		}
		return nil, err
	}
	return results, nil
}

// longestKeys returns the index of the operation whose PartitionKey and
// RowKey are the longest together (the first of equals).
func longestKeys(ops []partita.Op) int {
	best, n := 0, -1
	for i, op := range ops {
		if l := len(op.Entity.PartitionKey) + len(op.Entity.RowKey); l > n {
			best, n = i, l
		}
	}
	return best
}

// needsCurrent reports whether a write must read the entity's current
// value: every kind but a blind insert-or-replace, which on a shared store
// reads it too, so its new Timestamp exceeds the current one even when
// another front end's clock is ahead.
func (s *Store) needsCurrent(k partita.OpKind) bool {
	return k != partita.OpInsertOrReplace || s.opts.Shared
}

// readMany reads the current values of the keys of a batch's entities
// whose indexes are in order (which it sorts), with one iterator and
// ascending seeks, which costs far less than a Get per key when the keys
// are new (a Get of an absent key probes every level). The keys are
// distinct, so no operation of the batch changes another's current value.
// A nil value means absent, or not read.
func readMany(tx kv.Txn, keys [][]byte, order []int) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	if len(order) == 0 {
		return vals, nil // a batch of blind insert-or-replace reads nothing
	}
	sort.Slice(order, func(a, b int) bool { return bytes.Compare(keys[order[a]], keys[order[b]]) < 0 })
	lo := keys[order[0]]
	hi := append(bytes.Clone(keys[order[len(order)-1]]), 0)
	it, err := tx.NewIter(kv.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for _, i := range order {
		if it.SeekGE(keys[i]) && bytes.Equal(it.Key(), keys[i]) {
			vals[i] = bytes.Clone(it.Value())
		}
	}
	return vals, it.Error()
}

// apply performs one write of the entity at key inside tx, given its
// current encoded value (nil when absent, or not read: see needsCurrent).
// It checks existence and the ETag precondition, merges when asked, and
// returns the new Timestamp and the value written (nil for a delete),
// which the caller owns; op.Entity is left as it was.
func (s *Store) apply(tx kv.Txn, key []byte, op partita.Op, curVal []byte) (partita.Result, []byte, error) {
	e := op.Entity
	merge := op.Kind == partita.OpMerge || op.Kind == partita.OpInsertOrMerge
	// Only a merge needs the current properties; every other write needs
	// the current Timestamp at most, which leads the value.
	var cur *partita.Entity
	var curTicks int64
	if curVal != nil {
		var err error
		if merge {
			// Borrowed: cur is encoded anew below, before the transaction
			// (which owns curVal) ends.
			cur = &partita.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
			err = decodeEntityInto(curVal, cur, true)
			curTicks = cur.Timestamp
		} else {
			curTicks, err = decodeTicks(curVal)
		}
		if err != nil {
			return partita.Result{}, nil, fmt.Errorf("decode entity %q/%q: %w", e.PartitionKey, e.RowKey, err)
		}
	}
	switch op.Kind {
	case partita.OpInsert:
		if curVal != nil {
			return partita.Result{}, nil, partita.NewError(partita.CodeEntityAlreadyExists, partita.MsgEntityAlreadyExists)
		}
	case partita.OpReplace, partita.OpMerge, partita.OpDelete:
		if curVal == nil {
			return partita.Result{}, nil, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		if op.If.Kind == partita.IfETag && op.If.Ticks != curTicks {
			return partita.Result{}, nil, partita.NewError(partita.CodeUpdateConditionNotSatisfied, partita.MsgUpdateCondition)
		}
	}
	if op.Kind == partita.OpDelete {
		if err := tx.Delete(key); err != nil {
			return partita.Result{}, nil, fmt.Errorf("delete entity: %w", err)
		}
		return partita.Result{}, nil, nil
	}
	var stored *partita.Entity
	if merge && cur != nil {
		// Both sides were validated (e by Write, cur when it was
		// stored); only the entity-wide limits can fail now.
		cur.Merge(e.Properties)
		if err := cur.CheckLimits(); err != nil {
			return partita.Result{}, nil, err
		}
		stored = cur
	} else {
		cp := *e // the caller's entity is left as it was
		stored = &cp
	}
	ts, err := s.tick(curTicks)
	if err != nil {
		return partita.Result{}, nil, err
	}
	stored.Timestamp = ts
	val := appendEntity(make([]byte, 0, encodedSize(stored)), stored)
	if err := tx.Set(key, val); err != nil {
		return partita.Result{}, nil, fmt.Errorf("write entity: %w", err)
	}
	return partita.Result{Timestamp: stored.Timestamp}, val, nil
}
