package pgkv

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolStat returns the connection pool's figures, for the Prometheus
// collector.
func (db *DB) PoolStat() *pgxpool.Stat { return db.pool.Stat() }

// MaxConns is the connection pool's size: from Options.MaxConns, else the
// DSN's pool_max_conns, else 32.
func (db *DB) MaxConns() int { return int(db.pool.Config().MaxConns) }

// StatementBuckets are the upper bounds, in seconds, of the statement
// latency histogram.
var StatementBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// StatementLatency returns the histogram of statement latencies (each
// statement, and each pipelined batch as one): the count, the sum in
// seconds, and the cumulative count by upper bound, as Prometheus wants.
func (db *DB) StatementLatency() (count uint64, sum float64, buckets map[float64]uint64) {
	t := db.stmts
	buckets = make(map[float64]uint64, len(StatementBuckets))
	var cum uint64
	for i, ub := range StatementBuckets {
		cum += t.counts[i].Load()
		buckets[ub] = cum
	}
	return t.count.Load(), time.Duration(t.sumNanos.Load()).Seconds(), buckets
}

// stmtTracer times statements and batches (a pgx tracer). It costs a
// clock read and a context value per statement, next to a network round
// trip.
type stmtTracer struct {
	count    atomic.Uint64
	sumNanos atomic.Int64
	counts   [13]atomic.Uint64 // by StatementBuckets; the last holds the rest beyond
}

type startKey struct{}

func (t *stmtTracer) start(ctx context.Context) context.Context {
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (t *stmtTracer) end(ctx context.Context) {
	st, ok := ctx.Value(startKey{}).(time.Time)
	if !ok {
		return
	}
	d := time.Since(st)
	t.count.Add(1)
	t.sumNanos.Add(int64(d))
	s := d.Seconds()
	for i, ub := range StatementBuckets {
		if s <= ub {
			t.counts[i].Add(1)
			return
		}
	}
}

func (t *stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return t.start(ctx)
}

func (t *stmtTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	t.end(ctx)
}

func (t *stmtTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return t.start(ctx)
}

func (t *stmtTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *stmtTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.end(ctx)
}
