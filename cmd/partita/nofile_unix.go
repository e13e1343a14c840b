//go:build unix

package main

import "syscall"

// openFileLimit returns the process's limit on open files (the soft
// RLIMIT_NOFILE, which Go raises to the hard one when it starts), or 0
// when it cannot be read or is unlimited.
func openFileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == ^uint64(0) {
		return 0
	}
	return r.Cur
}
