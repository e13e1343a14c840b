package main

import (
	"net/http"

	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/httpapi"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/metrics"
	"github.com/partita/partita/internal/tablestore"
)

// observability is a server's metrics and key-design advisor; either is
// nil when its flag turned it off.
type observability struct {
	metrics *metrics.Metrics
	advisor *advisor.Advisor
}

// newObservability builds what c turns on: the metrics' account label
// takes the configured account names, and the store's own figures are
// collected from Pebble or from the PostgreSQL pool, and the row cache's
// when the store has one.
func newObservability(c Config, keys auth.Keyring, db kv.DB, store *tablestore.Store) observability {
	var o observability
	if c.Metrics {
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		o.metrics = metrics.New(names, httpapi.ErrorCodes())
		switch d := db.(type) {
		case *pebblekv.DB:
			o.metrics.Registry().MustRegister(metrics.PebbleCollector(d.Metrics))
		case *pgkv.DB:
			o.metrics.Registry().MustRegister(metrics.PoolCollector(d.PoolStat, d.StatementLatency))
		}
		if _, ok := store.RowCacheStats(); ok {
			o.metrics.Registry().MustRegister(metrics.RowCacheCollector(func() (uint64, uint64, int, int64) {
				st, _ := store.RowCacheStats()
				return st.Hits, st.Misses, st.Rows, st.Bytes
			}))
		}
	}
	if c.Advisor {
		ao := advisor.Options{}
		if len(keys) > 1 {
			// One account's tables take at most its share of the places,
			// as of the request slots.
			ao.AccountTables = max(1, advisor.DefaultMaxTables*c.ClientShare/100)
		}
		o.advisor = advisor.New(ao)
	}
	return o
}

// mount serves /metrics, /advisor and /heat on mux (the admin
// listener's); what is turned off answers 404.
func (o observability) mount(mux *http.ServeMux) {
	if o.metrics != nil {
		mux.Handle("GET /metrics", o.metrics.Handler())
	}
	if o.advisor != nil {
		h := o.advisor.Handler()
		mux.Handle("GET /advisor", h)
		mux.Handle("GET /heat", h)
	}
}
