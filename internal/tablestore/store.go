// Package tablestore implements partita.Store on an ordered kv.DB: the
// catalog of tables, entity reads and writes with ETag preconditions,
// entity group transactions, and queries planned into key ranges.
//
// It is the one place that turns storage conditions into domain
// conditions (a missing key is ResourceNotFound, a missing table is
// TableNotFound); it never speaks HTTP.
package tablestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita"
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
	// Shared says other processes write the same kv.DB (several front
	// ends over one database). The catalog is then read from the store on
	// every request instead of being cached, and the engine's
	// transactions, not this process's locks, keep writers apart.
	Shared bool
	// Logger receives background errors (purges). Default slog.Default().
	Logger *slog.Logger
	// Now is the clock, for tests. Default time.Now.
	Now func() time.Time
	// RowCacheBytes bounds the cache of recently read entities' stored
	// values (rowcache.go); 0 or less, or Shared, means none.
	RowCacheBytes int64
	// PurgeRetry is the first wait before a failed purge of a dropped
	// table is tried again; the wait doubles up to a minute. Default 1s.
	PurgeRetry time.Duration
}

// Store is a partita.Store on a kv.DB.
type Store struct {
	db   kv.DB
	opts Options

	createMu sync.Mutex  // serializes this process's catalog changes
	locks    *tableLocks // per table name, only while in use: shared by entity ops, exclusive by DeleteTable
	// cache and hints hold only tables found to exist, and lose an entry
	// when its table is dropped (or, for hints, found missing), so their
	// size follows the live tables, never the names clients ask for.
	cache sync.Map // catalog name → *tableRecord (only when !Shared)
	hints sync.Map // catalog name → last *tableRecord read (Shared): one-round-trip point reads and conditional writes
	// nHints counts hints. Tables that other front ends drop stay hinted
	// here until a request names them again, so past maxHints the hints
	// are forgotten wholesale (they are only a shortcut).
	nHints  atomic.Int64
	purging sync.WaitGroup
	// purgeCtx is cancelled by Close: purges stop retrying, and one stuck
	// in the database (rows locked by another session) does not hold
	// Close up. purgeSlots bounds the purges running at once, so that
	// stuck ones cannot take every connection of a shared store's pool.
	purgeCtx    context.Context
	purgeCancel context.CancelFunc
	purgeSlots  chan struct{}
	// purgeIDs holds the ids of the dropped tables this process is
	// purging, so that a dropped table found again (CreateTable or
	// DeleteTable reading it) is not purged twice at once here. Its size
	// is the purges' goroutines'.
	purgeMu  sync.Mutex
	purgeIDs map[uint64]struct{}

	rows   *rowCache   // nil when off or Shared
	bounds *partBounds // nil when Shared (bounds.go)

	lastTick atomic.Int64 // the last Timestamp handed out
	// ceiling bounds the Timestamps this process may hand out: the value
	// last written at ceilingKey (ticks.go). MaxInt64 on a shared store.
	ceiling atomic.Int64
	ceilMu  sync.Mutex  // raises of ceiling, one at a time
	raising atomic.Bool // a raise runs in the background
	seed    maphash.Seed
	// Write locks. A single-entity write holds its partition's lock shared
	// and its key's lock exclusively, so writes of different entities run
	// (and sync) together even in one partition; a batch holds its
	// partition's lock exclusively. Both are striped by hash.
	partLocks [256]sync.RWMutex
	keyLocks  [1024]sync.Mutex
}

var _ partita.Store = (*Store)(nil)

// tableRecord is a catalog entry (its encoding: keys.go).
type tableRecord struct {
	id      uint64
	account string
	name    string // as created
	state   byte
	raw     []byte // the encoded record as read (set by readTable)
}

const (
	stateActive   = 0
	stateDeleting = 1
)

// Open opens a Store on db and resumes unfinished purges.
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
	if o.PurgeRetry <= 0 {
		o.PurgeRetry = time.Second
	}
	s := &Store{db: guard{db}, opts: o, seed: maphash.MakeSeed(), locks: newTableLocks(), purgeSlots: make(chan struct{}, maxPurges), purgeIDs: map[uint64]struct{}{}}
	s.purgeCtx, s.purgeCancel = context.WithCancel(context.Background())
	if !o.Shared {
		s.rows = newRowCache(o.RowCacheBytes)
		s.bounds = newPartBounds(ctx, s.db)
	}
	if err := s.loadCeiling(ctx); err != nil {
		s.purgeCancel()
		return nil, err
	}
	var pending []*tableRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte{nsCatalog}, UpperBound: []byte{nsCatalog + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			t, err := decodeCatalogEntry(it.Key(), it.Value())
			if err != nil {
				return err
			}
			if t.state == stateDeleting {
				pending = append(pending, t)
			}
		}
		return it.Error()
	})
	if err != nil {
		s.purgeCancel()
		return nil, fmt.Errorf("tablestore: load catalog: %w", err)
	}
	for _, t := range pending {
		s.startPurge(t)
	}
	return s, nil
}

// Close waits for background purges (a purge waiting to retry stops; the
// next Open resumes it). It does not close the kv.DB.
func (s *Store) Close() error {
	s.purgeCancel()
	s.purging.Wait()
	return nil
}

func encodeTableRecord(t *tableRecord) []byte {
	b := []byte{1, t.state}
	b = binary.BigEndian.AppendUint64(b, t.id)
	return append(b, t.name...)
}

func decodeCatalogEntry(k, v []byte) (*tableRecord, error) {
	if len(k) < 2 || k[0] != nsCatalog {
		return nil, fmt.Errorf("tablestore: malformed catalog key %q", k)
	}
	i := bytes.IndexByte(k[1:], 0)
	if i < 0 || len(v) < 10 || v[0] != 1 {
		return nil, fmt.Errorf("tablestore: malformed catalog entry %q", k)
	}
	return &tableRecord{account: string(k[1 : 1+i]), state: v[1], id: binary.BigEndian.Uint64(v[2:10]), name: string(v[10:])}, nil
}

// readTable reads a catalog entry; nil when there is none.
func readTable(r kv.Reader, account, name string) (*tableRecord, error) {
	k := catalogKey(account, name)
	v, err := r.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	return decodeTable(k, v)
}

// readTableInSnapshot is readTable through an iterator instead of a point
// read: an engine's View takes its snapshot at its first iterator (pgkv),
// so the record and the scans that follow it read one snapshot.
func readTableInSnapshot(r kv.Reader, account, name string) (*tableRecord, error) {
	k := catalogKey(account, name)
	it, err := r.NewIter(kv.IterOptions{LowerBound: k, UpperBound: append(bytes.Clone(k), 0)})
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("read catalog: %w", err)
		}
		return nil, nil
	}
	return decodeTable(k, it.Value())
}

// decodeTable decodes the catalog record v of key k, keeping a copy of v.
func decodeTable(k, v []byte) (*tableRecord, error) {
	t, err := decodeCatalogEntry(k, v)
	if t != nil {
		t.raw = bytes.Clone(v)
	}
	return t, err
}

// table returns the live table record, from the cache when the store is
// not shared. The returned record must not be modified.
func (s *Store) table(r kv.Reader, account, name string) (*tableRecord, error) {
	return s.liveTable(r, account, name, readTable)
}

// liveTable is table, reading the record with read when it is not cached.
func (s *Store) liveTable(r kv.Reader, account, name string, read func(kv.Reader, string, string) (*tableRecord, error)) (*tableRecord, error) {
	cn := catalogName(account, name)
	if !s.opts.Shared {
		if t, ok := s.cache.Load(cn); ok {
			return t.(*tableRecord), nil
		}
	}
	t, err := read(r, account, name)
	if err != nil {
		return nil, err
	}
	if t == nil || t.state != stateActive {
		if s.opts.Shared {
			s.forgetHint(cn) // dropped by another front end
		}
		return nil, partita.NewError(partita.CodeTableNotFound, partita.MsgTableNotFound)
	}
	if !s.opts.Shared {
		s.cache.Store(cn, t)
	}
	return t, nil
}

// readLockTable takes this process's lock of a table name shared; release
// it with readUnlock.
func (s *Store) readLockTable(account, name string) *tableLock {
	l := s.locks.acquire(catalogName(account, name))
	l.RLock()
	return l
}

// lockTable takes this process's lock of a table name exclusively; release
// it with unlock.
func (s *Store) lockTable(account, name string) *tableLock {
	l := s.locks.acquire(catalogName(account, name))
	l.Lock()
	return l
}

// ValidateTableName checks a table name for Create Table.
func ValidateTableName(name string) error {
	if partita.SameTable(name, "tables") {
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

func catalogName(account, name string) string { return account + "\x00" + partita.FoldTableName(name) }

// CreateTable implements partita.Store.
func (s *Store) CreateTable(ctx context.Context, account, name string) (partita.Table, error) {
	if err := ValidateTableName(name); err != nil {
		return partita.Table{}, err
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	var dropped *tableRecord
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		dropped = nil
		cur, err := readTable(tx, account, name)
		if err != nil {
			return err
		}
		if cur != nil {
			if cur.state == stateDeleting {
				dropped = cur
				return partita.NewError(partita.CodeTableBeingDeleted, partita.MsgTableBeingDeleted)
			}
			return partita.NewError(partita.CodeTableAlreadyExists, partita.MsgTableAlreadyExists)
		}
		id := uint64(1)
		v, err := tx.Get(nextIDKey)
		switch {
		case err == nil:
			id, _ = binary.Uvarint(v)
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		if err := tx.Set(nextIDKey, binary.AppendUvarint(nil, id+1)); err != nil {
			return err
		}
		return tx.Set(catalogKey(account, name), encodeTableRecord(&tableRecord{id: id, name: name}))
	})
	if dropped != nil {
		// A drop whose purge no process here runs: its DeleteTable's
		// answer was lost (on a shared store the drop may have applied
		// while the client was told 500 OperationTimedOut, and no purge
		// was started), or the front end that dropped it stopped. Without
		// this the name answered TableBeingDeleted until some front end
		// restarted.
		s.startPurge(dropped)
	}
	if err != nil {
		return partita.Table{}, err
	}
	return partita.Table{Account: account, Name: name}, nil
}

// DeleteTable implements partita.Store. It returns once the table is
// marked dropped in the catalog; its entities are purged in the
// background, and until that finishes the name answers TableBeingDeleted
// to CreateTable.
func (s *Store) DeleteTable(ctx context.Context, account, name string) error {
	// Wait for this process's in-flight entity operations on the table.
	l := s.lockTable(account, name)
	defer l.unlock()
	var dropped, already *tableRecord
	err := s.db.Update(ctx, func(tx kv.Txn) error {
		dropped, already = nil, nil
		t, err := readTable(tx, account, name)
		if err != nil {
			return err
		}
		if t != nil && t.state == stateDeleting {
			already = t // a drop retried: see that it is purged (CreateTable)
		}
		if t == nil || t.state != stateActive {
			return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		d := *t
		d.state = stateDeleting
		dropped = &d
		return tx.Set(catalogKey(account, name), encodeTableRecord(&d))
	})
	s.cache.Delete(catalogName(account, name))
	s.forgetHint(catalogName(account, name))
	if already != nil {
		s.startPurge(already)
	}
	if err != nil {
		return err
	}
	s.startPurge(dropped)
	return nil
}

// startPurge removes a dropped table's rows, ACL and catalog entry in the
// background. A failure (the database restarting, a connection killed) is
// tried again after a wait that doubles from PurgeRetry to a minute: until
// the purge is done the name answers TableBeingDeleted, so one failure must
// not keep it until the next start.
//
// At most maxPurges run at once, and an attempt that takes longer than
// purgeTimeout is given up and tried again: on a shared store a purge
// blocked by rows another session holds locked kept its connection for as
// long, and enough of them took the whole pool, so that requests for other
// tables timed out. purgeTimeout is far longer than any purge chunk takes
// when nothing blocks it (5,000 rows a statement).
//
// A table this process purges already is not purged twice here.
func (s *Store) startPurge(t *tableRecord) {
	s.purgeMu.Lock()
	if _, ok := s.purgeIDs[t.id]; ok || s.purgeCtx.Err() != nil {
		s.purgeMu.Unlock()
		return
	}
	s.purgeIDs[t.id] = struct{}{}
	s.purgeMu.Unlock()
	s.purging.Add(1)
	go func() {
		defer s.purging.Done()
		defer func() {
			s.purgeMu.Lock()
			delete(s.purgeIDs, t.id)
			s.purgeMu.Unlock()
		}()
		wait := s.opts.PurgeRetry
		for {
			err := s.purgeAttempt(t)
			if err == nil || errors.Is(err, kv.ErrClosed) || s.purgeCtx.Err() != nil {
				return // done, or resumed at the next start
			}
			pause := wait
			if errors.Is(err, context.DeadlineExceeded) {
				// The attempt's time is up, not a failure: a large table
				// is purged a slice at a time (every chunk deleted stays
				// deleted), giving other dropped tables their turn.
				s.opts.Logger.Info("purge of a dropped table continues", "table", t.name, "after", purgeTimeout)
				pause, wait = s.opts.PurgeRetry, s.opts.PurgeRetry
			} else {
				s.opts.Logger.Error("purge dropped table", "table", t.name, "err", err, "retry_in", wait)
				wait = min(2*wait, time.Minute)
			}
			select {
			case <-s.purgeCtx.Done():
				return // resumed at the next start
			case <-time.After(pause):
			}
		}
	}()
}

// maxPurges bounds the dropped tables purged at once; purgeTimeout bounds
// one attempt. A var for tests.
var (
	maxPurges    = 2
	purgeTimeout = time.Minute
)

// purgeAttempt takes a purge slot and makes one attempt within
// purgeTimeout.
func (s *Store) purgeAttempt(t *tableRecord) error {
	select {
	case s.purgeSlots <- struct{}{}:
	case <-s.purgeCtx.Done():
		return s.purgeCtx.Err()
	}
	defer func() { <-s.purgeSlots }()
	ctx, cancel := context.WithTimeout(s.purgeCtx, purgeTimeout)
	defer cancel()
	return s.purge(ctx, t)
}

func (s *Store) purge(ctx context.Context, t *tableRecord) error {
	// Only a table the catalog holds as dropped, under this id: rows are
	// never removed for a table whose drop did not apply (a purge started
	// on a record read before its drop committed, or the table purged and
	// its name re-created meanwhile).
	var cur *tableRecord
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		cur, err = readTable(r, t.account, t.name)
		return err
	})
	if err != nil {
		return err
	}
	if cur == nil || cur.id != t.id || cur.state != stateDeleting {
		return nil
	}
	err = s.db.DeleteRange(ctx, tablePrefix(t.id), tablePrefix(t.id+1))
	if err == nil {
		err = s.db.Update(ctx, func(tx kv.Txn) error { return tx.Delete(aclKey(t.id)) })
	}
	if err == nil {
		err = s.db.Update(ctx, func(tx kv.Txn) error {
			cur, err := readTable(tx, t.account, t.name)
			if err != nil || cur == nil || cur.id != t.id {
				return err // re-created or already purged by another front end
			}
			return tx.Delete(catalogKey(t.account, t.name))
		})
	}
	return err
}

// GetTable implements partita.Store.
func (s *Store) GetTable(ctx context.Context, account, name string) (partita.Table, error) {
	var out partita.Table
	err := s.db.View(ctx, func(r kv.Reader) error {
		t, err := readTable(r, account, name)
		if err != nil {
			return err
		}
		if t == nil || t.state != stateActive {
			return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		out = partita.Table{Account: account, Name: t.name}
		return nil
	})
	return out, err
}

// QueryTables implements partita.Store. Tables come in order of their
// lowercased names.
func (s *Store) QueryTables(ctx context.Context, account string, q partita.TableQuery) (partita.TablePage, error) {
	top := q.Top
	if top <= 0 || top > partita.MaxPageSize {
		top = partita.MaxPageSize
	}
	var page partita.TablePage
	prefix := catalogPrefix(account)
	lo := append(bytes.Clone(prefix), partita.FoldTableName(q.NextTableName)...)
	hi := append(bytes.Clone(prefix[:len(prefix)-1]), 0x01)
	err := s.db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			t, err := decodeCatalogEntry(it.Key(), it.Value())
			if err != nil {
				return err
			}
			if t.state != stateActive || (q.Filter != nil && !evalTable(q.Filter, t.name)) {
				continue
			}
			if len(page.Tables) == top {
				page.NextTableName = t.name
				return nil
			}
			page.Tables = append(page.Tables, partita.Table{Account: account, Name: t.name})
		}
		return it.Error()
	})
	return page, err
}

// partLock returns the lock of a partition.
func (s *Store) partLock(account, table, pk string) *sync.RWMutex {
	var h maphash.Hash
	s.partHash(&h, account, table, pk)
	return &s.partLocks[h.Sum64()%uint64(len(s.partLocks))]
}

// keyLock returns the lock of one entity.
func (s *Store) keyLock(account, table, pk, rk string) *sync.Mutex {
	var h maphash.Hash
	s.partHash(&h, account, table, pk)
	h.WriteByte(0)
	h.WriteString(rk)
	return &s.keyLocks[h.Sum64()%uint64(len(s.keyLocks))]
}

// partHash writes a partition's identity into h (the caller's, so that it
// stays on the stack).
func (s *Store) partHash(h *maphash.Hash, account, table, pk string) {
	h.SetSeed(s.seed)
	h.WriteString(account)
	h.WriteByte(0)
	for i := 0; i < len(table); i++ {
		c := table[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		h.WriteByte(c)
	}
	h.WriteByte(0)
	h.WriteString(pk)
}
