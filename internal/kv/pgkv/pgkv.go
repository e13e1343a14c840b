// Package pgkv is the kv.DB engine on PostgreSQL (and PG-wire distributed
// SQL databases such as CockroachDB and YugabyteDB) through pgx.
//
// # Schema
//
//	partita_kv(k bytea PRIMARY KEY, v bytea NOT NULL)
//	partita_schema(version int PRIMARY KEY)
//
// Keys are compared bytewise by bytea's ordering, which is the order kv
// requires. Every Update is one SERIALIZABLE transaction, retried when the
// database reports a serialization failure, so transactions from any
// number of processes behave as if run one at a time.
//
// Only portable SQL is used: CREATE TABLE IF NOT EXISTS, SELECT with
// range predicates and ORDER BY on the primary key, INSERT … ON CONFLICT
// DO UPDATE / DO NOTHING, UPDATE and DELETE (the one-statement conditional
// writes of CondWrite, with an EXISTS … FOR SHARE guard and substring on
// bytea), and DELETE.
package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/partita/partita/internal/kv"
)

// SchemaVersion is the version of the schema this package writes.
const SchemaVersion = 1

// DefaultConnectTimeout bounds one connection attempt to one host when the
// DSN does not set connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// sqlstateReadOnly is read_only_sql_transaction: a write sent to a server
// that accepts only reads.
const sqlstateReadOnly = "25006"

// sqlstateProgramLimit is program_limit_exceeded: among others, an index
// row larger than the btree allows.
const sqlstateProgramLimit = "54000"

// sqlstateCompletionUnknown is statement_completion_unknown, which
// CockroachDB returns when a node failure leaves a commit's outcome
// unknown (PostgreSQL defines it and never sends it).
const sqlstateCompletionUnknown = "40003"

// Options tune the engine. The zero value is usable.
type Options struct {
	// MaxConns bounds the connection pool (default 32).
	MaxConns int32
	// MaxRetries bounds retries of a transaction after serialization
	// failures (default 50).
	MaxRetries int
	// IdleInTransaction is the idle_in_transaction_session_timeout set on
	// each connection whose role, database and DSN set none (default
	// DefaultIdleInTransaction; negative: leave the server's).
	IdleInTransaction time.Duration
}

// DefaultIdleInTransaction bounds how long a transaction of partita's may
// stay idle between its statements before PostgreSQL ends it. partita
// never waits on anything outside the database inside a transaction (a
// query's page is built in memory, the response written after the
// snapshot ends), so a transaction idle this long belongs to a front end
// that has stalled (stopped, paused, cut off from the database while its
// socket stays open): without a limit its row locks stayed held, and every
// other front end's writes to those entities timed out, for as long as
// the stall lasted (PostgreSQL's own default is no limit).
const DefaultIdleInTransaction = 10 * time.Second

// DB is a kv.DB on PostgreSQL.
type DB struct {
	pool    *pgxpool.Pool
	stmts   *stmtTracer
	retries int

	mu     sync.RWMutex
	closed bool
}

var _ kv.DB = (*DB)(nil)

// Open connects to dsn (a postgres:// URL or key=value string), creates or
// migrates the schema, and returns the store.
func Open(ctx context.Context, dsn string, o *Options) (*DB, error) {
	if o == nil {
		o = &Options{}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgkv: %w", err)
	}
	// A host that does not answer (a machine that is gone, not a process
	// that died: that refuses at once) must not hold a request longer than
	// this; with several hosts in the DSN the next one is tried. The DSN's
	// own connect_timeout wins.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	// A server that has become read-only (a fenced or demoted primary)
	// answers writes with SQLSTATE 25006. Such a connection is closed
	// rather than returned to the pool, so the next one is dialled anew
	// and, with target_session_attrs=read-write, reaches the new primary.
	onPgError := cfg.ConnConfig.OnPgError
	cfg.ConnConfig.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == sqlstateReadOnly {
			return false
		}
		return onPgError == nil || onPgError(c, e)
	}
	// The pool's size: the option, else the DSN's pool_max_conns (which
	// was overwritten before, so an operator could not size the pool to
	// the database's max_connections), else 32.
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case dsnSetsPoolSize(dsn):
	default:
		cfg.MaxConns = 32
	}
	// Every connection counts the bytes it sends, so that a commit that
	// fails can tell whether any of it left (outcome.go).
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &sentConn{Conn: c}, nil
	}
	idle := o.IdleInTransaction
	if idle == 0 {
		idle = DefaultIdleInTransaction
	}
	if idle > 0 {
		after := cfg.AfterConnect
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			if after != nil {
				if err := after(ctx, c); err != nil {
					return err
				}
			}
			limitIdleInTransaction(ctx, c, idle)
			return nil
		}
	}
	stmts := &stmtTracer{}
	cfg.ConnConfig.Tracer = stmts // statement latency, for the metrics (stat.go)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgkv: %w", err)
	}
	db := &DB{pool: pool, retries: o.MaxRetries, stmts: stmts}
	if db.retries <= 0 {
		db.retries = 50
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// limitIdleInTransaction sets idle_in_transaction_session_timeout on c
// when it has the server's built-in default: a value the operator set
// anywhere (the server's configuration, partita's role or database, the
// DSN), 0 included, stays. A server that does not know the setting (a
// PostgreSQL-compatible database) is left as it is.
func limitIdleInTransaction(ctx context.Context, c *pgx.Conn, d time.Duration) {
	// Simple queries: nothing to prepare and cache for two statements
	// run once per connection.
	simple := pgx.QueryExecModeSimpleProtocol
	var source string
	err := c.QueryRow(ctx, `SELECT source FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'`, simple).Scan(&source)
	if err != nil || source != "default" {
		return
	}
	c.Exec(ctx, `SET idle_in_transaction_session_timeout = `+strconv.FormatInt(d.Milliseconds(), 10), simple)
}

// migrate creates the schema; it is idempotent and safe to run from
// several processes at once (a lost creation race is retried). A database
// that cannot be reached is not waited for here: that is the caller's to
// decide (serve's --store-wait), and Open returns at once when ctx ends.
func (db *DB) migrate(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS partita_schema (version INT PRIMARY KEY)`,
		`CREATE TABLE IF NOT EXISTS partita_kv (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)`,
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = nil
		for _, s := range stmts {
			if _, err = db.pool.Exec(ctx, s); err != nil {
				break
			}
		}
		if err == nil || ctx.Err() != nil || errors.Is(classify(err), kv.ErrUnavailable) {
			break
		}
		t := time.NewTimer(time.Duration(attempt+1) * 50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if err != nil {
		return fmt.Errorf("pgkv: create schema: %w", classify(err))
	}
	var v int
	err = db.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM partita_schema`).Scan(&v)
	if err != nil {
		return fmt.Errorf("pgkv: read schema version: %w", classify(err))
	}
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("pgkv: schema version %d is newer than this partita (%d)", v, SchemaVersion)
	case v < SchemaVersion:
		_, err = db.pool.Exec(ctx, `INSERT INTO partita_schema (version) VALUES ($1) ON CONFLICT (version) DO NOTHING`, SchemaVersion)
		if err != nil {
			return fmt.Errorf("pgkv: record schema version: %w", classify(err))
		}
	}
	return nil
}

// classify marks connection-level failures as kv.ErrUnavailable: the
// database is down, restarting, out of connections, or unreachable.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57": // connection exception, insufficient resources, operator intervention
			return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
		}
		if pgErr.Code == sqlstateCompletionUnknown {
			// CockroachDB's ambiguous result, outside a commit (where
			// classifyCommit makes it kv.ErrOutcomeUnknown): a statement
			// of a transaction that is then rolled back, so nothing of it
			// applies. Not retried.
			return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
		}
		if pgErr.Code == sqlstateProgramLimit {
			// A key whose index entry is past the btree's limit (a third
			// of a page, ~2,700 bytes after compression): keys of up to
			// 512 UTF-16 units each, which partita accepts, can take 3 KB
			// in UTF-8 when they do not compress.
			return fmt.Errorf("%w: %v", kv.ErrKeyTooLarge, err)
		}
		switch pgErr.Code {
		case "25P03", "25P04", "55P03":
			// The server's own time limits, which an operator may set
			// for partita's role or database: idle_in_transaction_
			// session_timeout (a front end stalled inside a transaction)
			// and PostgreSQL 17's transaction_timeout end the session
			// of a transaction that had not committed; lock_timeout ends
			// a statement that waited for a row another session held,
			// and its transaction. Nothing is committed: the store is
			// busy for this request (503 ServerBusy), not broken (they
			// were 500 InternalError).
			return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
		}
		if pgErr.Code == sqlstateReadOnly {
			// Not the primary (any more): the write is refused whole, and
			// another host will take it once it is found.
			return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) {
		// Not sent at all, because the connection is unusable (a
		// connection that failed earlier is closed: "conn closed"), or
		// a statement whose answer was lost, which pgx reports as "conn
		// closed" too. A transaction's statement commits nothing, and
		// the calls that commit are classifyCommit's (a purge's chunk,
		// which may have applied, is safe to run again).
		return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %v", kv.ErrUnavailable, err)
	}
	return err
}

// classifyCtx is classify for a call made with ctx: once ctx's deadline
// has passed, the call failed because it ran out of time (pgx set the
// deadline on the connection, or never sent the statement), whatever
// error the driver reports, and the error says so with
// context.DeadlineExceeded (500 OperationTimedOut, not the 503 of an
// unreachable database). A connection whose statement was interrupted
// that way is closed by pgx (pgconn.asyncClose: a cancel request, then
// Terminate), never returned to the pool. A commit interrupted while the
// server waited for a synchronous standby may have committed on the
// primary: its outcome is unknown, as OperationTimedOut tells the client.
func classifyCtx(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		if errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	return classify(err)
}

// rollbackTimeout bounds the rollback of a failed transaction, which runs
// without the request's context (that may be done already); pgx closes
// the connection of a rollback that does not finish in time.
const rollbackTimeout = 5 * time.Second

// retryable reports a serialization failure or deadlock: the transaction
// may succeed when run again.
func retryable(err error) bool {
	if errors.Is(err, errRowGone) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}

func (db *DB) enter() error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return kv.ErrClosed
	}
	return nil
}

func (db *DB) leave() { db.mu.RUnlock() }

func (db *DB) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	r := &reader{ctx: ctx, q: db.pool, pool: db.pool}
	defer r.end()
	return fn(r)
}

func (db *DB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	var err error
	for attempt := 0; attempt <= db.retries; attempt++ {
		err = db.update(ctx, fn)
		if !retryable(err) {
			return err
		}
		time.Sleep(time.Duration(attempt%8+1) * time.Millisecond)
	}
	// The writers of the other front ends kept winning: the store is busy
	// for this write (503 ServerBusy, which clients retry), not broken.
	return fmt.Errorf("%w: pgkv: transaction kept conflicting: %v", kv.ErrUnavailable, err)
}

func (db *DB) update(ctx context.Context, fn func(kv.Txn) error) (err error) {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return fmt.Errorf("pgkv: begin: %w", classifyCtx(ctx, err))
	}
	defer func() {
		if err != nil {
			rctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
			tx.Rollback(rctx)
			cancel()
		}
	}()
	t := &txn{reader: reader{ctx: ctx, q: tx, seen: map[string]struct{}{}}, tx: tx, pending: map[string]*[]byte{}}
	if err := fn(t); err != nil {
		if t.dbErr != nil {
			return t.dbErr
		}
		return err
	}
	if err := t.flush(); err != nil {
		return err
	}
	before := bytesSent(tx.Conn())
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgkv: commit: %w", classifyCommit(ctx, err, bytesSent(tx.Conn()) != before))
	}
	return nil
}

var _ kv.CondWriter = (*DB)(nil)

// CondWrite implements kv.CondWriter with one statement (an INSERT, UPDATE
// or DELETE whose WHERE carries every condition), so a conditional write
// costs one round trip instead of BEGIN, reads, write and COMMIT. It runs
// at the database's default isolation: under PostgreSQL's READ COMMITTED
// the guard row is read FOR SHARE, so a transaction changing it (Delete
// Table) either waits for this write or, having committed first, makes the
// guard fail; the written row itself is locked by the statement and its
// condition re-checked on the latest version. CockroachDB runs it
// SERIALIZABLE. Serialization failures are retried as for Update.
//
// The statement runs outside a transaction, so it commits by itself: a
// connection lost once it was sent leaves its outcome as unknown as a lost
// COMMIT does, and it is classified the same way (classifyCommit). The
// first use of the statement on a connection prepares it in a round trip
// of its own: a connection lost then, before the statement itself was
// sent, is called unknown too, which is true of what partita knows if not
// of what happened.
func (db *DB) CondWrite(ctx context.Context, w kv.CondWrite) (bool, error) {
	if err := db.enter(); err != nil {
		return false, err
	}
	defer db.leave()
	sql, args := condSQL(w)
	var err error
	for attempt := 0; attempt <= db.retries; attempt++ {
		var applied, sent bool
		if applied, sent, err = db.condWrite(ctx, sql, args); err == nil {
			return applied, nil
		}
		if !retryable(err) {
			return false, fmt.Errorf("pgkv: conditional write: %w", classifyCommit(ctx, err, sent))
		}
		time.Sleep(time.Duration(attempt%8+1) * time.Millisecond)
	}
	return false, fmt.Errorf("%w: pgkv: conditional write kept conflicting: %v", kv.ErrUnavailable, err)
}

// condWrite runs a conditional write's statement once, on a connection of
// its own from the pool; sent tells whether any of it left for the server.
func (db *DB) condWrite(ctx context.Context, sql string, args []any) (applied, sent bool, err error) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return false, false, err
	}
	defer c.Release() // a broken connection goes back to be closed
	before := bytesSent(c.Conn())
	tag, err := c.Exec(ctx, sql, args...)
	if err != nil {
		return false, bytesSent(c.Conn()) != before, err
	}
	return tag.RowsAffected() == 1, true, nil
}

// condSQL builds the statement of a conditional write. $1 is the key, $2
// the guard key, $3 the guard value; then the value and the prefix.
func condSQL(w kv.CondWrite) (string, []any) {
	const guard = `EXISTS (SELECT 1 FROM partita_kv g WHERE g.k = $2 AND g.v = $3 FOR SHARE)`
	args := []any{w.Key, w.GuardKey, w.GuardValue}
	if w.Absent {
		args = append(args, w.Value)
		return `INSERT INTO partita_kv (k, v) SELECT $1, $4 WHERE ` + guard + ` ON CONFLICT (k) DO NOTHING`, args
	}
	var sql string
	if w.Value != nil {
		args = append(args, w.Value)
		sql = `UPDATE partita_kv SET v = $4 WHERE k = $1 AND ` + guard
	} else {
		sql = `DELETE FROM partita_kv WHERE k = $1 AND ` + guard
	}
	if w.Prefix != nil {
		args = append(args, w.Prefix)
		n := len(args)
		// substring(bytes, start, count): the call form that PostgreSQL,
		// CockroachDB and YugabyteDB all document (the SQL-standard
		// FROM … FOR spelling is PostgreSQL's sugar for it).
		sql += fmt.Sprintf(` AND substring(v, 1, length($%d::bytea)) = $%d`, n, n)
	}
	return sql, args
}

func (db *DB) DeleteRange(ctx context.Context, start, end []byte) error {
	// Delete in chunks so a huge range never holds one long transaction.
	//
	// Each chunk is a SERIALIZABLE transaction of its own (retried like
	// any Update), not a statement at the session's default isolation:
	// PostgreSQL checks serializable conflicts only among serializable
	// transactions, and a plain DELETE took no part in them. A write that
	// had read its table's catalog record as live before Delete Table
	// committed, and was slow to commit, then wrote its rows after the
	// purge had swept the range (they were not there to be seen), and
	// committed: its rows stayed under the dropped table's id for good,
	// after a 2xx answer. As a serializable transaction the chunk's read
	// of the range conflicts with that write, whose read of the catalog
	// record conflicts with the drop, and PostgreSQL aborts one of them;
	// the write, run again, finds the table gone (TableNotFound).
	for {
		var n int64
		err := db.Update(ctx, func(t kv.Txn) error {
			tx := t.(*txn).tx
			tag, err := tx.Exec(ctx, `DELETE FROM partita_kv WHERE k IN (SELECT k FROM partita_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT 5000)`, start, end)
			if err != nil {
				return classifyCtx(ctx, err)
			}
			n = tag.RowsAffected()
			return nil
		})
		if err != nil {
			return fmt.Errorf("pgkv: delete range: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// Ping checks the database is reachable.
func (db *DB) Ping(ctx context.Context) error { return classifyCtx(ctx, db.pool.Ping(ctx)) }

func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if !db.closed {
		db.closed = true
		db.pool.Close()
	}
	return nil
}

// querier is satisfied by *pgxpool.Pool and pgx.Tx.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type reader struct {
	ctx context.Context
	q   querier
	// pool is set for a View's reader, whose statements run on their own
	// until an iterator needs a snapshot: then snapshot begins a
	// read-only REPEATABLE READ transaction that the rest of the View
	// runs in, and end finishes it.
	pool *pgxpool.Pool
	tx   pgx.Tx
	// seen, in a write transaction's reader, holds the keys its reads
	// found present (txn.flush).
	seen map[string]struct{}
}

// saw records that the reader found key present.
func (r *reader) saw(key []byte) {
	if r.seen != nil {
		r.seen[string(key)] = struct{}{}
	}
}

// snapshot makes the reader's statements from now on read one snapshot: an
// iterator's chunks are separate statements, and each would otherwise see
// the store as of its own start, so a page could hold half of a batch
// committed between two chunks.
func (r *reader) snapshot() error {
	if r.pool == nil || r.tx != nil {
		return nil // a write transaction's reader, or already one snapshot
	}
	tx, err := r.pool.BeginTx(r.ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("pgkv: begin: %w", classifyCtx(r.ctx, err))
	}
	r.tx, r.q = tx, tx
	return nil
}

// end finishes the View's snapshot transaction, if it began one.
func (r *reader) end() {
	if r.tx == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	r.tx.Rollback(ctx) // read only: nothing to commit
	cancel()
	r.tx, r.q = nil, r.pool
}

func (r *reader) Get(key []byte) ([]byte, error) {
	var v []byte
	err := r.q.QueryRow(r.ctx, `SELECT v FROM partita_kv WHERE k = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgkv: get: %w", classifyCtx(r.ctx, err))
	}
	r.saw(key)
	return v, nil
}

// GetMany reads several keys with one statement.
func (r *reader) GetMany(keys [][]byte) ([][]byte, error) {
	rows, err := r.q.Query(r.ctx, `SELECT k, v FROM partita_kv WHERE k = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("pgkv: get many: %w", classifyCtx(r.ctx, err))
	}
	defer rows.Close()
	found := make(map[string][]byte, len(keys))
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("pgkv: get many: %w", classifyCtx(r.ctx, err))
		}
		found[string(k)] = v
		r.saw(k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgkv: get many: %w", classifyCtx(r.ctx, err))
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = found[string(k)]
	}
	return out, nil
}

var _ kv.MultiGetter = (*reader)(nil)

func (r *reader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	if err := r.snapshot(); err != nil {
		return nil, err
	}
	it := &iter{r: r, lower: o.LowerBound, upper: o.UpperBound, pos: -1, chunk: iterFirstChunk, rows: o.Rows}
	if o.Rows > 0 && o.Rows <= iterGrowth*iterFirstChunk {
		it.chunk = o.Rows // a few rows: no need to learn their size first (a chunk ends at iterChunkBytes anyway)
	}
	return it, nil
}

// An iterator fetches rows in chunks, one query each: the first of
// iterFirstChunk rows, the next of as many rows as iterChunkBytes holds at
// the sizes seen so far, between 1 and iterChunk. A caller that says how
// many rows it will read (IterOptions.Rows) gets chunks of no more until
// it has them, then of at most iterGrowth times the one before: a page of
// $top=10 reads about 11 rows, not 8 and then 500. A fixed 500 rows of
// 1 MiB entities held 500 MB for a $top=1 query (and for a two-operation
// batch's existence reads), per request.
const (
	iterFirstChunk = 8
	iterGrowth     = 4
	iterChunk      = 500
	iterChunkBytes = 1 << 20
)

// iter streams a key range in chunks of up to iterChunk rows, each fetched with
// a primary-key range predicate.
type iter struct {
	r            *reader
	lower, upper []byte
	keys, vals   [][]byte
	pos          int
	chunk        int  // rows the next query asks for
	rows         int  // IterOptions.Rows
	fetched      int  // rows fetched so far
	done         bool // the last chunk was short: nothing after it
	err          error
	// from is where the loaded chunk starts (inclusive): the chunk holds
	// every row in [from, last loaded key], or in [from, upper) when done.
	from   []byte
	loaded bool
}

func (it *iter) load(from []byte, inclusive bool) bool {
	op := ">"
	if inclusive {
		op = ">="
	}
	q := `SELECT k, v FROM partita_kv WHERE k ` + op + ` $1`
	args := []any{from}
	if from == nil {
		q = `SELECT k, v FROM partita_kv WHERE TRUE`
		args = nil
	}
	if it.upper != nil {
		args = append(args, it.upper)
		q += fmt.Sprintf(` AND k < $%d`, len(args))
	}
	limit := it.chunk
	// The limit is a parameter, not part of the text: the chunk size
	// changes with the rows' sizes, and each text is a statement of its
	// own in pgx's cache (512 by default), which up to 500 sizes churned.
	args = append(args, limit)
	q += fmt.Sprintf(` ORDER BY k LIMIT $%d`, len(args))
	rows, err := it.r.q.Query(it.r.ctx, q, args...)
	if err != nil {
		it.err = fmt.Errorf("pgkv: scan: %w", classifyCtx(it.r.ctx, err))
		return false
	}
	// Fresh slices: the previous chunk's rows are let go, not kept alive
	// by a large backing array.
	it.keys, it.vals = make([][]byte, 0, limit), make([][]byte, 0, limit)
	size, cut := 0, false
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			it.err = fmt.Errorf("pgkv: scan: %w", classifyCtx(it.r.ctx, err))
			return false
		}
		it.keys = append(it.keys, k)
		it.vals = append(it.vals, v)
		it.r.saw(k)
		size += len(k) + len(v)
		if size >= iterChunkBytes {
			// The chunk's length is guessed from the rows before it, and a
			// range of small rows followed by large ones fooled the guess:
			// after 8 small rows a chunk of 500 rows of 1 MiB entities was
			// held whole, 500 MB for one query or a three-operation
			// batch's existence reads. The chunk ends here, at most
			// iterChunkBytes and one row; Close reads the rest of the
			// answer off the connection without keeping it (so such a
			// layout costs its transfer once per iterator: the next
			// guess follows the large rows).
			cut = true
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		it.err = fmt.Errorf("pgkv: scan: %w", classifyCtx(it.r.ctx, err))
		return false
	}
	// Fewer rows than asked for is the end of the range, unless the
	// chunk was cut for its bytes.
	it.done = len(it.keys) < limit && !cut
	if n := len(it.keys); n > 0 {
		it.chunk = min(max(iterChunkBytes/max(size/n, 1), 1), iterChunk)
	}
	it.fetched += len(it.keys)
	if it.rows > 0 {
		// The rows the caller said it would read, then at most four
		// times the last chunk: a page of $top=10 read 8 rows, then the
		// next 500, every page.
		if left := it.rows - it.fetched; left > 0 {
			it.chunk = min(it.chunk, left)
		} else {
			it.chunk = min(it.chunk, iterGrowth*limit)
		}
	}
	it.pos = 0
	it.from = bytes.Clone(from)
	it.loaded = inclusive || from == nil
	return len(it.keys) > 0
}

func (it *iter) First() bool {
	if it.err != nil {
		return false
	}
	return it.load(it.lower, true)
}

func (it *iter) SeekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	// A seek inside the chunk already loaded needs no query: ascending
	// seeks over a batch's keys cost one range read, not one per key.
	if it.loaded && (it.from == nil || bytes.Compare(key, it.from) >= 0) &&
		(it.done || (len(it.keys) > 0 && bytes.Compare(key, it.keys[len(it.keys)-1]) <= 0)) {
		it.pos = sort.Search(len(it.keys), func(i int) bool { return bytes.Compare(it.keys[i], key) >= 0 })
		return it.pos < len(it.keys)
	}
	return it.load(key, true)
}

func (it *iter) Next() bool {
	if !it.Valid() {
		return false
	}
	it.pos++
	if it.pos < len(it.keys) {
		return true
	}
	if it.done {
		return false
	}
	return it.load(it.keys[len(it.keys)-1], false)
}

func (it *iter) Valid() bool   { return it.err == nil && it.pos >= 0 && it.pos < len(it.keys) }
func (it *iter) Key() []byte   { return it.keys[it.pos] }
func (it *iter) Value() []byte { return it.vals[it.pos] }
func (it *iter) Error() error  { return it.err }
func (it *iter) Close() error  { return nil }

// txn buffers writes and sends them in one pipelined batch before the
// next range read or the commit; point reads of buffered keys are
// answered from the buffer.
type txn struct {
	reader
	tx      pgx.Tx
	pending map[string]*[]byte // nil value: delete
	dbErr   error
}

func (t *txn) Get(key []byte) ([]byte, error) {
	if v, ok := t.pending[string(key)]; ok {
		if v == nil {
			return nil, kv.ErrNotFound
		}
		return *v, nil
	}
	v, err := t.reader.Get(key)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		t.dbErr = err
	}
	return v, err
}

func (t *txn) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	return t.reader.NewIter(o)
}

func (t *txn) Set(key, value []byte) error {
	v := bytes.Clone(value)
	t.pending[string(key)] = &v
	return nil
}

func (t *txn) Delete(key []byte) error {
	t.pending[string(key)] = nil
	return nil
}

func (t *txn) flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t.pending))
	for k := range t.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a fixed order keeps concurrent writers from deadlocking
	// A key the transaction read as present is written with UPDATE, not
	// the upsert: the one-statement conditional writes (CondWrite) and the
	// purge's deletes run outside this transaction's serializable checks,
	// and an upsert of a row one of them had deleted since this
	// transaction's snapshot found nothing to conflict with and inserted
	// it anew. A merge conditioned on the version a conditional delete
	// had just removed so succeeded too, and brought the entity back.
	// UPDATE of the version this transaction saw fails with a
	// serialization failure when another writer, at any isolation, has
	// updated or deleted it since; the transaction runs again and sees
	// the change.
	b := &pgx.Batch{}
	update := make([]bool, len(keys))
	for i, k := range keys {
		_, present := t.seen[k]
		switch v := t.pending[k]; {
		case v == nil:
			b.Queue(`DELETE FROM partita_kv WHERE k = $1`, []byte(k))
			delete(t.seen, k)
		case present:
			update[i] = true
			b.Queue(`UPDATE partita_kv SET v = $2 WHERE k = $1`, []byte(k), *v)
		default:
			b.Queue(`INSERT INTO partita_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, []byte(k), *v)
			t.seen[k] = struct{}{}
		}
	}
	t.pending = map[string]*[]byte{}
	br := t.tx.SendBatch(t.reader.ctx, b)
	var err error
	for i := range keys {
		tag, e := br.Exec()
		if e != nil {
			err = fmt.Errorf("pgkv: write: %w", classifyCtx(t.reader.ctx, e))
			break
		}
		if update[i] && tag.RowsAffected() != 1 {
			err = fmt.Errorf("pgkv: write: %w", errRowGone)
			break
		}
	}
	if e := br.Close(); e != nil && err == nil {
		err = fmt.Errorf("pgkv: write: %w", classifyCtx(t.reader.ctx, e))
	}
	if err != nil {
		t.dbErr = err
		return err
	}
	return nil
}

// errRowGone is a row the transaction read that its UPDATE did not find:
// PostgreSQL reports a version deleted since the snapshot as a
// serialization failure, so this is a safeguard, retried the same way.
var errRowGone = errors.New("a row the transaction read is gone")

// dsnSetsPoolSize reports whether dsn sets pool_max_conns, in either form
// (URL or key=value): pgxpool takes it out of the parsed configuration, so
// the DSN is parsed again for it, as pgconn reads it (a password or a
// database name containing the text does not count).
func dsnSetsPoolSize(dsn string) bool {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	_, ok := c.RuntimeParams["pool_max_conns"]
	return ok
}
