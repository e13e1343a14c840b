//go:build linux

package pebblekv

import "syscall"

// freeSpace returns the bytes available to unprivileged writers on the
// file system holding dir.
func freeSpace(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}

// trimTo releases the blocks a file holds beyond size (its length), which
// fallocate reserved ahead of its writes. Best effort.
func trimTo(fd uintptr, size int64) { _ = syscall.Ftruncate(int(fd), size) }
