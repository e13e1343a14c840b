package tablestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
)

// GetEntity implements partita.Store.
func (s *Store) GetEntity(ctx context.Context, account, tableName string, key partita.Key) (*partita.Entity, error) {
	l := s.tableLock(account, tableName)
	l.RLock()
	defer l.RUnlock()
	var e *partita.Entity
	err := s.db.View(ctx, func(r kv.Reader) error {
		t, err := s.table(r, account, tableName)
		if err != nil {
			return err
		}
		v, err := r.Get(entityKey(nil, t.id, key.PartitionKey, key.RowKey))
		if errors.Is(err, kv.ErrNotFound) {
			return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		if err != nil {
			return err
		}
		e = &partita.Entity{PartitionKey: key.PartitionKey, RowKey: key.RowKey}
		return decodeEntity(v, e)
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Write implements partita.Store.
func (s *Store) Write(ctx context.Context, account, tableName string, op partita.Op) (partita.Result, error) {
	if op.Kind != partita.OpDelete {
		if err := op.Entity.Validate(); err != nil {
			return partita.Result{}, err
		}
	}
	l := s.tableLock(account, tableName)
	l.RLock()
	defer l.RUnlock()
	mu := s.stripe(account, tableName, op.Entity.PartitionKey)
	mu.Lock()
	defer mu.Unlock()
	var res partita.Result
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		t, err := s.table(tx, account, tableName)
		if err != nil {
			return err
		}
		res, err = s.apply(tx, t.id, op, nil)
		return err
	})
	if err != nil {
		return partita.Result{}, err
	}
	return res, nil
}

// WriteBatch implements partita.Store: one kv transaction, one synced
// commit, all or nothing.
func (s *Store) WriteBatch(ctx context.Context, account, tableName string, ops []partita.Op) ([]partita.Result, error) {
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
	l := s.tableLock(account, tableName)
	l.RLock()
	defer l.RUnlock()
	mu := s.stripe(account, tableName, ops[0].Entity.PartitionKey)
	mu.Lock()
	defer mu.Unlock()
	results := make([]partita.Result, len(ops))
	var buf []byte
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		t, err := s.table(tx, account, tableName)
		if err != nil {
			return &partita.BatchError{Index: 0, Err: err}
		}
		for i, op := range ops {
			var err error
			results[i], err = s.apply(tx, t.id, op, buf)
			if err != nil {
				return &partita.BatchError{Index: i, Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// apply performs one write inside tx. It checks existence and the ETag
// precondition, merges when asked, and assigns the new Timestamp.
func (s *Store) apply(tx kv.Txn, id uint64, op partita.Op, buf []byte) (partita.Result, error) {
	e := op.Entity
	key := entityKey(buf[:0], id, e.PartitionKey, e.RowKey)

	needRead := op.Kind != partita.OpInsertOrReplace
	var cur *partita.Entity
	if needRead {
		v, err := tx.Get(key)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return partita.Result{}, fmt.Errorf("read entity: %w", err)
		default:
			cur = &partita.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
			if err := decodeEntity(v, cur); err != nil {
				return partita.Result{}, fmt.Errorf("decode entity %q/%q: %w", e.PartitionKey, e.RowKey, err)
			}
		}
	}
	switch op.Kind {
	case partita.OpInsert:
		if cur != nil {
			return partita.Result{}, partita.NewError(partita.CodeEntityAlreadyExists, partita.MsgEntityAlreadyExists)
		}
	case partita.OpReplace, partita.OpMerge, partita.OpDelete:
		if cur == nil {
			return partita.Result{}, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		if op.If.Kind == partita.IfETag && op.If.Ticks != cur.Timestamp {
			return partita.Result{}, partita.NewError(partita.CodeUpdateConditionNotSatisfied, partita.MsgUpdateCondition)
		}
	}
	if op.Kind == partita.OpDelete {
		if err := tx.Delete(key); err != nil {
			return partita.Result{}, fmt.Errorf("delete entity: %w", err)
		}
		return partita.Result{}, nil
	}
	stored := e
	if (op.Kind == partita.OpMerge || op.Kind == partita.OpInsertOrMerge) && cur != nil {
		cur.Merge(e.Properties)
		if err := cur.Validate(); err != nil {
			return partita.Result{}, err
		}
		stored = cur
	}
	var after int64
	if cur != nil {
		after = cur.Timestamp
	}
	stored.Timestamp = s.tick(after)
	e.Timestamp = stored.Timestamp
	val := appendEntity(make([]byte, 0, 64+16*len(stored.Properties)), stored)
	if err := tx.Set(key, val); err != nil {
		return partita.Result{}, fmt.Errorf("write entity: %w", err)
	}
	return partita.Result{Timestamp: stored.Timestamp}, nil
}
