// Package kv defines the ordered key-value contract that partita's storage
// engines implement. Keys are compared bytewise. Engines must not interpret
// keys or values: they know nothing about tables, entities or Azure.
package kv

import (
	"context"
	"errors"
)

var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("kv: not found")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("kv: closed")
	// ErrUnavailable is wrapped by engines whose store cannot be reached
	// (a database connection lost); the request may succeed if retried.
	ErrUnavailable = errors.New("kv: store unavailable")
	// ErrOutcomeUnknown is wrapped by engines when a write's commit was
	// sent and its answer lost (the connection to the database failed
	// after the commit left, or the database said it cannot tell): the
	// write may or may not have been applied, and a blind retry may apply
	// it twice. It is not ErrUnavailable, which says the write was not
	// taken.
	ErrOutcomeUnknown = errors.New("kv: outcome of the write unknown")
	// ErrKeyTooLarge is wrapped by engines that cannot store a key this
	// long (PostgreSQL's btree indexes take at most ~2,700 bytes a row).
	ErrKeyTooLarge = errors.New("kv: key too large for this engine")
)

// DB is an ordered key-value store. It is safe for concurrent use.
type DB interface {
	// View runs fn with a reader of committed data. Each Get and each
	// iterator sees a consistent state of the store; separate calls may see
	// different states.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in a read-write transaction. Reads inside fn see fn's
	// own writes. If fn returns nil the writes commit atomically and are
	// durable (synced) when Update returns nil; if fn returns an error or
	// panics, nothing is written. Update does not isolate concurrent
	// transactions from each other: callers serialize transactions that
	// touch the same keys (tablestore locks per partition).
	Update(ctx context.Context, fn func(Txn) error) error
	// DeleteRange removes every key in [start, end). It need not be
	// atomic with respect to concurrent writes in the range, and need not
	// be synced: callers use it to purge ranges no one writes any more.
	DeleteRange(ctx context.Context, start, end []byte) error
	// Close releases the store. Pending Update calls finish first.
	Close() error
}

// Reader reads keys. Slices returned by Get and by an Iterator are owned by
// the engine: they are valid only until the transaction ends (Get) or the
// iterator moves (Iterator). Copy them to keep them.
type Reader interface {
	// Get returns the value of key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// NewIter returns an iterator over [o.LowerBound, o.UpperBound). It is
	// unpositioned until First or SeekGE. It must be closed.
	NewIter(o IterOptions) (Iterator, error)
}

// MultiGetter is implemented by readers that can read several keys in one
// round trip (a database engine). vals[i] is nil when keys[i] is absent.
// Callers fall back to Get when a reader does not implement it.
type MultiGetter interface {
	GetMany(keys [][]byte) (vals [][]byte, err error)
}

// CondWriter is implemented by engines that can apply one conditional
// write in a single statement (a database engine, where a transaction costs
// several round trips). CondWrite applies w atomically with its checks and
// reports whether every condition held; when one did not, nothing changed
// and the caller learns no more than that (it may retry in a transaction to
// find out which). A write must not race with a change of its guard: the
// engine makes the guard check and the write one atomic step with respect
// to any transaction that changes GuardKey.
type CondWriter interface {
	CondWrite(ctx context.Context, w CondWrite) (applied bool, err error)
}

// CondWrite is one conditional put or delete.
type CondWrite struct {
	// GuardKey must hold exactly GuardValue (a record the caller read
	// earlier, such as a table's catalog entry).
	GuardKey, GuardValue []byte
	// Key is written: set to Value, or deleted when Value is nil.
	Key   []byte
	Value []byte
	// Absent requires Key to be absent (only with a Value: an insert).
	// Otherwise Key must exist and, when Prefix is not nil, its current
	// value must begin with Prefix.
	Absent bool
	Prefix []byte
}

// Txn is a read-write transaction.
type Txn interface {
	Reader
	// Set writes key=value. The engine copies both slices.
	Set(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
}

// IterOptions bounds an iterator. A nil bound is open.
type IterOptions struct {
	LowerBound []byte // inclusive
	UpperBound []byte // exclusive
	// Rows, when above 0, is how many rows the caller expects to read,
	// as a query page of $top=n reads n and one more: an engine that
	// fetches rows in chunks need not fetch many more. Reading past it is
	// allowed (a filter on other properties reads more than it keeps).
	Rows int
}

// Iterator walks keys in ascending order within its bounds. Errors are
// sticky and reported by Error. An iterator must be closed. Key and Value
// return slices that stay valid and unchanged until the next positioning
// call (First, SeekGE, Next) or Close; callers must not modify them.
type Iterator interface {
	First() bool
	SeekGE(key []byte) bool
	Next() bool
	Valid() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// Rebounder is implemented by iterators that can move to new bounds and
// go on reading the state of the store they were made in (pebblekv's:
// a Pebble iterator reads one state, and a View takes no snapshot, so two
// iterators of one View may see different states). A query scanning
// several key ranges does so with one iterator, so that it sees every
// batch whole or not at all; pgkv's iterators need not, as the iterators
// of one of its Views read one snapshot. After SetBounds the iterator is
// unpositioned.
type Rebounder interface {
	SetBounds(lower, upper []byte)
}

// LastIterator is implemented by the iterators of engines that can
// position on the last key within the bounds (memkv and pebblekv): the
// table store learns a partition's key range with it.
type LastIterator interface {
	Last() bool
}

// Checkpointer is implemented by engines that can copy a consistent
// point-in-time image of the whole store into a directory while they go on
// serving (an online backup). Every Update that returned before Checkpoint
// was called is in the image, and no Update is in it in part. dir must not
// exist; the image is a store the same engine opens as its data directory.
// Engines that cannot (memory, a database server with its own backup
// tools) do not implement it.
type Checkpointer interface {
	Checkpoint(ctx context.Context, dir string) error
}
