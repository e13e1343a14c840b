package pebblekv

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestCannotRecoverSaysWhy: an Open that fails because a read found a
// damaged file says to restore from a backup, not that recovery needs
// free space and write permission (which sent an operator after the disk
// when a block of an sstable failed its checksum); a full disk keeps
// that hint.
func TestCannotRecoverSaysWhy(t *testing.T) {
	corrupt := cannotRecover(fmt.Errorf("%w in db/000011.sst: checksum mismatch", ErrCorruption))
	if !errors.Is(corrupt, ErrCannotRecover) || !errors.Is(corrupt, ErrCorruption) ||
		strings.Contains(corrupt.Error(), "free space") || !strings.Contains(corrupt.Error(), "restore the data directory from a backup") {
		t.Errorf("a damaged file: %v", corrupt)
	}
	full := cannotRecover(fmt.Errorf("flush: %w", syscall.ENOSPC))
	if !errors.Is(full, ErrCannotRecover) || !strings.Contains(full.Error(), "free space") {
		t.Errorf("a full disk: %v", full)
	}
}
