package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// logFiles lists the names of Pebble's write-ahead log files in dir.
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWALDir: with --wal-dir the write-ahead log lives there and not in
// the data directory, acknowledged writes survive a SIGKILL (they are in
// that log only: 30 small entities do not fill a memtable), and the
// store refuses to open without the directory its log is in, instead of
// starting without the writes that log holds.
func TestWALDir(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("--wal-dir is the embedded engine's; this pass runs on PostgreSQL")
	}
	data := t.TempDir()
	// Relative to the working directory, as a user would give it.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	wal, err := filepath.Rel(wd, filepath.Join(t.TempDir(), "wal"))
	if err != nil {
		t.Fatal(err)
	}
	s := StartServer(t, data, "--wal-dir", wal)
	c := newTable(t, serviceClient(t, s))
	name := tableNames[c]
	for i := range 30 {
		if _, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprint(i), "V": i}), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := logFiles(t, wal); len(got) == 0 {
		t.Errorf("no WAL file in --wal-dir %s", wal)
	}
	if got := logFiles(t, data); len(got) != 0 {
		t.Errorf("WAL files in the data directory: %v", got)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done

	// Without --wal-dir: Pebble's OPTIONS file names the old directory,
	// and the server must not start without it. A server that does start
	// is killed after a while, so a regression fails instead of hanging.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(rctx, partitaBin, "serve", "--addr", "127.0.0.1:0", "--admin-addr", "", "--data", data, "--log-level", "warn").CombinedOutput()
	if err == nil || rctx.Err() != nil {
		t.Fatalf("serve without --wal-dir started on a store whose log is elsewhere (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "WALDir") {
		t.Errorf("serve without --wal-dir: want an error naming WALDir, got:\n%s", out)
	}

	s2 := StartServer(t, data, "--wal-dir", wal)
	rows, _ := listAll(t, serviceClient(t, s2).NewClient(name), nil)
	if len(rows) != 30 {
		t.Fatalf("after SIGKILL and restart with --wal-dir: %d entities, want 30", len(rows))
	}
	seen := map[float64]bool{}
	for _, r := range rows {
		if v, ok := r.Props["V"].(float64); ok {
			seen[v] = true
		}
	}
	for i := range 30 {
		if !seen[float64(i)] {
			t.Errorf("entity %d lost", i)
		}
	}
}
