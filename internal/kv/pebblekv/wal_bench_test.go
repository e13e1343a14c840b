package pebblekv_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv/pebblekv"
)

// BenchmarkWALSync writes 1,300 bytes to a write-ahead log and syncs it
// (fdatasync), as Pebble's log writer does for a lone single-entity write:
// into a log that grows at every sync, as Pebble's logs did (its
// preallocation, made here too, keeps the file's size), and into one that
// the store zeroes ahead of its writes (walFile). It reports the process's
// CPU per write and sync; the file lives in the temporary directory, so
// point TMPDIR at the disk to measure (a tmpfs syncs for free):
//
//	TMPDIR=/var/tmp go test ./internal/kv/pebblekv -run '^$' -bench WALSync -count 6
func BenchmarkWALSync(b *testing.B) {
	record := bytes.Repeat([]byte{0x5a}, 1300)
	for _, c := range []struct {
		name  string
		ahead bool
	}{{"growing", false}, {"zeroed-ahead", true}} {
		b.Run(c.name, func(b *testing.B) {
			f, err := vfs.Default.Create(filepath.Join(b.TempDir(), "000001.log"), vfs.WriteCategoryUnspecified)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := f.Preallocate(0, int64(b.N+1)*int64(len(record))); err != nil {
				b.Logf("preallocate: %v", err)
			}
			w := pebblekv.WALFile(f, c.ahead)
			cpu0, cpuOK := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.Write(record); err != nil {
					b.Fatal(err)
				}
				if err := w.SyncData(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportProcessCPU(b, cpu0, cpuOK, "cpu-ns/sync")
		})
	}
}
