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
	addr, _ := serveCappedListener(t, n, handler)
	return addr
}

// serveCappedListener is serveCapped, with the listener.
func serveCappedListener(t *testing.T, n int, handler http.Handler) (string, *capListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ConnState: connState, IdleTimeout: time.Minute, ReadHeaderTimeout: time.Minute}
	cl := newCapListener(ln, n)
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), cl
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
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("new client %d served after %v with every connection idle", i, d)
		}
	}
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
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
	if d := time.Since(start); d > reclaimAfter+5*time.Second {
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

// partialHeaders writes a request line and n bytes of small header lines,
// never the blank line that ends them: how a client holds a server's
// memory, as net/http builds the header map line by line.
func partialHeaders(t *testing.T, c net.Conn, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "h%d: v\r\n", i)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
}

// closedByServer reports whether the server closes c within wait (a read
// ends in EOF or a reset rather than waiting). A test expecting the close
// waits long (the server's goroutines may not run for a while on a busy
// machine under -race), one expecting none a second.
func closedByServer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !isTimeout(err)
}

// TestCapListenerShedsSlowHeaders: the bytes of requests whose headers
// are still arriving are bounded; past the budget the connection waiting
// the longest is closed, the newer one kept, and a client sending a whole
// request is served. Complete requests leave the count.
func TestCapListenerShedsSlowHeaders(t *testing.T) {
	addr, cl := serveCappedListener(t, 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	cl.budget = 64 << 10

	// Whole requests, one after another on a keep-alive connection,
	// leave nothing pending.
	k := dial(t, addr)
	br := bufio.NewReader(k)
	for range 50 {
		if code := exchange(t, k, br); code != 200 {
			t.Fatalf("whole request: %d", code)
		}
	}
	if p := cl.pending.Load(); p != 0 {
		t.Fatalf("%d bytes pending after 50 whole requests, want 0", p)
	}

	old := dial(t, addr)
	partialHeaders(t, old, 40<<10)
	waitPending(t, cl, 40<<10)
	young := dial(t, addr)
	partialHeaders(t, young, 40<<10) // 80 KiB pending: past the budget

	if !closedByServer(old, 10*time.Second) {
		t.Error("the connection waiting the longest was not closed past the budget")
	}
	if closedByServer(young, time.Second) {
		t.Error("the newer connection was closed too, though the older one's bytes were enough")
	}
	if p := cl.pending.Load() - cl.lingering.Load(); p > cl.budget {
		t.Errorf("%d bytes pending, over the budget of %d", p, cl.budget)
	}
	c := dial(t, addr)
	if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
		t.Errorf("whole request during the slow ones: %d", code)
	}
	// The young connection finishes its headers: it is served, and its
	// bytes leave the count.
	io.WriteString(young, "\r\n")
	young.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(young), nil)
	if err != nil {
		t.Fatalf("the finished slow request: %v", err)
	}
	resp.Body.Close()
	// The shed connection's bytes leave the count once the server has
	// closed it.
	for end := time.Now().Add(5 * time.Second); cl.pending.Load() != 0 || cl.lingering.Load() != 0; {
		if time.Now().After(end) {
			t.Fatalf("%d bytes pending (%d lingering) with no request arriving, want 0", cl.pending.Load(), cl.lingering.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitPending waits until the listener counts at least n pending bytes.
func waitPending(t *testing.T, cl *capListener, n int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); cl.pending.Load() < n; {
		if time.Now().After(end) {
			t.Fatalf("%d bytes pending, want %d", cl.pending.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCapConnHalfCloses: net/http half-closes a connection before it
// hangs up on a client still sending (headers too large, a body refused
// unread), so that the client reads the answer and then the stream's end
// instead of a reset 500 ms later. The capConn must pass that on.
func TestCapConnHalfCloses(t *testing.T) {
	addr := serveCapped(t, 4, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	c := dial(t, addr)
	// Headers past the server's limit (1 MiB by default): 431, then
	// net/http's closeWriteAndWait.
	go io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
	// The answer has no length: its body ends with the stream. Without
	// the half close the stream ends with the close, 500 ms later, and
	// the bytes the server never read make that close a reset, which the
	// read reports (the test checks the outcome, not a time, so that a
	// busy machine cannot fail it).
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading the answer to its end: %v (want the stream's end: a half close)", err)
	}
}

// TestCapListenerClosesSilentBeforeIdle: at the cap, every connection that
// has sent nothing for reclaimAfter goes, and a client's idle keep-alive
// connection stays: a flood of silent connections made the server close
// real clients' connections under them, and it made room for one queued
// client per accept.
func TestCapListenerClosesSilentBeforeIdle(t *testing.T) {
	addr := serveCapped(t, 4, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	keep := dial(t, addr)
	keepR := bufio.NewReader(keep)
	if code := exchange(t, keep, keepR); code != 200 {
		t.Fatalf("keep-alive client: %d", code)
	}
	var silent []net.Conn
	for range 3 {
		silent = append(silent, dial(t, addr))
	}
	time.Sleep(reclaimAfter + 200*time.Millisecond)
	c := dial(t, addr)
	if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
		t.Fatalf("new client: %d", code)
	}
	for i, s := range silent {
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("silent connection %d still open (%v)", i, err)
		}
	}
	if code := exchange(t, keep, keepR); code != 200 {
		t.Errorf("the keep-alive client's next request: %d", code)
	}
}

// TestCapListenerTakesLingeringFirst: a connection net/http has half
// closed (it then sleeps half a second before its close, to spare the
// client a reset) gives its place at once to a client waiting at the cap;
// it held it for the half second, during which a stream of refused
// requests kept every place.
func TestCapListenerTakesLingeringFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := newCapListener(ln, 2)
	mk := func() (*capConn, net.Conn) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		l.sem <- struct{}{}
		c := &capConn{Conn: a, l: l, accepted: time.Now()}
		l.conns[c] = struct{}{}
		return c, b
	}
	lingering, _ := mk()
	young, _ := mk() // silent, but not for reclaimAfter yet
	lingering.CloseWrite()
	l.reclaim()
	select {
	case l.sem <- struct{}{}:
	default:
		t.Fatal("no place made: the lingering connection still holds its place")
	}
	if _, ok := l.conns[lingering]; ok {
		t.Error("the lingering connection is still counted")
	}
	if _, ok := l.conns[young]; !ok {
		t.Error("a connection silent for less than reclaimAfter was closed")
	}
}

// TestCapListenerSparesPartialRequests: a connection that has sent part of
// a request (a TLS handshake on a slow link, headers arriving in pieces)
// goes only after the idle keep-alive ones; at 1 s and before the idle
// ones, honest slow-link TLS clients were cut off at the cap (a review
// helper's finding against the first version of this change).
func TestCapListenerSparesPartialRequests(t *testing.T) {
	addr := serveCapped(t, 3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	idle := dial(t, addr)
	if code := exchange(t, idle, bufio.NewReader(idle)); code != 200 {
		t.Fatalf("keep-alive client: %d", code)
	}
	partial := dial(t, addr)
	io.WriteString(partial, "GET / HTTP/1.1\r\nHost: x\r\n") // and the rest later
	mute := dial(t, addr)
	time.Sleep(reclaimAfter + 200*time.Millisecond)
	for i := range 2 { // the first takes the mute one's place, the second the idle one's
		c := dial(t, addr)
		if code := exchange(t, c, bufio.NewReader(c)); code != 200 {
			t.Fatalf("new client %d: %d", i, code)
		}
	}
	for name, c := range map[string]net.Conn{"mute": mute, "idle": idle} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("the %s connection still open (%v)", name, err)
		}
	}
	// The partial one finishes its request and is answered.
	partial.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(partial, "\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(partial), nil)
	if err != nil {
		t.Fatalf("the partial request, completed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the partial request, completed: %d", resp.StatusCode)
	}
}
