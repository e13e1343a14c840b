package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// reclaimAfter is how long a connection may go without a complete first
// request before, with every connection in use, a new one takes its place.
const reclaimAfter = 2 * time.Second

// capListener accepts at most n connections at once, like
// netutil.LimitListener, but at the cap it makes room the way a web server
// does rather than leave a new client in the kernel's queue: it closes a
// connection that is idle between requests (keep-alive), or else one that
// has not sent a complete first request in reclaimAfter. Otherwise a
// client without credentials could hold every connection: each request
// is answered at once (403), but the connection it came on stayed
// for --idle-timeout (2 minutes), renewable by one more request, so
// --max-connections connections and ~80 requests a second locked every
// other client out. A connection serving a request is never closed.
//
// The http.Server using it must report connection states to connState.
type capListener struct {
	net.Listener
	sem    chan struct{}
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	conns map[*capConn]struct{}
}

func newCapListener(ln net.Listener, n int) *capListener {
	return &capListener{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{}), conns: make(map[*capConn]struct{})}
}

// capConn is an accepted connection and its HTTP state.
type capConn struct {
	net.Conn
	l        *capListener
	state    atomic.Int32 // http.ConnState
	idle     atomic.Int64 // when it last became idle (Unix nanoseconds)
	accepted time.Time
	once     sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.sem
	})
	return err
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

// reclaim closes the connection idle the longest between requests, or
// else the oldest that has sent no complete request for reclaimAfter; it
// reports whether it found one.
func (l *capListener) reclaim() bool {
	var idle, silent *capConn
	l.mu.Lock()
	for c := range l.conns {
		switch http.ConnState(c.state.Load()) {
		case http.StateIdle:
			if idle == nil || c.idle.Load() < idle.idle.Load() {
				idle = c
			}
		case http.StateNew:
			if time.Since(c.accepted) >= reclaimAfter && (silent == nil || c.accepted.Before(silent.accepted)) {
				silent = c
			}
		}
	}
	l.mu.Unlock()
	victim := idle
	if victim == nil {
		victim = silent
	}
	if victim == nil {
		return false
	}
	victim.Conn.Close() // the server sees the read fail and closes it
	return true
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
		if st == http.StateIdle {
			cc.idle.Store(time.Now().UnixNano())
		}
		cc.state.Store(int32(st))
	}
}
