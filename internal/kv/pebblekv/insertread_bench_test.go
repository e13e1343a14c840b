package pebblekv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
)

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
	cpu0, _ := processCPU()
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
	cpu1, _ := processCPU()
	b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
