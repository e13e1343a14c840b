package pebblekv

import (
	"sync/atomic"
	"time"
)

// A scan after many rewrites of the same keys steps over their dead
// versions, and the memtable is where that costs most: its skiplist holds
// every version written since the last flush, in the order they were
// written, so each step of a scan is a pointer chase to a random place in
// a 32 MiB arena (~130 ns, a cache and TLB miss), while a flushed sstable
// keeps only each key's newest version, in key order, and is read
// sequentially. Right after the bench's upserts and merges, the
// memtable's skiplist was a third of a table scan's CPU
// (docs/PERFORMANCE.md, "Table scans after rewrites, side by side").
//
// So, like RocksDB's memtable_op_scan_flush_trigger, a scan that stepped
// over many dead versions asks Pebble to flush the memtable early, and the
// scans after it read the flushed table. Pebble's iterator counts its
// steps, not where they were, so the trigger also needs the memtable to
// hold enough data to be worth a flush, and fires at most once per
// interval: whatever the traffic, scans add at most one flush (of at
// least minUnflushed bytes) per interval to the ones writes cause.
type scanFlusher struct {
	last    atomic.Int64 // unix nanoseconds of the last flush asked for
	started atomic.Int64 // flushes asked for (tests)
}

// scanFlushPolicy holds the trigger's thresholds (tests lower them).
var scanFlushPolicy = struct {
	minHidden    int           // dead versions one iterator stepped over, at least
	minUnflushed uint64        // bytes written since the last flush (the WAL's live data), at least
	interval     time.Duration // between two flushes asked for by scans, at least
}{minHidden: 1000, minUnflushed: 4 << 20, interval: 10 * time.Second}

// steppedOver is told, as an iterator closes, how many internal entries it
// stepped through and how many keys it gave its caller.
func (d *DB) steppedOver(internal, user int) {
	p := scanFlushPolicy
	hidden := internal - user
	// Cheap tests first: this runs as every iterator closes.
	if hidden < p.minHidden || 2*hidden < user || d.readOnly {
		return
	}
	now := time.Now().UnixNano()
	last := d.scanFlush.last.Load()
	if last != 0 && now-last < int64(p.interval) || d.lowSpace.Load() {
		return
	}
	if !d.scanFlush.last.CompareAndSwap(last, now) {
		return // another scan got there first
	}
	// Once an interval, whatever it finds: Metrics takes Pebble's lock.
	// Iterators close inside View and Update (Pebble refuses to close a
	// store with one open), so the store is open here.
	if d.db.Metrics().WAL.Size < p.minUnflushed {
		return
	}
	d.scanFlush.started.Add(1)
	// The flush goes on in the background: AsyncFlush can wait for room
	// (a write stall), and the scan that asked has its answer ready. The
	// goroutine takes its own hold on the store (Close waits for it).
	go func() {
		if d.enter() != nil {
			return
		}
		defer d.leave()
		_, _ = d.db.AsyncFlush() // a failed flush is Pebble's to log and retry
	}()
}
