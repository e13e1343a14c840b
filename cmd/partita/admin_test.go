package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv/memkv"
)

// TestOperatorOnly: the unauthenticated listeners refuse what a web page
// can make a browser send (a cross-site write, a DNS-rebound name on
// loopback) and serve what partita backup, curl and probes send.
func TestOperatorOnly(t *testing.T) {
	// A listener on every address is reached here over loopback: the
	// same rules apply to those connections.
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "0.0.0.0:0", "[::]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if strings.HasPrefix(addr, "[") {
				continue // no IPv6 loopback here
			}
			t.Fatal(err)
		}
		var served atomic.Int32
		srv := httptest.NewUnstartedServer(operatorOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			io.WriteString(w, "ok")
		}), ln))
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		port := ln.Addr().(*net.TCPAddr).Port
		base := srv.URL
		switch addr {
		case "0.0.0.0:0":
			base = "http://127.0.0.1:" + strconv.Itoa(port)
		case "[::]:0":
			base = "http://[::1]:" + strconv.Itoa(port)
		}
		for _, c := range []struct {
			method, host string
			header       map[string]string
			want         int
		}{
			{"POST", "", map[string]string{"Content-Type": "application/json"}, 200}, // partita backup
			{"POST", "localhost", nil, 200},
			{"GET", "LOCALHOST.", nil, 200},
			{"GET", "127.0.0.1", nil, 200},
			{"GET", "[::1]", nil, 200},
			{"POST", "", map[string]string{"Sec-Fetch-Site": "none"}, 200}, // typed into the address bar
			{"GET", "", map[string]string{"Origin": "https://evil.example"}, 200},
			{"POST", "", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403},
			{"POST", "", map[string]string{"Origin": "null"}, 403},
			{"DELETE", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
			{"POST", "", map[string]string{"Sec-Fetch-Site": "same-origin"}, 403},
			{"GET", "evil.example", nil, 403}, // DNS rebinding
			{"GET", "evil.example:" + strconv.Itoa(port), nil, 403},
			{"GET", "localhost.evil.example", nil, 403},
		} {
			req, _ := http.NewRequest(c.method, base+"/x", strings.NewReader("{}"))
			if c.host != "" {
				req.Host = c.host
				if !strings.Contains(c.host, ":") || strings.HasPrefix(c.host, "[") {
					req.Host = net.JoinHostPort(strings.Trim(c.host, "[]"), strconv.Itoa(port))
				}
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			before := served.Load()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s %s %s host %q %v: %d %s, want %d", addr, c.method, "/x", req.Host, c.header, resp.StatusCode, body, c.want)
			}
			if got := served.Load() - before; (c.want == 200) != (got == 1) {
				t.Errorf("%s %s host %q %v: handler ran %d times", addr, c.method, req.Host, c.header, got)
			}
		}
		srv.Close()
	}
}

// TestPprofRefusesCrossSiteReads: on the pprof listener a GET from another
// site's page (which could start a day-long CPU profile; here a 1 s one,
// so that a listener without the guard fails the test quickly) is refused; go
// tool pprof, curl, an address typed in and pprof's own links are served.
func TestPprofRefusesCrossSiteReads(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(pprofHandler(ln))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	for _, c := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/debug/pprof/", nil, 200}, // go tool pprof, curl
		{"/debug/pprof/", map[string]string{"Sec-Fetch-Site": "none"}, 200},
		{"/debug/pprof/symbol", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}, 200},
		{"/debug/pprof/profile?seconds=1", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"/debug/pprof/trace?seconds=1", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"/debug/pprof/profile?seconds=1", map[string]string{"Origin": "https://evil.example"}, 403}, // a browser without Sec-Fetch-*
	} {
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s with %v: %d, want %d", c.path, c.header, resp.StatusCode, c.want)
		}
	}
}

// TestAdminIdleConnectionsReclaimed: a local process holding every one of
// the admin listener's connections idle between requests (keep-alive,
// one request each) no longer leaves /healthz unanswered: a new client
// takes the place of an idle one.
func TestAdminIdleConnectionsReclaimed(t *testing.T) {
	url := startTestAdmin(t)
	for i := 0; i < adminConnections; i++ {
		c := dial(t, url)
		br := bufio.NewReader(c)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get("http://" + url + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with %d idle connections held: %v", adminConnections, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}

// startTestAdmin starts an admin listener on a memory store, stopped when
// t ends, and returns its host:port.
func startTestAdmin(t *testing.T) string {
	t.Helper()
	var out strings.Builder
	c := Config{AdminAddr: "127.0.0.1:0", Store: "memory"}
	stop, err := startAdmin(c, memkv.New(), nil, observability{}, slog.New(slog.DiscardHandler), &out, &fatalExit{log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	_, url, _ := strings.Cut(strings.TrimSpace(out.String()), "http://")
	return url
}

// TestAdminBodiesNotWaitedFor: a request that announces a body and does not
// send it is answered at once when nothing reads a body (a GET), and within
// operatorBodyWait when a handler does (a backup); before, net/http waited
// for ever on these listeners, and 64 such connections, all busy, locked
// out /healthz and backups.
func TestAdminBodiesNotWaitedFor(t *testing.T) {
	saved := operatorBodyWait
	operatorBodyWait = 500 * time.Millisecond
	defer func() { operatorBodyWait = saved }()
	url := startTestAdmin(t)
	for _, tc := range []struct {
		head   string
		within time.Duration
	}{
		{"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n", 2 * time.Second},
		{"POST /backup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"dir\":", 3 * time.Second},
	} {
		conn := dial(t, url)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		io.WriteString(conn, tc.head)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%.20q: no answer after %v: %v", tc.head, time.Since(start), err)
			continue
		}
		resp.Body.Close()
		if took := time.Since(start); took > tc.within {
			t.Errorf("%.20q: answered %d after %v, want within %v", tc.head, resp.StatusCode, took, tc.within)
		}
	}
}
