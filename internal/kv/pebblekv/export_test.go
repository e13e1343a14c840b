package pebblekv

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// benchSeparate is what SetValueSeparation last set.
var benchSeparate bool

// SetValueSeparation says whether the stores benchmarks open until restore
// is called keep values apart (Options.SeparateValues; benchmarks compare
// both: ValueSeparationSet). PARTITA_VALUESEP overrides fields of the
// policy that on uses, for experiments: "depth=3,age=0s,garbage=0.1,min=256".
func SetValueSeparation(on bool) (restore func()) {
	old, oldOn := valueSeparation, benchSeparate
	benchSeparate = on
	for _, kv := range strings.Split(os.Getenv("PARTITA_VALUESEP"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		if !on || k == "" {
			continue
		}
		switch k {
		case "depth":
			valueSeparation.MaxBlobReferenceDepth, _ = strconv.Atoi(v)
		case "age":
			valueSeparation.RewriteMinimumAge, _ = time.ParseDuration(v)
		case "garbage":
			valueSeparation.TargetGarbageRatio, _ = strconv.ParseFloat(v, 64)
		case "min":
			valueSeparation.MinimumSize, _ = strconv.Atoi(v)
		default:
			panic("PARTITA_VALUESEP: unknown field " + k)
		}
	}
	return func() { valueSeparation, benchSeparate = old, oldOn }
}

// ValueSeparationSet reports what SetValueSeparation last set.
func ValueSeparationSet() bool { return benchSeparate }

// SetBlockSize sets the block size of the stores opened until restore is
// called (benchmarks compare sizes).
func SetBlockSize(n int) (restore func()) {
	old := blockSize
	blockSize = n
	return func() { blockSize = old }
}

// WALFile wraps f as a store wraps its write-ahead logs; with ahead
// false, without the zeroing ahead (benchmarks compare both).
func WALFile(f vfs.File, ahead bool) vfs.File {
	w := newWALFile(f, &fataler{})
	w.ahead = ahead
	return w
}

// StoreFS returns the file system a store was opened on (Options.FS).
func StoreFS(d *DB) vfs.FS { return d.fs }

// IterStats returns the Pebble statistics of an iterator of this engine.
func IterStats(it interface{ Close() error }) pebble.IteratorStats {
	return it.(*iter).Stats()
}

// CompactAll flushes the memtables and compacts the whole keyspace into
// the bottom level (benchmarks: what a scan costs once dead versions are
// gone).
func CompactAll(d *DB) error {
	if err := d.db.Flush(); err != nil {
		return err
	}
	return d.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true)
}

// Flush flushes the memtables to sstables.
func Flush(d *DB) error { return d.db.Flush() }

// SetBufferTableWrites switches the gathering of sstable and blob file
// writes for the stores opened until restore is called (benchmarks
// compare both).
func SetBufferTableWrites(on bool) (restore func()) {
	old := bufferTableWrites
	bufferTableWrites = on
	return func() { bufferTableWrites = old }
}

// SetScanFlushPolicy sets the thresholds of the scan-triggered flush until
// restore is called.
func SetScanFlushPolicy(minHidden int, minUnflushed uint64, interval time.Duration) (restore func()) {
	old := scanFlushPolicy
	scanFlushPolicy.minHidden, scanFlushPolicy.minUnflushed, scanFlushPolicy.interval = minHidden, minUnflushed, interval
	return func() { scanFlushPolicy = old }
}

// ScanFlushes returns how many flushes scans have asked d for.
func ScanFlushes(d *DB) int64 { return d.scanFlush.started.Load() }
