package tablestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/partita/partita/internal/kv"
)

// The settings are stored under their own keys (keys.go: the ACL and
// properties namespaces), their values opaque here.

// GetTableACL implements partita.Store.
func (s *Store) GetTableACL(ctx context.Context, account, table string) ([]byte, error) {
	var out []byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		t, err := s.table(r, account, table)
		if err != nil {
			return err
		}
		v, err := r.Get(aclKey(t.id))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read acl: %w", err)
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetTableACL implements partita.Store.
func (s *Store) SetTableACL(ctx context.Context, account, table string, acl []byte) error {
	l := s.readLockTable(account, table)
	defer l.readUnlock()
	return s.db.Update(ctx, func(tx kv.Txn) error {
		t, err := s.table(tx, account, table)
		if err != nil {
			return err
		}
		if len(acl) == 0 {
			return tx.Delete(aclKey(t.id))
		}
		return tx.Set(aclKey(t.id), acl)
	})
}

// GetServiceProperties implements partita.Store.
func (s *Store) GetServiceProperties(ctx context.Context, account string) ([]byte, error) {
	var out []byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(propertiesKey(account))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read service properties: %w", err)
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetServiceProperties implements partita.Store.
func (s *Store) SetServiceProperties(ctx context.Context, account string, props []byte) error {
	return s.db.Update(ctx, func(tx kv.Txn) error { return tx.Set(propertiesKey(account), props) })
}
