package main

import (
	"bytes"
	stdlog "log"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// net/http logs its own errors through http.Server.ErrorLog, one line per
// event: a failed TLS handshake, a plain-HTTP request to the TLS port, an
// accept error. Any client causes them before it is authenticated, one
// per connection, so a client failing handshakes on purpose wrote one
// line per connection (~150 bytes; thousands a second from one machine)
// into a log that may share the data disk. They pass at most
// httpLogBurst at once and httpLogRate a second; the next line that
// passes says how many were dropped before it.
const (
	httpLogBurst = 10
	httpLogRate  = rate.Limit(1)
)

// httpErrorLog returns the ErrorLog of partita's HTTP servers: net/http's
// lines as warnings of log, throttled.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(&throttledLog{log: log, lim: rate.NewLimiter(httpLogRate, httpLogBurst), now: time.Now}, "", 0)
}

type throttledLog struct {
	log     *slog.Logger
	lim     *rate.Limiter
	now     func() time.Time
	dropped atomic.Int64
}

func (t *throttledLog) Write(p []byte) (int, error) {
	if !t.lim.AllowN(t.now(), 1) {
		t.dropped.Add(1)
		return len(p), nil
	}
	msg := string(bytes.TrimRight(p, "\n"))
	if n := t.dropped.Swap(0); n > 0 {
		t.log.Warn(msg, "dropped_before", n)
	} else {
		t.log.Warn(msg)
	}
	return len(p), nil
}
