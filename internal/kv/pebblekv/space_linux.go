//go:build linux

package pebblekv

import "syscall"

// freeSpace returns what is left on the file system holding dir: the
// bytes available to unprivileged writers, and the free files (inodes)
// where the file system counts them.
func freeSpace(dir string) (space, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return space{}, false
	}
	return space{bytes: st.Bavail * uint64(st.Bsize), files: st.Ffree, totalFiles: st.Files}, true
}

// trimTo releases the blocks a file holds beyond size (its length), which
// fallocate reserved ahead of its writes. Best effort.
func trimTo(fd uintptr, size int64) { _ = syscall.Ftruncate(int(fd), size) }
