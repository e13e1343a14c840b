package pebblekv

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// watchDisk wraps fs in Pebble's disk-health checks when o sets
// MaxSyncDuration: every write, sync and file operation the store makes
// is timed while it runs, and one the disk leaves unanswered for
// MaxSyncDuration is fatal. CockroachDB, Pebble's production user, runs
// the same checks and stops a node whose disk stalls for 20 s
// (storage.max_sync_duration). Without them a disk that stops answering
// (a frozen file system, a lost network volume) leaves the commit
// pipeline waiting for ever and every write request with it, each
// holding a slot, in a process a supervisor sees alive.
func watchDisk(fs vfs.FS, o *Options, f *fataler) (vfs.FS, io.Closer) {
	if o.MaxSyncDuration <= 0 || o.ReadOnly {
		return fs, nopCloser{}
	}
	w := &stallWatch{fatal: f, limit: o.MaxSyncDuration}
	// A zero threshold would turn Pebble's checks off altogether.
	slow := max(min(5*time.Second, o.MaxSyncDuration/4), time.Millisecond)
	return vfs.WithDiskHealthChecks(fs, slow, nil, w.slow)
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// stallWatch hears of every store operation that has run longer than the
// slow threshold, again every two seconds while it goes on (Pebble's
// ticker).
type stallWatch struct {
	fatal *fataler
	limit time.Duration

	stopped atomic.Bool
	mu      sync.Mutex
	logged  time.Time
}

func (w *stallWatch) slow(info vfs.DiskSlowInfo) {
	if w.fatal.closing.Load() {
		// Close is the shutdown's to bound (serve exits if it hangs).
		return
	}
	if info.Duration >= w.limit {
		// stop never returns, and Pebble's ticker, which calls this,
		// must go on: closing the file system (a failed Open does)
		// waits for it.
		if w.stopped.CompareAndSwap(false, true) {
			go w.fatal.stop(fmt.Errorf("%w: %s of %s unanswered after %s (the limit is %s)", ErrDiskStalled, info.OpType, info.Path, info.Duration.Round(100*time.Millisecond), w.limit))
		}
		return
	}
	w.mu.Lock()
	now := time.Now()
	quiet := now.Sub(w.logged) >= repeatEvery
	if quiet {
		w.logged = now
	}
	w.mu.Unlock()
	if quiet {
		w.fatal.log.Warn("disk slow: a store operation is taking long", "op", info.OpType.String(), "path", info.Path, "elapsed", info.Duration.Round(100*time.Millisecond).String(), "fatal_after", w.limit.String())
	}
}
