package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, c prometheus.Collector) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]*dto.Metric{}
	for _, f := range fams {
		m[f.GetName()] = f.Metric
	}
	return m
}

func write(t *testing.T, db kv.DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set([]byte{'k', byte(i)}, []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPebbleCollector checks the store's figures after synced writes:
// disk use, and one WAL sync per write at least.
func TestPebbleCollector(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write(t, db, 5)
	// Pebble records a sync's latency after it wakes the writer that
	// waited for it, so the last one may land a moment after the write
	// returns.
	var m map[string][]*dto.Metric
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m = gather(t, PebbleCollector(db.Metrics))
		if s := m["partita_pebble_wal_sync_seconds"]; len(s) == 1 && s[0].GetHistogram().GetSampleCount() >= 5 || time.Now().After(deadline) {
			break
		}
	}
	if d := m["partita_pebble_disk_bytes"]; len(d) != 1 || d[0].GetGauge().GetValue() <= 0 {
		t.Errorf("disk bytes: %v", d)
	}
	if s := m["partita_pebble_wal_sync_seconds"]; len(s) != 1 || s[0].GetHistogram().GetSampleCount() < 5 {
		t.Errorf("WAL syncs: %v", s)
	}
	for _, name := range []string{"partita_pebble_compaction_debt_bytes", "partita_pebble_block_cache_hits_total", "partita_pebble_block_cache_misses_total"} {
		if len(m[name]) != 1 {
			t.Errorf("%s missing", name)
		}
	}
}

// TestPoolCollector checks the PostgreSQL pool's figures and statement
// latency after writes (needs PARTITA_TEST_POSTGRES).
func TestPoolCollector(t *testing.T) {
	db, err := pgkv.Open(context.Background(), pgtest.NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n0, _, _ := db.StatementLatency()
	write(t, db, 5)
	m := gather(t, PoolCollector(db.PoolStat, db.StatementLatency))
	s := m["partita_pg_statement_seconds"]
	if len(s) != 1 || s[0].GetHistogram().GetSampleCount() < n0+5 || s[0].GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("statement latency: %v (before the writes: %d)", s, n0)
	}
	if a := m["partita_pg_pool_acquires_total"]; len(a) != 1 || a[0].GetCounter().GetValue() < 5 {
		t.Errorf("acquires: %v", a)
	}
	if c := m["partita_pg_pool_connections"]; len(c) != 3 {
		t.Errorf("connections by state: %v", c)
	}
	if x := m["partita_pg_pool_max_connections"]; len(x) != 1 || x[0].GetGauge().GetValue() != 32 {
		t.Errorf("max connections: %v", x)
	}
}
