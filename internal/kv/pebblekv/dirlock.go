//go:build unix

package pebblekv

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the directory itself (flock on its
// file descriptor), held until the store closes. Pebble locks a LOCK file
// inside it, found by its name: an operator who deleted that file (a
// "stale" lock after a crash) let a second server open the same store,
// and the two wrote files of the same numbers until neither could be
// opened again. A directory's lock goes with the directory, whatever is
// done to its files. A file system that cannot lock directories (some
// network ones) leaves Pebble's lock alone to guard it: ok is false and
// the error says why, for a warning.
func lockDir(dir, what string) (f *os.File, ok bool, err error) {
	f, err = os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return f, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN):
		f.Close()
		return nil, false, fmt.Errorf("pebblekv: %s %s is %w (its directory lock is held)", what, dir, ErrInUse)
	}
	f.Close()
	return nil, false, err
}
