package main

import (
	"cmp"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// reclaimAfter is how long a connection may go without a complete first
// request before, with every connection in use, a new one takes its place.
// 1 s cut TLS handshakes over slow links, and connections whose first
// bytes the server had not read yet on a busy machine (a review helper's
// measurements), so it stays 2 s.
const reclaimAfter = 2 * time.Second

// capListener accepts at most n connections at once, like
// netutil.LimitListener, but at the cap it makes room the way a web server
// does rather than leave a new client in the kernel's queue (reclaim says
// which connections go). Otherwise a
// client without credentials could hold every connection: each request
// is answered at once (403), but the connection it came on stayed
// for --idle-timeout (2 minutes), renewable by one more request, so
// --max-connections connections and ~80 requests a second locked every
// other client out. A connection serving a request is never closed.
//
// It also bounds the bytes of requests still arriving (headerBudget).
//
// The http.Server using it must report connection states to connState.
type capListener struct {
	net.Listener
	sem    chan struct{}
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	conns map[*capConn]struct{}

	// pending is the bytes read on connections not serving a request:
	// the headers of requests not yet complete (and, on TLS, the
	// handshake). Past budget the connections waiting the longest are
	// closed (shed). lingering is the part of pending on connections
	// already shed whose server goroutine has not yet seen the close:
	// their memory is held until it does.
	pending   atomic.Int64
	lingering atomic.Int64
	budget    int64
	shedMu    sync.Mutex
}

// headerBudget bounds the bytes of incomplete requests held at once
// (twice it while shed connections let go). net/http builds a request's
// header map line by line as the lines arrive, so a client without
// credentials that sends headers slowly holds memory on each connection,
// and more than the bytes it sent: the 64 KiB header limit in tiny lines
// costs ~530 KiB of map, so ~5 GB at the default 10,000 connections.
// Complete headers take a connection out of the count at once; an SDK's
// headers arrive in one read, so what is pending at any moment is the
// slow ones.
const headerBudget = 4 << 20

func newCapListener(ln net.Listener, n int) *capListener {
	return &capListener{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{}), conns: make(map[*capConn]struct{}), budget: headerBudget}
}

// capConn is an accepted connection and its HTTP state.
type capConn struct {
	net.Conn
	l        *capListener
	state    atomic.Int32 // http.ConnState
	idle     atomic.Int64 // when it last became idle (Unix nanoseconds)
	accepted time.Time
	once     sync.Once
	closing  atomic.Bool // half closed by net/http, which lingers before the close
	heard    atomic.Bool // it has sent at least one byte

	mu      sync.Mutex
	pending int64 // bytes read since it last began serving a request
	since   int64 // when the first of them came (Unix nanoseconds)
	shed    bool  // closed for the budget; its pending bytes are lingering
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.release()
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.sem
	})
	return err
}

// CloseWrite passes a half close on, which net/http makes before it hangs
// up on a client still sending (a request refused before its body was
// read, headers too large), so that the client reads the answer and then
// the end of the stream rather than a reset.
//
// net/http then waits up to half a second before the close, so that the
// client's last bytes do not turn the close into a reset: at the cap such
// a connection is the first to go (reclaim). Over TLS the half close is
// tls.Conn's, which sends close_notify and does not call this: those
// connections wait their half second.
func (c *capConn) CloseWrite() error {
	c.closing.Store(true)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *capConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n == 0 || http.ConnState(c.state.Load()) == http.StateActive {
		return n, err
	}
	if !c.heard.Load() {
		c.heard.Store(true)
	}
	l := c.l
	c.mu.Lock()
	if c.shed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	if c.pending == 0 {
		c.since = time.Now().UnixNano()
	}
	c.pending += int64(n)
	c.mu.Unlock()
	switch total := l.pending.Add(int64(n)); {
	case total > 2*l.budget:
		// Connections shed already have not let go of theirs yet: this
		// one stops here too, rather than grow past twice the budget.
		l.shedConn(c)
		return 0, net.ErrClosed
	case total-l.lingering.Load() > l.budget:
		l.shed()
	}
	return n, err
}

// release takes c's pending bytes out of the listener's count: its
// request's headers are complete, or it is closed.
func (c *capConn) release() {
	c.mu.Lock()
	n, shed := c.pending, c.shed
	c.pending, c.since = 0, 0
	c.mu.Unlock()
	if n != 0 {
		c.l.pending.Add(-n)
		if shed {
			c.l.lingering.Add(-n)
		}
	}
}

// shedConn closes c for the budget; its bytes count as lingering until
// the server's goroutine sees the close and closes it too.
func (l *capListener) shedConn(c *capConn) {
	c.mu.Lock()
	if c.shed {
		c.mu.Unlock()
		return
	}
	c.shed = true
	n := c.pending
	c.mu.Unlock()
	l.lingering.Add(n)
	c.Conn.Close() // the server sees the read fail and closes it
}

// shed closes the connections whose incomplete requests have waited the
// longest until the pending bytes are a quarter under the budget (so that
// a stream of bytes past it does not scan the connections per read). A
// client that sends its headers at once is pending for microseconds; one
// holding memory with slow headers is pending for seconds, so it is the
// one closed.
func (l *capListener) shed() {
	if !l.shedMu.TryLock() {
		return // another reader is shedding
	}
	defer l.shedMu.Unlock()
	type waiting struct {
		c     *capConn
		since int64
	}
	var ws []waiting
	l.mu.Lock()
	for c := range l.conns {
		c.mu.Lock()
		if c.since != 0 && !c.shed {
			ws = append(ws, waiting{c, c.since})
		}
		c.mu.Unlock()
	}
	l.mu.Unlock()
	slices.SortFunc(ws, func(a, b waiting) int { return cmp.Compare(a.since, b.since) })
	target := l.budget - l.budget/4
	for _, w := range ws {
		if l.pending.Load()-l.lingering.Load() <= target {
			break
		}
		l.shedConn(w.c)
	}
}

func (l *capListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for taken := false; !taken; {
		select {
		case l.sem <- struct{}{}:
			taken = true
			continue
		default:
		}
		// Every connection is in use and a client waits: make room, or
		// look again shortly (a silent connection may come of age).
		l.reclaim()
		select {
		case l.sem <- struct{}{}:
			taken = true
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		case <-time.After(reclaimAfter / 8):
		}
	}
	cc := &capConn{Conn: c, l: l, accepted: time.Now()}
	l.mu.Lock()
	l.conns[cc] = struct{}{}
	l.mu.Unlock()
	return cc, nil
}

// reclaim makes room for a client waiting at the cap. It closes, in this
// order: every connection net/http is closing already (lingering after
// its answer); or else every connection that has sent nothing at all for
// reclaimAfter; or else the one idle the longest between requests; or
// else the oldest that has sent part of a request and not all of it for
// reclaimAfter.
//
// The mute ones go first and all at once: a flood of connections that
// send nothing, reopened as each was closed, kept real clients queued
// behind it for seconds when they went one per accept, and had the
// clients' keep-alive connections closed under them. One that has sent
// something (a TLS handshake on a slow link, headers coming in pieces) is
// an honest client more often than not, and goes after the idle ones, as
// before.
func (l *capListener) reclaim() {
	var idle, partial *capConn
	var closing, mute []*capConn
	now := time.Now()
	l.mu.Lock()
	for c := range l.conns {
		if c.closing.Load() {
			closing = append(closing, c)
			continue
		}
		switch http.ConnState(c.state.Load()) {
		case http.StateIdle:
			if idle == nil || c.idle.Load() < idle.idle.Load() {
				idle = c
			}
		case http.StateNew:
			switch {
			case now.Sub(c.accepted) < reclaimAfter:
			case !c.heard.Load():
				mute = append(mute, c)
			case partial == nil || c.accepted.Before(partial.accepted):
				partial = c
			}
		}
	}
	l.mu.Unlock()
	if len(closing) > 0 {
		for _, c := range closing {
			// net/http is asleep before its own Close: close it here,
			// which gives its place back now (its Close is then a no-op).
			c.Close()
		}
		return
	}
	victims := mute
	switch {
	case len(victims) > 0:
	case idle != nil:
		victims = []*capConn{idle}
	case partial != nil:
		victims = []*capConn{partial}
	}
	for _, c := range victims {
		c.Conn.Close() // the server sees the read fail and closes it
	}
}

func (l *capListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// connState records a connection's state for reclaim (http.Server's
// ConnState hook).
func connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*capConn); ok {
		switch st {
		case http.StateIdle:
			cc.idle.Store(time.Now().UnixNano())
		case http.StateActive:
			cc.release() // its request's headers are complete
		}
		cc.state.Store(int32(st))
	}
}
