// Package tablestore implements partita.Store on an ordered kv.DB: the
// catalog of tables, entity reads and writes with ETag preconditions,
// entity group transactions, and queries planned into key ranges.
//
// It is the one place that turns storage conditions into domain
// conditions (a missing key is ResourceNotFound, a missing table is
// TableNotFound); it never speaks HTTP.
package tablestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// ScanTimeBudget is how long one query page may examine entities before
	// it returns what it has with a continuation (the service's 5-second
	// rule). Default 5s.
	ScanTimeBudget time.Duration
	// MaxExamined caps the entities one query page examines. Default 1<<20.
	MaxExamined int
	// Logger receives background errors (purges). Default slog.Default().
	Logger *slog.Logger
	// Now is the clock, for tests. Default time.Now.
	Now func() time.Time
}

// Store is a partita.Store on a kv.DB.
type Store struct {
	db   kv.DB
	opts Options

	mu      sync.RWMutex      // guards tables and nextID
	tables  map[string]*table // account + "\x00" + lowercase name
	nextID  uint64
	purging sync.WaitGroup

	lastTick atomic.Int64 // the last Timestamp handed out
	seed     maphash.Seed
	stripes  [256]sync.Mutex // partition locks, by hash of (table id, PK)
}

var _ partita.Store = (*Store)(nil)

// table is the in-memory catalog entry of a table.
type table struct {
	id      uint64
	account string
	name    string // as created
	// mu is held shared by entity operations and exclusively by
	// DeleteTable, so no write lands in a table after it is dropped.
	mu       sync.RWMutex
	deleting bool // guarded by Store.mu
	dropped  bool // guarded by mu
}

const (
	stateActive   = 0
	stateDeleting = 1
)

// Open loads the catalog from db and resumes unfinished purges.
func Open(ctx context.Context, db kv.DB, o Options) (*Store, error) {
	if o.ScanTimeBudget <= 0 {
		o.ScanTimeBudget = 5 * time.Second
	}
	if o.MaxExamined <= 0 {
		o.MaxExamined = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Store{db: db, opts: o, tables: map[string]*table{}, nextID: 1, seed: maphash.MakeSeed()}
	var pending []*table
	err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte{nsCatalog}, UpperBound: []byte{nsCatalog + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()[1:]
			i := strings.IndexByte(string(k), 0)
			if i < 0 {
				return fmt.Errorf("tablestore: malformed catalog key %q", it.Key())
			}
			t, state, err := decodeTableRecord(it.Value())
			if err != nil {
				return err
			}
			t.account = string(k[:i])
			s.tables[t.account+"\x00"+strings.ToLower(t.name)] = t
			if t.id >= s.nextID {
				s.nextID = t.id + 1
			}
			if state == stateDeleting {
				t.deleting = true
				t.dropped = true
				pending = append(pending, t)
			}
		}
		return it.Error()
	})
	if err != nil {
		return nil, fmt.Errorf("tablestore: load catalog: %w", err)
	}
	for _, t := range pending {
		s.startPurge(t)
	}
	return s, nil
}

// Close waits for background purges. It does not close the kv.DB.
func (s *Store) Close() error {
	s.purging.Wait()
	return nil
}

func encodeTableRecord(t *table, state byte) []byte {
	b := []byte{1, state}
	b = binary.BigEndian.AppendUint64(b, t.id)
	return append(b, t.name...)
}

func decodeTableRecord(b []byte) (*table, byte, error) {
	if len(b) < 10 || b[0] != 1 {
		return nil, 0, fmt.Errorf("tablestore: malformed table record")
	}
	return &table{id: binary.BigEndian.Uint64(b[2:10]), name: string(b[10:])}, b[1], nil
}

// tick returns a fresh Timestamp, strictly greater than every one handed
// out before, so two writes never share an ETag even within one clock tick.
func (s *Store) tick() int64 {
	now := edm.TicksFromTime(s.opts.Now())
	for {
		last := s.lastTick.Load()
		t := max(now, last+1)
		if s.lastTick.CompareAndSwap(last, t) {
			return t
		}
	}
}

// ValidateTableName checks a table name for Create Table.
func ValidateTableName(name string) error {
	if strings.EqualFold(name, "tables") {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	if name == "" {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if !letter && !(digit && i > 0) {
			return partita.NewError(partita.CodeInvalidResourceName, partita.MsgInvalidResourceName)
		}
	}
	if len(name) < 3 || len(name) > 63 {
		return partita.NewError(partita.CodeOutOfRangeInput, partita.MsgResourceNameLength)
	}
	return nil
}

func catalogName(account, name string) string { return account + "\x00" + strings.ToLower(name) }

// CreateTable implements partita.Store.
func (s *Store) CreateTable(ctx context.Context, account, name string) (partita.Table, error) {
	if err := ValidateTableName(name); err != nil {
		return partita.Table{}, err
	}
	cn := catalogName(account, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tables[cn]; ok {
		if t.deleting {
			return partita.Table{}, partita.NewError(partita.CodeTableBeingDeleted, partita.MsgTableBeingDeleted)
		}
		return partita.Table{}, partita.NewError(partita.CodeTableAlreadyExists, partita.MsgTableAlreadyExists)
	}
	t := &table{id: s.nextID, account: account, name: name}
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		return tx.Set(catalogKey(account, strings.ToLower(name)), encodeTableRecord(t, stateActive))
	})
	if err != nil {
		return partita.Table{}, fmt.Errorf("create table %q: %w", name, err)
	}
	s.nextID++
	s.tables[cn] = t
	return partita.Table{Account: account, Name: name}, nil
}

// DeleteTable implements partita.Store. It returns once the table is
// dropped from the catalog; entities are purged in the background, and
// until that finishes the name answers TableBeingDeleted to CreateTable.
func (s *Store) DeleteTable(ctx context.Context, account, name string) error {
	cn := catalogName(account, name)
	s.mu.Lock()
	t, ok := s.tables[cn]
	if !ok || t.deleting {
		s.mu.Unlock()
		return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
	}
	t.deleting = true
	s.mu.Unlock()

	// Wait for in-flight entity operations, then mark the table dropped.
	t.mu.Lock()
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		return tx.Set(catalogKey(account, strings.ToLower(t.name)), encodeTableRecord(t, stateDeleting))
	})
	if err == nil {
		t.dropped = true
	}
	t.mu.Unlock()
	if err != nil {
		s.mu.Lock()
		t.deleting = false
		s.mu.Unlock()
		return fmt.Errorf("delete table %q: %w", name, err)
	}
	s.startPurge(t)
	return nil
}

func (s *Store) startPurge(t *table) {
	s.purging.Add(1)
	go func() {
		defer s.purging.Done()
		ctx := context.Background()
		err := s.db.DeleteRange(ctx, tablePrefix(t.id), tablePrefix(t.id+1))
		if err == nil {
			err = s.db.Update(ctx, func(tx kv.Txn) error {
				return tx.Delete(catalogKey(t.account, strings.ToLower(t.name)))
			})
		}
		if err != nil {
			if !errors.Is(err, kv.ErrClosed) {
				s.opts.Logger.Error("purge dropped table", "table", t.name, "err", err)
			}
			return // retried at the next start
		}
		s.mu.Lock()
		if cur, ok := s.tables[catalogName(t.account, t.name)]; ok && cur == t {
			delete(s.tables, catalogName(t.account, t.name))
		}
		s.mu.Unlock()
	}()
}

// GetTable implements partita.Store.
func (s *Store) GetTable(ctx context.Context, account, name string) (partita.Table, error) {
	s.mu.RLock()
	t, ok := s.tables[catalogName(account, name)]
	s.mu.RUnlock()
	if !ok || t.deleting {
		return partita.Table{}, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
	}
	return partita.Table{Account: account, Name: t.name}, nil
}

// QueryTables implements partita.Store. Tables come in order of their
// lowercased names.
func (s *Store) QueryTables(ctx context.Context, account string, q partita.TableQuery) (partita.TablePage, error) {
	top := q.Top
	if top <= 0 || top > partita.MaxPageSize {
		top = partita.MaxPageSize
	}
	s.mu.RLock()
	var names []string
	for _, t := range s.tables {
		if t.account == account && !t.deleting {
			names = append(names, t.name)
		}
	}
	s.mu.RUnlock()
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	var page partita.TablePage
	next := strings.ToLower(q.NextTableName)
	for _, n := range names {
		if strings.ToLower(n) < next {
			continue
		}
		if q.Filter != nil && !evalTable(q.Filter, n) {
			continue
		}
		if len(page.Tables) == top {
			page.NextTableName = n
			break
		}
		page.Tables = append(page.Tables, partita.Table{Account: account, Name: n})
	}
	return page, nil
}

// lookup returns the live table and holds its lock shared; call
// t.mu.RUnlock when done.
func (s *Store) lookup(account, name string) (*table, error) {
	s.mu.RLock()
	t, ok := s.tables[catalogName(account, name)]
	s.mu.RUnlock()
	if ok {
		t.mu.RLock()
		if !t.dropped {
			return t, nil
		}
		t.mu.RUnlock()
	}
	return nil, partita.NewError(partita.CodeTableNotFound, partita.MsgTableNotFound)
}

// stripe returns the lock of a partition.
func (s *Store) stripe(id uint64, pk string) *sync.Mutex {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	h.Write(b[:])
	h.WriteString(pk)
	return &s.stripes[h.Sum64()%uint64(len(s.stripes))]
}
