//go:build !unix

package pebblekv

import (
	"errors"
	"os"
)

// lockDir: no directory lock here; Pebble's LOCK file guards the store.
func lockDir(dir, what string) (*os.File, bool, error) {
	return nil, false, errors.New("directory locks are not supported on this system")
}
