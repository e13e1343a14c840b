package e2e

// TestJSSDK runs the @azure/data-tables tests in test/js (node's built-in
// test runner) against a partita started over HTTPS with a throwaway CA.
//
// Setup, once: npm ci --prefix test/js
// When test/js/node_modules (or node) is missing the test is skipped, or
// fails when the CI environment variable is set.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJSSDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "test", "js"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(msg string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Log("NOTICE: " + msg)
		t.Skip("SKIPPED (JS SDK tests not set up): " + msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH: install Node.js 20 or later, then run `npm ci` in test/js (npm ci --prefix test/js)")
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil {
		missing("node --version: " + err.Error())
	} else if v := strings.TrimSpace(string(out)); !nodeVersionOK(v) {
		missing("node " + v + " is too old: the JS SDK tests need Node.js 20 or later")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@azure", "data-tables", "package.json")); err != nil {
		missing("test/js/node_modules is missing: run `npm ci` in test/js (npm ci --prefix test/js)")
	}

	s, tlsFiles := StartTLSServer(t)

	t.Logf("PARTITA_URL=%s", s.URL)
	runSuite(t, suiteRun{name: "node --test", max: 5 * time.Minute, dir: dir, env: jsEnv(s.URL, tlsFiles.CA),
		argv: []string{node, "--test", "--test-reporter=spec", "--test-timeout=180000"}})
}

// nodeVersionOK reports whether `node --version` output (v20.1.2) is 20+.
func nodeVersionOK(v string) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 20
}

// jsEnv is the environment for node: the parent's, without proxy settings
// (the SDK honours HTTPS_PROXY; everything here is loopback), plus the
// partita URL and the throwaway CA.
func jsEnv(partitaURL, caFile string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "PARTITA_URL", "NODE_TLS_REJECT_UNAUTHORIZED":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PARTITA_URL="+partitaURL,
		"NODE_EXTRA_CA_CERTS="+caFile,
		"NO_COLOR=1",
	)
}
