package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestDiskFullFlushFails: the disk fills while a memtable is flushed, so
// the flush fails for want of space again and again while the free-space
// guard refuses writes. The server must neither crash nor spin: Pebble
// retries a failed flush at once, and partita paces those retries. Once
// space returns, the flush completes and writes resume, and the stored
// entities are exactly the acknowledged ones. Before: a server spent ~1.3
// cores making and deleting ~500 files a second; with table files
// buffered, the failure surfaced at Pebble's Finish of the file and Pebble
// crashed on a nil pointer.
func TestDiskFullFlushFails(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("the Pebble engine's disk guard; PostgreSQL manages its own disk")
	}
	mnt := mountTmpfs(t, "600m")
	p := startProc(t, partitaBin, nil, true, "--data", filepath.Join(mnt, "data"), "--min-free-mb", "10")
	c := noRetryClient(t, p.endpoint(), "fullflush")
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// 40,000 1 KiB entities by single inserts, as partita bench sends them,
	// so that a memtable is well on its way when the disk fills.
	bench := func(table string, n int) string {
		out, _ := exec.Command(partitaBin, "bench", "--endpoint", p.endpoint(), "--workload", "insert",
			"--count", strconv.Itoa(n), "--table", table, "--progress", "none").CombinedOutput()
		return string(out)
	}
	if out := bench("fullA", 40000); !strings.Contains(out, "insert  40000") {
		t.Fatalf("loading 40,000 entities:\n%s", out)
	}
	// Whatever else shares the disk takes all but 20 MiB: less than the
	// next flush needs, more than the guard keeps.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(filler.Fd()), 0, 0, int64(st.Bavail)*int64(st.Bsize)-20<<20); err != nil {
		t.Fatal(err)
	}
	filler.Close()
	out := bench("fullB", 30000)
	if !strings.Contains(p.stderr(), "no space left on device") {
		t.Fatalf("no flush failed for want of space; the bench said:\n%s\npartita's log:\n%s", out, p.stderr())
	}
	if code, done := p.exited(0); done {
		if code != 1 || !strings.Contains(p.stderr(), fatalLine) {
			t.Fatalf("the server ended with status %d, not the fail-stop:\n%s", code, p.stderr())
		}
		// The disk filled between two of the guard's samples and the log
		// could not grow: the documented fail-stop. A restart recovers.
		t.Logf("the write-ahead log ran out of space first: fail-stop (status 1), as documented")
		return
	}
	time.Sleep(2 * time.Second)
	c0 := procCPU(t, p.cmd.Process.Pid)
	time.Sleep(3 * time.Second)
	used := procCPU(t, p.cmd.Process.Pid) - c0
	t.Logf("%d failed writes of table files logged; the server used %v of CPU in 3 s after", strings.Count(p.stderr(), "no space left on device"), used)
	if used > 600*time.Millisecond {
		t.Errorf("the server used %v of CPU in 3 s while its flush could not complete", used)
	}
	if code, done := p.exited(0); done {
		t.Fatalf("the server exited (status %d) on a full disk with the guard on:\n%s", code, p.stderr())
	}

	// Space returns: the flush completes and writes resume.
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "after"}), nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after space returned: %v\n%s", err, p.stderr())
		}
	}
	n := 0
	pager := noRetryClient(t, p.endpoint(), "fullA").NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: ptr("RowKey")})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	if n != 40000 {
		t.Errorf("%d of the 40,000 acknowledged entities stored", n)
	}
	if strings.Contains(p.stderr(), "panic") {
		t.Fatalf("the server panicked:\n%s", p.stderr())
	}
}

// procCPU is a process's user and system CPU time from /proc.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
