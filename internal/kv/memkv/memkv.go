// Package memkv is an in-memory kv.DB for tests and `--store mem`. It keeps
// keys in a sorted slice guarded by one lock; it is simple, not fast.
package memkv

import (
	"bytes"
	"context"
	"sort"
	"sync"

	"github.com/partita/partita/internal/kv"
)

// DB is an in-memory kv.DB.
type DB struct {
	mu     sync.RWMutex
	keys   [][]byte // sorted
	vals   map[string][]byte
	closed bool
}

var (
	_ kv.DB          = (*DB)(nil)
	_ kv.CondWriter  = (*DB)(nil)
	_ kv.MultiGetter = reader{}
)

// New returns an empty store.
func New() *DB { return &DB{vals: map[string][]byte{}} }

func (db *DB) View(ctx context.Context, fn func(kv.Reader) error) error {
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return kv.ErrClosed
	}
	return fn(reader{db})
}

func (db *DB) Update(ctx context.Context, fn func(kv.Txn) error) (err error) {
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return kv.ErrClosed
	}
	t := &txn{db: db, writes: map[string]*[]byte{}}
	if err := fn(t); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return kv.ErrClosed
	}
	for k, v := range t.writes {
		if v == nil {
			db.del([]byte(k))
		} else {
			db.set([]byte(k), *v)
		}
	}
	return nil
}

func (db *DB) DeleteRange(ctx context.Context, start, end []byte) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return kv.ErrClosed
	}
	i := sort.Search(len(db.keys), func(i int) bool { return bytes.Compare(db.keys[i], start) >= 0 })
	j := i
	for j < len(db.keys) && bytes.Compare(db.keys[j], end) < 0 {
		delete(db.vals, string(db.keys[j]))
		j++
	}
	db.keys = append(db.keys[:i], db.keys[j:]...)
	return nil
}

// CondWrite implements kv.CondWriter: the checks and the write happen
// under the store's lock, so they are one step with respect to every
// commit, GuardKey's included. It lets the shared-store paths of tablestore
// run (and be tested) without PostgreSQL.
func (db *DB) CondWrite(ctx context.Context, w kv.CondWrite) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return false, kv.ErrClosed
	}
	if g, ok := db.vals[string(w.GuardKey)]; !ok || !bytes.Equal(g, w.GuardValue) {
		return false, nil
	}
	cur, exists := db.vals[string(w.Key)]
	switch {
	case w.Absent:
		if exists || w.Value == nil {
			return false, nil
		}
	case !exists, !bytes.HasPrefix(cur, w.Prefix):
		return false, nil
	}
	if w.Value == nil {
		db.del(w.Key)
	} else {
		db.set(w.Key, w.Value)
	}
	return true, nil
}

func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.closed = true
	return nil
}

func (db *DB) set(k, v []byte) {
	if _, ok := db.vals[string(k)]; !ok {
		i := sort.Search(len(db.keys), func(i int) bool { return bytes.Compare(db.keys[i], k) >= 0 })
		db.keys = append(db.keys, nil)
		copy(db.keys[i+1:], db.keys[i:])
		db.keys[i] = bytes.Clone(k)
	}
	db.vals[string(k)] = bytes.Clone(v)
}

func (db *DB) del(k []byte) {
	if _, ok := db.vals[string(k)]; !ok {
		return
	}
	delete(db.vals, string(k))
	i := sort.Search(len(db.keys), func(i int) bool { return bytes.Compare(db.keys[i], k) >= 0 })
	db.keys = append(db.keys[:i], db.keys[i+1:]...)
}

type reader struct{ db *DB }

func (r reader) Get(key []byte) ([]byte, error) {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	v, ok := r.db.vals[string(key)]
	if !ok {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// GetMany implements kv.MultiGetter: every value from one consistent
// state; nil for an absent key.
func (r reader) GetMany(keys [][]byte) ([][]byte, error) {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := r.db.vals[string(k)]; ok {
			vals[i] = append([]byte{}, v...) // present, even when empty
		}
	}
	return vals, nil
}

// NewIter snapshots the keys in range: an iterator sees one consistent state.
func (r reader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	r.db.mu.RLock()
	defer r.db.mu.RUnlock()
	lo := 0
	if o.LowerBound != nil {
		lo = sort.Search(len(r.db.keys), func(i int) bool { return bytes.Compare(r.db.keys[i], o.LowerBound) >= 0 })
	}
	hi := len(r.db.keys)
	if o.UpperBound != nil {
		hi = sort.Search(len(r.db.keys), func(i int) bool { return bytes.Compare(r.db.keys[i], o.UpperBound) >= 0 })
	}
	it := &iter{pos: -1}
	for i := lo; i < hi; i++ {
		it.keys = append(it.keys, r.db.keys[i])
		it.vals = append(it.vals, r.db.vals[string(r.db.keys[i])])
	}
	return it, nil
}

type iter struct {
	keys, vals [][]byte
	pos        int
}

func (it *iter) First() bool { it.pos = 0; return it.Valid() }
func (it *iter) SeekGE(k []byte) bool {
	it.pos = sort.Search(len(it.keys), func(i int) bool { return bytes.Compare(it.keys[i], k) >= 0 })
	return it.Valid()
}
func (it *iter) Last() bool    { it.pos = len(it.keys) - 1; return it.Valid() }
func (it *iter) Next() bool    { it.pos++; return it.Valid() }
func (it *iter) Valid() bool   { return it.pos >= 0 && it.pos < len(it.keys) }
func (it *iter) Key() []byte   { return it.keys[it.pos] }
func (it *iter) Value() []byte { return it.vals[it.pos] }
func (it *iter) Error() error  { return nil }
func (it *iter) Close() error  { return nil }

// txn buffers writes; reads see them first.
type txn struct {
	db     *DB
	writes map[string]*[]byte // nil = delete
}

func (t *txn) Get(key []byte) ([]byte, error) {
	if v, ok := t.writes[string(key)]; ok {
		if v == nil {
			return nil, kv.ErrNotFound
		}
		return *v, nil
	}
	return reader{t.db}.Get(key)
}

// NewIter merges the buffered writes over the committed keys.
func (t *txn) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	base, _ := reader{t.db}.NewIter(o)
	bi := base.(*iter)
	m := map[string][]byte{}
	for i, k := range bi.keys {
		m[string(k)] = bi.vals[i]
	}
	for k, v := range t.writes {
		kb := []byte(k)
		if (o.LowerBound != nil && bytes.Compare(kb, o.LowerBound) < 0) || (o.UpperBound != nil && bytes.Compare(kb, o.UpperBound) >= 0) {
			continue
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = *v
		}
	}
	it := &iter{pos: -1}
	for k := range m {
		it.keys = append(it.keys, []byte(k))
	}
	sort.Slice(it.keys, func(i, j int) bool { return bytes.Compare(it.keys[i], it.keys[j]) < 0 })
	for _, k := range it.keys {
		it.vals = append(it.vals, m[string(k)])
	}
	return it, nil
}

func (t *txn) Set(key, value []byte) error {
	v := bytes.Clone(value)
	t.writes[string(key)] = &v
	return nil
}

func (t *txn) Delete(key []byte) error {
	t.writes[string(key)] = nil
	return nil
}
