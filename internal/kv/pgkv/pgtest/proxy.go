package pgtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a PostgreSQL server and can lose one
// at a chosen point of the protocol, as a network (or a database host)
// that fails at that moment does: the client's message that the armed
// matcher picks is forwarded to the server, and then the connection is
// closed both ways before a byte of the server's answer reaches the
// client. The server still receives and runs what was forwarded.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	match func(typ byte, body []byte) bool // armed matcher, one cut
	cuts  int
	conns map[*proxyConn]bool
}

// NewProxy starts a proxy in front of dsn's server and returns it and dsn
// rewritten to go through it. It is closed when the test ends.
func NewProxy(tb testing.TB, dsn string) (*Proxy, string) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[*proxyConn]bool{}}
	go p.accept()
	tb.Cleanup(p.Close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

// CutAfter arms the proxy: the next client message (on any connection)
// for which match returns true is forwarded, and its connection is then
// lost. match sees each message's type byte and body, in order; it may
// keep state. Untyped start-up messages are not shown to it.
func (p *Proxy) CutAfter(match func(typ byte, body []byte) bool) {
	p.mu.Lock()
	p.match = match
	p.mu.Unlock()
}

// Disarm drops an armed matcher that has not cut yet.
func (p *Proxy) Disarm() { p.CutAfter(nil) }

// Cuts returns how many connections the proxy has cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Close stops accepting and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
	}
}

// Commit matches the simple-protocol COMMIT that pgx sends to end a
// transaction.
func Commit(typ byte, body []byte) bool {
	return typ == 'Q' && bytes.EqualFold(bytes.TrimRight(body, "\x00"), []byte("commit"))
}

// ExecuteSync returns a matcher of the Sync that follows the next
// extended-protocol Execute: an autocommit statement has then been run and
// committed by the server (the implicit transaction ends at Sync).
func ExecuteSync() func(typ byte, body []byte) bool {
	executed := false
	return func(typ byte, body []byte) bool {
		switch typ {
		case 'E':
			executed = true
		case 'S':
			return executed
		}
		return false
	}
}

type proxyConn struct {
	client, server net.Conn
	mu             sync.Mutex // held while the server's bytes are passed on
	lost           bool
}

func (c *proxyConn) close() {
	c.mu.Lock()
	c.lost = true
	c.mu.Unlock()
	c.client.Close()
	c.server.Close()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxyConn{client: client, server: server}
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		go p.toClient(c)
		go p.toServer(c)
	}
}

// toClient passes the server's bytes on until the connection is lost.
func (p *Proxy) toClient(c *proxyConn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			c.mu.Lock()
			if !c.lost {
				_, err = c.client.Write(buf[:n])
			}
			c.mu.Unlock()
		}
		if err != nil {
			c.close()
			return
		}
	}
}

// toServer passes the client's messages on one by one, and cuts the
// connection after the one the armed matcher picks.
func (p *Proxy) toServer(c *proxyConn) {
	cut := false
	defer func() {
		if !cut {
			c.close()
		}
	}()
	// Start-up: untyped messages (SSLRequest and GSSENCRequest, answered
	// with one byte, then StartupMessage), each a length and a body.
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c.client, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		if n < 8 {
			return
		}
		msg := make([]byte, n)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(c.client, msg[8:]); err != nil {
			return
		}
		code := binary.BigEndian.Uint32(hdr[4:])
		if code == 80877102 {
			// A CancelRequest is not passed on: a cut stands for the
			// network between the engine and the server lost, over
			// which the cancel pgx sends when a query's connection
			// breaks would not travel either. Passed on, it raced the
			// cut statement and sometimes cancelled it, so a test could
			// not tell what the server was left to do.
			return
		}
		if _, err := c.server.Write(msg); err != nil {
			return
		}
		if code != 80877103 && code != 80877104 { // not SSLRequest, GSSENCRequest
			break
		}
	}
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(c.client, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if n < 4 {
			return
		}
		msg := make([]byte, 5+n-4)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(c.client, msg[5:]); err != nil {
			return
		}
		p.mu.Lock()
		cut = p.match != nil && p.match(hdr[0], msg[5:])
		if cut {
			p.match = nil
			p.cuts++
		}
		p.mu.Unlock()
		if cut {
			// No answer may pass from here on: the client must learn
			// nothing of what the server does with this message.
			c.mu.Lock()
			c.lost = true
			c.mu.Unlock()
		}
		if _, err := c.server.Write(msg); err != nil {
			cut = false
			return
		}
		if cut {
			// The server reads what was written, then the end of its
			// input, and ends the session when it has done with it;
			// toClient drops its answers until then.
			if tc, ok := c.server.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			c.client.Close()
			return
		}
	}
}

// String describes the proxy, for test logs.
func (p *Proxy) String() string { return fmt.Sprintf("proxy %s → %s", p.ln.Addr(), p.target) }
