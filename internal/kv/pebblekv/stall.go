package pebblekv

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
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
func watchDisk(fs vfs.FS, o *Options, f *fataler) (vfs.FS, *stallWatch) {
	w := &stallWatch{fatal: f, limit: o.MaxSyncDuration, away: map[string]int{}}
	if o.MaxSyncDuration <= 0 || o.ReadOnly {
		return fs, w
	}
	// A zero threshold would turn Pebble's checks off altogether.
	slow := max(min(5*time.Second, o.MaxSyncDuration/4), time.Millisecond)
	fs, w.closer = vfs.WithDiskHealthChecks(fs, slow, nil, w.slow)
	return fs, w
}

// stallWatch hears of every store operation that has run longer than the
// slow threshold, again every two seconds while it goes on (Pebble's
// ticker).
type stallWatch struct {
	fatal  *fataler
	limit  time.Duration
	closer io.Closer // Pebble's checks; nil when off

	stopped atomic.Bool
	mu      sync.Mutex
	logged  time.Time
	away    map[string]int // directories outside the store being written (checkpoints), by count
}

// Close stops Pebble's checks.
func (w *stallWatch) Close() error {
	if w.closer == nil {
		return nil
	}
	return w.closer.Close()
}

// elsewhere marks dir, a destination outside the store that Pebble writes
// through the store's file system (a checkpoint), until done is called:
// a stall there (a backup volume that hangs) is logged, not fatal, since
// the store itself still answers.
func (w *stallWatch) elsewhere(dir string) (done func()) {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	w.away[dir]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.away[dir]--; w.away[dir] <= 0 {
			delete(w.away, dir)
		}
		w.mu.Unlock()
	}
}

func (w *stallWatch) outside(path string) bool {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	for dir := range w.away {
		if path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func (w *stallWatch) slow(info vfs.DiskSlowInfo) {
	if w.fatal.closing.Load() {
		// Close is the shutdown's to bound (serve exits if it hangs).
		return
	}
	outside := w.outside(info.Path)
	if info.Duration >= w.limit && !outside {
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
		if outside {
			w.fatal.log.Warn("disk slow: writing a checkpoint is taking long", "op", info.OpType.String(), "path", info.Path, "elapsed", info.Duration.Round(100*time.Millisecond).String())
		} else {
			w.fatal.log.Warn("disk slow: a store operation is taking long", "op", info.OpType.String(), "path", info.Path, "elapsed", info.Duration.Round(100*time.Millisecond).String(), "fatal_after", w.limit.String())
		}
	}
}
