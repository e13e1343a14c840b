//go:build !linux

package pebblekv

// freeSpace is unknown off Linux: the guard stays open.
func freeSpace(dir string) (space, bool) { return space{}, false }

// trimTo: nothing is reserved ahead off Linux.
func trimTo(fd uintptr, size int64) {}
