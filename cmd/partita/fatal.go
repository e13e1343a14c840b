package main

import (
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita/internal/kv/pebblekv"
)

// fatalExit is the embedded store's OnFatal in serve: it logs the one
// fatal line, closes every listener and client connection, and exits with
// status 1. The network goes first because the exit itself may have to
// wait: a thread the kernel holds in a write to a stalled disk (a frozen
// file system, a lost volume) keeps the process, and every socket it has
// open, alive until the disk answers. A listener left open then completes
// connections nobody serves; closed, clients and load balancers see
// refused connections and go elsewhere.
type fatalExit struct {
	log *slog.Logger

	dying  atomic.Bool // set before the listeners close
	mu     sync.Mutex
	closes []func()
}

// onFatal registers close to run before the process exits on a fatal
// store error.
func (f *fatalExit) onFatal(close func()) {
	f.mu.Lock()
	f.closes = append(f.closes, close)
	f.mu.Unlock()
}

// exit never returns.
func (f *fatalExit) exit(err error) {
	f.dying.Store(true)
	f.log.Error(pebblekv.FatalMessageFor(err), "err", err.Error())
	f.mu.Lock()
	closes := f.closes
	f.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for _, c := range closes {
			c()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	os.Exit(1)
}
