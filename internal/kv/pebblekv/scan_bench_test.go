package pebblekv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// The benchmarks below compare Pebble's value separation on and off on
// the workloads of `scripts/bench-compare`: ~1 KiB values, a table of
// benchN entities loaded with batches of 100, then rewritten (the
// comparison's upserts and merges write each entity ~18 times). Run them
// side by side:
//
//	go test ./internal/kv/pebblekv -run '^$' -bench 'Scan|PointGet|Insert1x1K|Batch100x1K' -count 6 | tee /tmp/vs.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /valuesep /tmp/vs.txt
//
// For experiments, PARTITA_BENCH_MEMTABLE_MB sets the memtable size,
// PARTITA_BENCH_BLOCK_KB the block size and PARTITA_VALUESEP the policy's
// fields (export_test.go).

const (
	benchN        = 20000
	benchRewrites = 17
)

// payloadPool holds random characters from a 64-character alphabet: like
// the bench's payloads, Snappy cannot shrink windows of it.
var payloadPool = func() []byte {
	pool := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pool {
		pool[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"[rng.IntN(64)]
	}
	return pool
}()

func payload(i uint64) []byte {
	off := i * 7919 % uint64(len(payloadPool)-1024)
	return payloadPool[off : off+1024]
}

func benchKey(key []byte, i uint64) []byte {
	return fmt.Appendf(key[:0], "t/p%04d/r%012d", i%16, i)
}

// withValueSeparation runs fn as two sub-benchmarks, valuesep=on and off.
func withValueSeparation(b *testing.B, fn func(b *testing.B)) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("valuesep=%v", map[bool]string{true: "on", false: "off"}[on]), func(b *testing.B) {
			defer pebblekv.SetValueSeparation(on)()
			fn(b)
		})
	}
}

// loadTable writes benchN values in batches of 100, then rewrites every one
// rewrites times (in random order, batches of 100), each time with a new
// value. The loads skip the WAL sync: they shape the LSM, not the timing.
func loadTable(b *testing.B, db kv.DB, rewrites int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	order := make([]uint64, benchN)
	for i := range order {
		order[i] = uint64(i)
	}
	var key []byte
	for pass := 0; pass <= rewrites; pass++ {
		if pass > 0 {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for start := 0; start < benchN; start += 100 {
			err := db.Update(context.Background(), func(tx kv.Txn) error {
				for _, i := range order[start:min(start+100, benchN)] {
					key = benchKey(key, i)
					if err := tx.Set(key, payload(i+uint64(pass)*benchN)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func openBench(b *testing.B, noSync bool) *pebblekv.DB {
	b.Helper()
	o := &pebblekv.Options{NoSync: noSync, MinFreeBytes: -1, SeparateValues: pebblekv.ValueSeparationSet()}
	if mb, err := strconv.Atoi(os.Getenv("PARTITA_BENCH_MEMTABLE_MB")); err == nil { // experiments
		o.MemTableSize = uint64(mb) << 20
	}
	if kb, err := strconv.Atoi(os.Getenv("PARTITA_BENCH_BLOCK_KB")); err == nil { // experiments
		defer pebblekv.SetBlockSize(kb << 10)()
	}
	db, err := pebblekv.Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkScan reads every value of the table, as a table scan does: on
// a freshly loaded table, right after the rewrites, and after the rewrites
// once compactions have settled. Besides the rate, which a busy machine
// scatters, it reports what the scan costs the scanning thread in CPU
// time (Linux) and its work as Pebble counts it: sstable block bytes read
// (from the cache or the file system; blob files not included) and
// internal keys stepped over, per entity.
func BenchmarkScan(b *testing.B) {
	for _, c := range []struct {
		name     string
		rewrites int
		settle   bool
		compact  bool
	}{{"fresh", 0, false, false}, {"rewritten", benchRewrites, false, false}, {"settled", benchRewrites, true, false}, {"compacted", benchRewrites, false, true}} {
		b.Run(c.name, func(b *testing.B) {
			withValueSeparation(b, func(b *testing.B) {
				db := openBench(b, true)
				loadTable(b, db, c.rewrites)
				if c.settle {
					settle(b, db)
				}
				if c.compact {
					if err := pebblekv.CompactAll(db); err != nil {
						b.Fatal(err)
					}
				}
				var sum int
				var st pebble.IteratorStats
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0, cpuOK := threadCPU()
				for b.Loop() {
					n := 0
					err := db.View(context.Background(), func(r kv.Reader) error {
						it, err := r.NewIter(kv.IterOptions{})
						if err != nil {
							return err
						}
						defer func() {
							s := pebblekv.IterStats(it)
							st.InternalStats.Merge(s.InternalStats)
							it.Close()
						}()
						for ok := it.First(); ok; ok = it.Next() {
							sum += int(it.Value()[0])
							n++
						}
						return it.Error()
					})
					if err != nil || n != benchN {
						b.Fatalf("scan: %d values, %v", n, err)
					}
				}
				entities := float64(b.N) * benchN
				if cpu1, ok := threadCPU(); ok && cpuOK {
					b.ReportMetric(float64(cpu1-cpu0)/entities, "cpu-ns/entity")
				}
				b.ReportMetric(entities/b.Elapsed().Seconds(), "entities/s")
				b.ReportMetric(float64(st.InternalStats.BlockBytes)/entities, "blockB/entity")
				b.ReportMetric(float64(st.InternalStats.PointCount)/entities, "points/entity")
			})
		})
	}
}

// settle waits until Pebble has run no flush or compaction for a second
// (at most a minute).
func settle(b *testing.B, db *pebblekv.DB) {
	b.Helper()
	quiet := 0
	for deadline := time.Now().Add(time.Minute); quiet < 10 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m := db.Metrics(); m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// reportProcessCPU reports the process's CPU time since cpu0 per
// operation: the steadier figure on a shared machine, where the rate
// depends on what else runs.
func reportProcessCPU(b *testing.B, cpu0 time.Duration, ok bool, unit string) {
	if cpu1, ok1 := processCPU(); ok && ok1 && b.N > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), unit)
	}
}

// BenchmarkPointGet reads random values of the rewritten table from 16
// readers.
func BenchmarkPointGet(b *testing.B) {
	withValueSeparation(b, func(b *testing.B) {
		db := openBench(b, true)
		loadTable(b, db, benchRewrites)
		var seq atomic.Uint64
		b.SetParallelism(8)
		cpu0, cpuOK := processCPU()
		b.ResetTimer()
		defer reportProcessCPU(b, cpu0, cpuOK, "cpu-ns/get")
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(seq.Add(1), 5))
			var key []byte
			for pb.Next() {
				key = benchKey(key, rng.Uint64N(benchN))
				err := db.View(context.Background(), func(r kv.Reader) error {
					v, err := r.Get(key)
					if err == nil && len(v) != 1024 {
						err = fmt.Errorf("%d bytes", len(v))
					}
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
	})
}

// BenchmarkInsert1x1K: synced commits of one new 1 KiB value each from 16
// writers, into the rewritten table (an Insert Entity).
func BenchmarkInsert1x1K(b *testing.B) {
	withValueSeparation(b, func(b *testing.B) {
		db := openBench(b, false)
		loadTable(b, db, benchRewrites)
		next := atomic.Uint64{}
		next.Store(benchN * 100)
		b.SetParallelism(8)
		cpu0, cpuOK := processCPU()
		b.ResetTimer()
		defer reportProcessCPU(b, cpu0, cpuOK, "cpu-ns/insert")
		b.RunParallel(func(pb *testing.PB) {
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
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	})
}

// writeHundred commits the values of keys base to base+99 in one batch;
// key is scratch space, returned for reuse.
func writeHundred(db kv.DB, key []byte, base uint64) ([]byte, error) {
	err := db.Update(context.Background(), func(tx kv.Txn) error {
		for i := range uint64(100) {
			key = benchKey(key, base+i)
			if err := tx.Set(key, payload(base+i)); err != nil {
				return err
			}
		}
		return nil
	})
	return key, err
}

// BenchmarkBatch100x1K: synced commits of 100 new 1 KiB values each from
// 16 writers (a $batch of inserts), on a new store. Use -benchtime 3000x
// or more so that flushes and compactions count.
func BenchmarkBatch100x1K(b *testing.B) {
	withValueSeparation(b, func(b *testing.B) {
		db := openBench(b, false)
		var next atomic.Uint64
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var key []byte
			for pb.Next() {
				var err error
				if key, err = writeHundred(db, key, next.Add(100)-100); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "entities/s")
	})
}
