package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestDiskFull runs partita on a small tmpfs. As the disk fills, writes
// fail with 503 ServerBusy (which the SDKs retry) before Pebble's WAL can
// hit ENOSPC, reads keep working, nothing half-written appears, and
// writes resume by themselves once space is freed.
func TestDiskFull(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("the Pebble engine's disk guard; PostgreSQL manages its own disk")
	}
	mnt := mountTmpfs(t, "size=96m")
	// A filler file stands for whatever else shares the disk.
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 40<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	s := StartServer(t, filepath.Join(mnt, "data"), "--min-free-mb", "24")
	writeUntilBusy(t, s, func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDiskOutOfFiles is TestDiskFull on a file system that runs out of
// files (inodes) with bytes to spare: Pebble cannot create its next log
// there either, which stopped the server (exit status 1, "no space left
// on device") and left it unable to restart until files were freed. Empty
// fillers stand for the other files sharing the disk; the guard keeps an
// eighth of its 400 inodes.
func TestDiskOutOfFiles(t *testing.T) {
	if E2EStore == "postgres" {
		t.Skip("the Pebble engine's disk guard; PostgreSQL manages its own disk")
	}
	mnt := mountTmpfs(t, "size=1g,nr_inodes=400")
	var fillers []string
	for free := freeFiles(t, mnt); free > 66; free-- {
		name := filepath.Join(mnt, fmt.Sprintf("filler%03d", len(fillers)))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, name)
	}
	s := StartServer(t, filepath.Join(mnt, "data"))
	t.Logf("%d free inodes with the server started", freeFiles(t, mnt))
	writeUntilBusy(t, s, func() {
		t.Logf("%d free inodes; removing %d fillers", freeFiles(t, mnt), len(fillers))
		for _, name := range fillers {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func freeFiles(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ffree
}

// writeUntilBusy inserts 60 KB entities into a new table until the
// server answers 503 ServerBusy; checks that reads work and hold exactly
// the acknowledged entities; calls free; and checks that writes resume
// without a restart and that the process never exited.
func writeUntilBusy(t *testing.T, s *Server, free func()) {
	t.Helper()
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	svc, _ := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if _, err := svc.CreateTable(ctx, "full", nil); err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("full")
	payload := strings.Repeat("z", 30000)
	acked := 0
	var busyErr error
	for i := 0; i < 5000 && busyErr == nil; i++ {
		_, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%05d", i), "A": payload, "B": payload}), nil)
		var re *azcore.ResponseError
		switch {
		case err == nil:
			acked++
		case errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable && re.ErrorCode == "ServerBusy":
			busyErr = err
		default:
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if busyErr == nil {
		t.Fatalf("the disk never filled after %d inserts", acked)
	}
	t.Logf("%d inserts acknowledged before 503 ServerBusy", acked)
	// Reads still work, and exactly the acknowledged entities exist.
	f := "PartitionKey eq 'p'"
	rows, _ := listAll(t, c, &aztables.ListEntitiesOptions{Filter: &f, Select: ptr("RowKey")})
	if len(rows) != acked {
		t.Fatalf("%d entities stored, %d acknowledged", len(rows), acked)
	}
	// Room returns; writes resume without a restart.
	free()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "after"}), nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after room returned: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The process survived throughout.
	select {
	case <-s.done:
		t.Fatal("partita exited")
	default:
	}
}

func ptr[T any](v T) *T { return &v }

// mountTmpfs mounts a tmpfs with options opts (mount's notation, e.g.
// "size=96m") for the test, or skips the test where mounting is not
// allowed (not root), saying so.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("NOTICE: cannot mount a tmpfs here (%v: %s); %s skipped", err, strings.TrimSpace(string(out)), t.Name())
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	return mnt
}
