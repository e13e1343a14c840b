package e2e

// TestPythonSDK runs the azure-data-tables tests in test/python (pytest)
// against the real partita binary.
//
// Setup, once (scripts/test does this):
//
//	python3 -m venv test/python/.venv
//	test/python/.venv/bin/pip install -r test/python/requirements.txt
//
// A missing virtualenv, interpreter or package is a failure, not a skip:
// the Python suite is part of the README's test command and of CI.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPythonSDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "test", "python"))
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(dir, ".venv", "bin", "python")
	setup := "run scripts/test, or: python3 -m venv test/python/.venv && test/python/.venv/bin/pip install -r test/python/requirements.txt"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("the Python SDK tests are not set up (%s is missing): %s", python, setup)
	}
	want, err := pinnedVersion(filepath.Join(dir, "requirements.txt"), "azure-data-tables")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-c", "import pytest, azure.data.tables as t; print(t.__version__)").CombinedOutput()
	if err != nil {
		t.Fatalf("the virtualenv in test/python/.venv lacks pytest or azure-data-tables (%v: %s): %s", err, strings.TrimSpace(string(out)), setup)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("test/python/.venv has azure-data-tables %s, requirements.txt pins %s: %s", got, want, setup)
	}

	// The suite runs over plain HTTP (the Python SDK signs with SharedKey
	// over HTTP, as against the emulators); one test checks HTTPS against
	// a second server with a throwaway CA.
	s := StartServer(t, "")
	tlsServer, tlsFiles := StartTLSServer(t)

	t.Logf("PARTITA_URL=%s", s.URL)
	runSuite(t, suiteRun{name: "pytest", max: 5 * time.Minute, dir: dir,
		env: pythonEnv(map[string]string{
			"PARTITA_URL":     s.URL,
			"PARTITA_TLS_URL": tlsServer.URL,
			"PARTITA_TLS_CA":  tlsFiles.CA,
		}),
		argv: []string{python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--color=no"}})
}

var pinRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+)==(\S+)`)

// pinnedVersion returns the version that a requirements file pins pkg to.
func pinnedVersion(file, pkg string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m := pinRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil && strings.EqualFold(m[1], pkg) {
			return m[2], nil
		}
	}
	return "", errors.New(file + " does not pin " + pkg + " with ==")
}

// pythonEnv is the environment for pytest: the parent's without proxy and
// CA-bundle settings (requests honours them; everything here is loopback),
// without PYTHON* settings that could load other code, plus extra.
func pythonEnv(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch uk := strings.ToUpper(k); {
		case uk == "HTTPS_PROXY", uk == "HTTP_PROXY", uk == "ALL_PROXY", uk == "NO_PROXY",
			uk == "REQUESTS_CA_BUNDLE", uk == "CURL_CA_BUNDLE", uk == "SSL_CERT_FILE",
			strings.HasPrefix(uk, "PYTHON"), strings.HasPrefix(uk, "PARTITA_"),
			uk == "TABLES_STORAGE_ENDPOINT_SUFFIX", uk == "VIRTUAL_ENV":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "NO_COLOR=1")
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}
