//go:build linux

package pebblekv_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestFewFreeFiles: the guard counts free files (inodes) as well as
// bytes, since Pebble cannot create the next log on a file system out of
// inodes however many bytes it has. The store is on a tmpfs of 400 inodes
// and plenty of bytes; empty fillers take the inodes down to 40, under the
// guard's 50 (an eighth of 400): writes are refused as on a full disk,
// and resume once the fillers are gone.
func TestFewFreeFiles(t *testing.T) {
	mnt := mountTmpfs(t, "size=256m,nr_inodes=400")
	set := guardedStore(t, filepath.Join(mnt, "db"), &pebblekv.Options{MinFreeBytes: 1 << 20})
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	var fillers []string
	for i := 0; st.Ffree > 40; i++ {
		name := filepath.Join(mnt, fmt.Sprintf("filler%03d", i))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, name)
		if err := syscall.Statfs(mnt, &st); err != nil {
			t.Fatal(err)
		}
	}
	err := set()
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); err = set() {
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(err, pebblekv.ErrLowDiskSpace) || !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("%d free inodes of 400: Update = %v, want ErrLowDiskSpace and ErrUnavailable", st.Ffree, err)
	}
	for _, name := range fillers {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := set(); err != nil {
		t.Errorf("after the fillers are gone: %v", err)
	}
}
