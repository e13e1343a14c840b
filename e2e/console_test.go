package e2e

// The web console (internal/console): TestConsoleServed checks how the
// real binary serves it; TestConsole drives it in headless Chromium with
// the tests in test/browser (node's test runner and playwright-core).
//
// Setup, once: apt-get install chromium; npm ci --prefix test/browser
// A missing node, chromium or test/browser/node_modules fails TestConsole:
// it does not skip. Screenshots go to $PARTITA_SCREENSHOTS, default
// test/browser/screenshots.

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleServed: the console's files are served on the main listener
// under /_partita/console/ for path-style and host-style Host headers
// alike, without credentials, with a strict Content-Security-Policy, and
// nothing but GET and HEAD.
func TestConsoleServed(t *testing.T) {
	s := StartServer(t, "")
	get := func(method, path, host string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	for _, host := range []string{"", "devstoreaccount1.table.core.windows.net", "devstoreaccount1-secondary.table.core.windows.net"} {
		res := get("GET", "/_partita/console/", host)
		if res.StatusCode != 200 {
			t.Fatalf("Host %q: GET /_partita/console/: %d", host, res.StatusCode)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("Host %q: CSP %q lacks %q", host, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("Host %q: CSP %q allows inline code", host, csp)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Host %q: index Cache-Control %q, want no-store", host, got)
		}
		if got := res.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("Host %q: Content-Type %q", host, got)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("Host %q: X-Content-Type-Options %q", host, got)
		}
	}
	for _, tt := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/_partita/console/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/_partita/console/api.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/_partita/console/style.css", 200, "text/css; charset=utf-8"},
		{"HEAD", "/_partita/console/index.html", 200, "text/html; charset=utf-8"},
		{"GET", "/_partita/console", 302, ""},
		{"GET", "/_partita/console/nosuch.js", 404, ""},
		{"GET", "/_partita/console/console.go", 404, ""},
		{"POST", "/_partita/console/", 405, ""},
		{"PUT", "/_partita/console/app.js", 405, ""},
	} {
		res := get(tt.method, tt.path, "")
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
		}
		if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s: Content-Type %q, want %q", tt.method, tt.path, res.Header.Get("Content-Type"), tt.ctype)
		}
		if res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s %s: no Content-Security-Policy", tt.method, tt.path)
		}
	}
	// The API beside it still wants credentials.
	if res := get("GET", "/"+devAccount+"/Tables", ""); res.StatusCode != 403 {
		t.Errorf("unsigned Query Tables: %d, want 403", res.StatusCode)
	}
}

func TestConsole(t *testing.T) {
	dir, node, chromium := browserTools(t)
	shots := os.Getenv("PARTITA_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(dir, "screenshots")
	}

	s := StartServer(t, "")

	var env []string
	for _, kv := range jsEnv(s.URL, "") {
		// Without PARTITA_CORS_*, cors.test.mjs (TestBrowserCORS's) skips.
		if !strings.HasPrefix(kv, "NODE_EXTRA_CA_CERTS=") && !strings.HasPrefix(kv, "PARTITA_SCREENSHOTS=") && !strings.HasPrefix(kv, "PARTITA_CHROMIUM=") && !strings.HasPrefix(kv, "PARTITA_CORS_") {
			env = append(env, kv)
		}
	}
	t.Logf("PARTITA_URL=%s, screenshots in %s", s.URL, shots)
	runSuite(t, suiteRun{name: "node --test", max: 4 * time.Minute, dir: dir,
		env:  append(env, "PARTITA_SCREENSHOTS="+shots, "PARTITA_CHROMIUM="+chromium, "PARTITA_BIN="+partitaBin),
		argv: []string{node, "--test", "--test-reporter=spec", "--test-timeout=180000"}})
}

// browserTools returns what the browser tests in test/browser need: that
// directory, node (20 or later) and Chromium ($PARTITA_CHROMIUM, default
// Debian's /usr/bin/chromium), with test/browser's npm packages installed.
// A missing one fails the test: it does not skip.
func browserTools(t *testing.T) (dir, node, chromium string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "test", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: install Node.js 20 or later, then run `npm ci --prefix test/browser`")
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil {
		t.Fatal("node --version: " + err.Error())
	} else if v := strings.TrimSpace(string(out)); !nodeVersionOK(v) {
		t.Fatal("node " + v + " is too old: the browser tests need Node.js 20 or later")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatal("test/browser/node_modules is missing: run `npm ci --prefix test/browser`")
	}
	chromium = os.Getenv("PARTITA_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s is missing: install Debian's chromium (apt-get install chromium) or set PARTITA_CHROMIUM", chromium)
	}
	return dir, node, chromium
}
