//go:build unix

package admin

import (
	"os"
	"path/filepath"
	"syscall"
)

// isMountPoint reports whether dir is where a file system is mounted: its
// device differs from its parent's (or it is the root).
func isMountPoint(dir string) bool {
	parent := filepath.Dir(dir)
	if parent == dir {
		return true
	}
	a, errA := os.Stat(dir)
	b, errB := os.Stat(parent)
	if errA != nil || errB != nil {
		return false
	}
	sa, okA := a.Sys().(*syscall.Stat_t)
	sb, okB := b.Sys().(*syscall.Stat_t)
	return okA && okB && sa.Dev != sb.Dev
}
