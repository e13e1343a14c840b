package pebblekv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv/pebblekv"
)

// BenchmarkTableWrites: the process CPU of flushing 60,000 1 KiB values
// (64 MiB) and compacting them to the bottom level, with Pebble's table
// and blob file writes gathered (buffered=on, what Open does) and as
// Pebble makes them (one write(2) per ~4 KiB block). The sub-benchmarks
// alternate within one run: -count 4 gives pairs.
func BenchmarkTableWrites(b *testing.B) {
	const n = 60000
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("buffered=%v", map[bool]string{true: "on", false: "off"}[on]), func(b *testing.B) {
			defer pebblekv.SetBufferTableWrites(on)()
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				db := openBench(b, true)
				var key []byte
				for base := uint64(0); base < n; base += 100 {
					var err error
					if key, err = writeHundred(db, key, base); err != nil {
						b.Fatal(err)
					}
				}
				c0, _ := processCPU()
				b.StartTimer()
				if err := pebblekv.CompactAll(db); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				c1, _ := processCPU()
				cpu += c1 - c0
				db.Close()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/entity")
		})
	}
}
