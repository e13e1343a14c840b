package httpapi

import (
	"context"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/metrics"
)

// The store-call budget (Options.StoreCalls) bounds the store calls in
// flight at once, by principal as the request slots are: on PostgreSQL
// each call holds one of the pool's connections while it runs (a query's
// page holds one for its whole scan, up to the scan budget), and the pool
// (32 by default) is smaller than the slots one account may hold (128 of
// 256). Without it, one account's slow calls took every connection, and
// everyone else's waited in the pool's queue behind them, until their
// deadline (500 OperationTimedOut). With it, a call waits for its
// principal's share here instead, before it takes a connection.

// callClaimsKey is the context key of a request's claims on the
// store-call budget.
type callClaimsKey struct{}

// gatedStore is a partita.Store whose every call first takes a unit of the
// store-call budget, under the claims its context carries (none for the
// calls made outside a request: they count against the capacity only).
// A call that finds no room waits until its context is done; its deadline
// is the request's, so it then fails as a call to the store would have,
// with context.DeadlineExceeded (500 OperationTimedOut).
type gatedStore struct {
	partita.Store
	calls   *budget
	metrics *metrics.Metrics // records the calls that waited; may be nil
}

// gated runs f, a call to the store, once it has its unit of the budget.
func gated[T any](g *gatedStore, ctx context.Context, f func() (T, error)) (T, error) {
	claims, _ := ctx.Value(callClaimsKey{}).([]claim)
	if _, ok := g.calls.grab(1, claims, false); !ok {
		// No room: only now read the clock, so that the calls that
		// find room at once (nearly all) pay nothing for the metric.
		start := time.Now()
		err := g.calls.takeCtx(ctx, 1, claims...)
		g.metrics.StoreCallWaited(time.Since(start), err == nil)
		if err != nil {
			var zero T
			return zero, err
		}
	}
	defer g.calls.give(1, claims...)
	return f()
}

// gatedErr is gated for a call that returns only an error.
func gatedErr(g *gatedStore, ctx context.Context, f func() error) error {
	_, err := gated(g, ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

func (g *gatedStore) CreateTable(ctx context.Context, account, name string) (partita.Table, error) {
	return gated(g, ctx, func() (partita.Table, error) { return g.Store.CreateTable(ctx, account, name) })
}

func (g *gatedStore) DeleteTable(ctx context.Context, account, name string) error {
	return gatedErr(g, ctx, func() error { return g.Store.DeleteTable(ctx, account, name) })
}

func (g *gatedStore) GetTable(ctx context.Context, account, name string) (partita.Table, error) {
	return gated(g, ctx, func() (partita.Table, error) { return g.Store.GetTable(ctx, account, name) })
}

func (g *gatedStore) QueryTables(ctx context.Context, account string, q partita.TableQuery) (partita.TablePage, error) {
	return gated(g, ctx, func() (partita.TablePage, error) { return g.Store.QueryTables(ctx, account, q) })
}

func (g *gatedStore) GetEntity(ctx context.Context, account, table string, key partita.Key) (*partita.Entity, error) {
	return gated(g, ctx, func() (*partita.Entity, error) { return g.Store.GetEntity(ctx, account, table, key) })
}

func (g *gatedStore) QueryEntities(ctx context.Context, account, table string, q partita.Query, fn func(*partita.Entity) error) (partita.QueryInfo, error) {
	return gated(g, ctx, func() (partita.QueryInfo, error) { return g.Store.QueryEntities(ctx, account, table, q, fn) })
}

func (g *gatedStore) Write(ctx context.Context, account, table string, op partita.Op) (partita.Result, error) {
	return gated(g, ctx, func() (partita.Result, error) { return g.Store.Write(ctx, account, table, op) })
}

func (g *gatedStore) WriteBatch(ctx context.Context, account, table string, ops []partita.Op) ([]partita.Result, error) {
	return gated(g, ctx, func() ([]partita.Result, error) { return g.Store.WriteBatch(ctx, account, table, ops) })
}

func (g *gatedStore) GetTableACL(ctx context.Context, account, table string) ([]byte, error) {
	return gated(g, ctx, func() ([]byte, error) { return g.Store.GetTableACL(ctx, account, table) })
}

func (g *gatedStore) SetTableACL(ctx context.Context, account, table string, acl []byte) error {
	return gatedErr(g, ctx, func() error { return g.Store.SetTableACL(ctx, account, table, acl) })
}

func (g *gatedStore) GetServiceProperties(ctx context.Context, account string) ([]byte, error) {
	return gated(g, ctx, func() ([]byte, error) { return g.Store.GetServiceProperties(ctx, account) })
}

func (g *gatedStore) SetServiceProperties(ctx context.Context, account string, props []byte) error {
	return gatedErr(g, ctx, func() error { return g.Store.SetServiceProperties(ctx, account, props) })
}
