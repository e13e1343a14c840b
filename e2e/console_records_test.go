package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsoleRecords runs test/browser/records.test.mjs: the console's
// reading of an uploaded JSONL file (internal/console/assets/api.js) as
// partita copy reads one, a property named like an annotation refused and
// a malformed line stopping the upload, with node alone, so it runs where
// TestConsole's Chromium is missing. A missing node fails it.
func TestConsoleRecords(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "test", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: install Node.js 20 or later")
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil {
		t.Fatal("node --version: " + err.Error())
	} else if v := strings.TrimSpace(string(out)); !nodeVersionOK(v) {
		t.Fatal("node " + v + " is too old: the console tests need Node.js 20 or later")
	}
	runSuite(t, suiteRun{name: "node --test records.test.mjs", max: time.Minute, dir: dir,
		argv: []string{node, "--test", "--test-reporter=spec", "records.test.mjs"}})
}
