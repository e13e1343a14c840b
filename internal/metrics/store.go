package metrics

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// pebbleCollector reports Pebble's own figures at each scrape.
type pebbleCollector struct {
	metrics func() *pebble.Metrics
}

var (
	pebbleDisk        = prometheus.NewDesc("partita_pebble_disk_bytes", "Disk space used by the Pebble store (tables, write-ahead log, manifest).", nil, nil)
	pebbleDebt        = prometheus.NewDesc("partita_pebble_compaction_debt_bytes", "Pebble's estimate of the bytes compactions must still rewrite.", nil, nil)
	pebbleCompactions = prometheus.NewDesc("partita_pebble_compactions_total", "Compactions Pebble has run.", nil, nil)
	pebbleCompacting  = prometheus.NewDesc("partita_pebble_compactions_in_progress", "Compactions running now.", nil, nil)
	pebbleReadAmp     = prometheus.NewDesc("partita_pebble_read_amplification", "Sorted runs a read may have to consult (L0 sublevels plus non-empty levels).", nil, nil)
	pebbleCacheHits   = prometheus.NewDesc("partita_pebble_block_cache_hits_total", "Block cache hits.", nil, nil)
	pebbleCacheMisses = prometheus.NewDesc("partita_pebble_block_cache_misses_total", "Block cache misses.", nil, nil)
	pebbleCacheBytes  = prometheus.NewDesc("partita_pebble_block_cache_bytes", "Bytes held in the block cache.", nil, nil)
	pebbleMemtable    = prometheus.NewDesc("partita_pebble_memtable_bytes", "Bytes in memtables.", nil, nil)
	pebbleWALBytes    = prometheus.NewDesc("partita_pebble_wal_bytes", "Live write-ahead log bytes on disk.", nil, nil)
	pebbleWALSync     = prometheus.NewDesc("partita_pebble_wal_sync_seconds", "Latency of the write-ahead log's fsyncs.", nil, nil)
)

// PebbleCollector is a collector of Pebble's figures; metrics is called
// at each scrape (pebblekv.DB.Metrics).
func PebbleCollector(metrics func() *pebble.Metrics) prometheus.Collector {
	return &pebbleCollector{metrics: metrics}
}

func (c *pebbleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pebbleDisk, pebbleDebt, pebbleCompactions, pebbleCompacting, pebbleReadAmp,
		pebbleCacheHits, pebbleCacheMisses, pebbleCacheBytes, pebbleMemtable, pebbleWALBytes, pebbleWALSync} {
		ch <- d
	}
}

func (c *pebbleCollector) Collect(ch chan<- prometheus.Metric) {
	// A scrape that races the store's close reports nothing rather than
	// taking the process down.
	defer func() { recover() }()
	m := c.metrics()
	if m == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(pebbleDisk, float64(m.DiskSpaceUsage()))
	gauge(pebbleDebt, float64(m.Compact.EstimatedDebt))
	counter(pebbleCompactions, float64(m.Compact.Count))
	gauge(pebbleCompacting, float64(m.Compact.NumInProgress))
	gauge(pebbleReadAmp, float64(m.ReadAmp()))
	counter(pebbleCacheHits, float64(m.BlockCache.Hits))
	counter(pebbleCacheMisses, float64(m.BlockCache.Misses))
	gauge(pebbleCacheBytes, float64(m.BlockCache.Size))
	gauge(pebbleMemtable, float64(m.MemTable.Size))
	gauge(pebbleWALBytes, float64(m.WAL.PhysicalSize))
	if h, ok := m.LogWriter.FsyncLatency.(prometheus.Metric); ok && h != nil {
		// Pebble's histogram is in nanoseconds and has no name: re-emit
		// it in seconds under ours.
		var pb dto.Metric
		if h.Write(&pb) == nil && pb.Histogram != nil {
			buckets := make(map[float64]uint64, len(pb.Histogram.Bucket))
			for _, b := range pb.Histogram.Bucket {
				buckets[b.GetUpperBound()/1e9] = b.GetCumulativeCount()
			}
			ch <- prometheus.MustNewConstHistogram(pebbleWALSync, pb.Histogram.GetSampleCount(), pb.Histogram.GetSampleSum()/1e9, buckets)
		}
	}
}

var (
	rowCacheHits   = prometheus.NewDesc("partita_row_cache_hits_total", "Entity reads answered by the row cache (--row-cache-mb).", nil, nil)
	rowCacheMisses = prometheus.NewDesc("partita_row_cache_misses_total", "Entity reads the row cache could not answer.", nil, nil)
	rowCacheRows   = prometheus.NewDesc("partita_row_cache_rows", "Entities held in the row cache.", nil, nil)
	rowCacheBytes  = prometheus.NewDesc("partita_row_cache_bytes", "Bytes held in the row cache, as counted against its budget.", nil, nil)
)

// RowCacheCollector reports the row cache's figures; stats is called at
// each scrape (tablestore.Store.RowCacheStats, adapted).
func RowCacheCollector(stats func() (hits, misses uint64, rows int, bytes int64)) prometheus.Collector {
	return rowCacheCollector(stats)
}

type rowCacheCollector func() (hits, misses uint64, rows int, bytes int64)

func (c rowCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{rowCacheHits, rowCacheMisses, rowCacheRows, rowCacheBytes} {
		ch <- d
	}
}

func (c rowCacheCollector) Collect(ch chan<- prometheus.Metric) {
	hits, misses, rows, bytes := c()
	ch <- prometheus.MustNewConstMetric(rowCacheHits, prometheus.CounterValue, float64(hits))
	ch <- prometheus.MustNewConstMetric(rowCacheMisses, prometheus.CounterValue, float64(misses))
	ch <- prometheus.MustNewConstMetric(rowCacheRows, prometheus.GaugeValue, float64(rows))
	ch <- prometheus.MustNewConstMetric(rowCacheBytes, prometheus.GaugeValue, float64(bytes))
}

// poolCollector reports a pgx connection pool's figures and statement
// latency.
type poolCollector struct {
	stat    func() *pgxpool.Stat
	latency func() (count uint64, sum float64, buckets map[float64]uint64)
}

var (
	pgConns        = prometheus.NewDesc("partita_pg_pool_connections", "PostgreSQL pool connections, by state.", []string{"state"}, nil)
	pgMaxConns     = prometheus.NewDesc("partita_pg_pool_max_connections", "The PostgreSQL pool's size limit.", nil, nil)
	pgAcquires     = prometheus.NewDesc("partita_pg_pool_acquires_total", "Connections taken from the pool.", nil, nil)
	pgAcquireWait  = prometheus.NewDesc("partita_pg_pool_acquire_wait_seconds_total", "Time spent waiting for a pool connection.", nil, nil)
	pgEmptyAcquire = prometheus.NewDesc("partita_pg_pool_empty_acquires_total", "Acquires that found no idle connection and had to wait or connect.", nil, nil)
	pgStatement    = prometheus.NewDesc("partita_pg_statement_seconds", "Latency of PostgreSQL statements (a pipelined batch counts as one).", nil, nil)
)

// PoolCollector is a collector of a PostgreSQL pool's figures and of its
// statement latency; stat and latency are called at each scrape
// (pgkv.DB.PoolStat and StatementLatency).
func PoolCollector(stat func() *pgxpool.Stat, latency func() (uint64, float64, map[float64]uint64)) prometheus.Collector {
	return &poolCollector{stat: stat, latency: latency}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pgConns, pgMaxConns, pgAcquires, pgAcquireWait, pgEmptyAcquire, pgStatement} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stat()
	if s == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(pgConns, prometheus.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(pgConns, prometheus.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(pgConns, prometheus.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(pgMaxConns, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(pgAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(pgAcquireWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(pgEmptyAcquire, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	if c.latency != nil {
		n, sum, b := c.latency()
		ch <- prometheus.MustNewConstHistogram(pgStatement, n, sum, b)
	}
}
