package pebblekv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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

// BenchmarkInsertRead: an Insert Entity's transaction, the existence read
// of a new key and its write, from 16 writers without the sync (the
// read's cost, not the disk's), into a store that already holds
// PARTITA_BENCH_MEMTABLE_FILL values (default 30000 of 1 KiB, about one
// default memtable). The read seeks every memtable's skiplist, whose
// nodes lie scattered over the memtable's arena: compare memtable sizes
// with PARTITA_BENCH_MEMTABLE_MB, and the write alone with
// PARTITA_BENCH_NOREAD=1.
func BenchmarkInsertRead(b *testing.B) {
	db := openBench(b, true)
	read := os.Getenv("PARTITA_BENCH_NOREAD") == ""
	fill := uint64(30000)
	if n, err := strconv.Atoi(os.Getenv("PARTITA_BENCH_MEMTABLE_FILL")); err == nil {
		fill = uint64(n)
	}
	for i := uint64(0); i < fill; i += 100 {
		err := db.Update(context.Background(), func(tx kv.Txn) error {
			for j := i; j < i+100; j++ {
				if err := tx.Set(benchKey(nil, j*2), payload(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Uint64
	b.SetParallelism(8)
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var key []byte
		for pb.Next() {
			i := next.Add(1)%fill*2 + 1 // between the loaded keys: absent
			err := db.Update(context.Background(), func(tx kv.Txn) error {
				key = benchKey(key, i)
				if !read {
					return tx.Set(key, payload(i))
				}
				if _, err := tx.Get(key); !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("get %d: %v", i, err)
				}
				return tx.Set(key, payload(i))
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
