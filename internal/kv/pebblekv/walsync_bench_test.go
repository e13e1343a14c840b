package pebblekv_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// BenchmarkSyncedWrite measures Options.WALMinSyncInterval: synced
// commits of one new 1 KiB value each (an Insert Entity's write) from 16
// writers and from one. Besides the time per write it reports the
// process's CPU time per write (user and system, every thread: the
// kernel's time in fdatasync is most of a sync's cost) and WAL syncs per
// write. Interleave the intervals with -count:
//
//	go test ./internal/kv/pebblekv -run '^$' -bench SyncedWrite -benchtime 4000x -count 6
func BenchmarkSyncedWrite(b *testing.B) {
	for _, writers := range []int{16, 1} {
		for _, iv := range []time.Duration{0, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond} {
			b.Run(fmt.Sprintf("writers=%d/interval=%v", writers, iv), func(b *testing.B) {
				db, err := pebblekv.Open(b.TempDir(), &pebblekv.Options{MinFreeBytes: -1, WALMinSyncInterval: iv})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				var next atomic.Uint64
				b.SetParallelism((writers + 1) / 2) // GOMAXPROCS is 2 here
				if writers == 1 {
					b.SetParallelism(1)
				}
				syncs0 := walSyncs(db)
				cpu0 := processCPU()
				b.ResetTimer()
				body := func(pb *testing.PB) {
					var key []byte
					for pb.Next() {
						i := next.Add(1)
						err := db.Update(context.Background(), func(tx kv.Txn) error {
							key = benchKey(key, i)
							return tx.Set(key, payload(i))
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}
				if writers == 1 {
					// One writer: each commit waits for its sync before the
					// next one starts, as a sole client's requests do.
					var key []byte
					for i := 0; i < b.N; i++ {
						err := db.Update(context.Background(), func(tx kv.Txn) error {
							key = benchKey(key, uint64(i))
							return tx.Set(key, payload(uint64(i)))
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.RunParallel(body)
				}
				b.StopTimer()
				b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(walSyncs(db)-syncs0)/float64(b.N), "syncs/op")
			})
		}
	}
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// walSyncs is the count of WAL syncs Pebble has made.
func walSyncs(db *pebblekv.DB) uint64 {
	h, ok := db.Metrics().LogWriter.FsyncLatency.(prometheus.Metric)
	if !ok || h == nil {
		return 0
	}
	var m dto.Metric
	if h.Write(&m) != nil || m.Histogram == nil {
		return 0
	}
	return m.Histogram.GetSampleCount()
}
