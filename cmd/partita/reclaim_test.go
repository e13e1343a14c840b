package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveCapped serves handler on a capListener of n connections.
func serveCapped(t *testing.T, n int, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ConnState: connState, IdleTimeout: time.Minute, ReadHeaderTimeout: time.Minute}
	go srv.Serve(newCapListener(ln, n))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// dial connects to addr, closed when t ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends one GET on c and reads its answer.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestCapListenerReclaimsIdle: with every connection taken by clients
// idle between requests (keep-alive, as a client without credentials can
// hold them, one 403 each), a new client is served at once: an idle
// connection is closed to make room. Connections that have sent nothing
// for reclaimAfter go too; a connection serving a request never does.
func TestCapListenerReclaimsIdle(t *testing.T) {
	release := make(chan struct{})
	addr := serveCapped(t, 3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	// One connection busy with a request for the whole test.
	busy := dial(t, addr)
	fmt.Fprintf(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	// Two idle keep-alive connections fill the cap.
	var idle []net.Conn
	for range 2 {
		c := dial(t, addr)
		if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
			t.Fatalf("idle connection's request: %d", code)
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond) // the states are recorded
	for i := range 2 {
		start := time.Now()
		c := dial(t, addr)
		if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
			t.Fatalf("new client %d: %d", i, code)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("new client %d served after %v with every connection idle", i, d)
		}
	}
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF || err != nil && !isTimeout(err) {
			closed++
		}
	}
	if closed != 2 {
		t.Errorf("%d of the 2 idle connections closed, want 2", closed)
	}

	// Now the cap holds the busy one and the two new clients' idle ones;
	// a connection that sends nothing is reclaimed once older than
	// reclaimAfter, and the busy one is never touched.
	dial(t, addr) // silent
	time.Sleep(100 * time.Millisecond)
	close(release)
	busy.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the busy connection's request: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if strings.TrimSpace(string(b)) != "ok" {
		t.Errorf("the busy connection's answer: %q", b)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestCapListenerReclaimsSilent: with every connection taken by clients
// that never finish a request's headers, a new client is served once they
// are older than reclaimAfter, not after --read-header-timeout.
func TestCapListenerReclaimsSilent(t *testing.T) {
	addr := serveCapped(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for range 2 {
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\n") // and nothing more
	}
	start := time.Now()
	c := dial(t, addr)
	if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
		t.Fatalf("new client: %d", code)
	}
	if d := time.Since(start); d > reclaimAfter+2*time.Second {
		t.Errorf("new client served after %v", d)
	} else {
		t.Logf("served after %v", d.Round(100*time.Millisecond))
	}
}

// TestConnStateThroughTLS: over TLS, http.Server reports the *tls.Conn
// it wraps around the listener's connection; the state must still reach
// the capConn, or every TLS connection would look silent and be closed at
// the cap while serving.
func TestConnStateThroughTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newCapListener(ln, 1)
	defer cl.Close()
	go net.Dial("tcp", ln.Addr().String())
	c, err := cl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	connState(tls.Server(c, &tls.Config{}), http.StateActive)
	if st := http.ConnState(c.(*capConn).state.Load()); st != http.StateActive {
		t.Errorf("state through tls.Conn: %v, want active", st)
	}
}
