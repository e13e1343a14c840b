//go:build !linux || !cgo

package main

// mallocArenasCapped: only glibc's allocator has arenas to cap
// (malloc_glibc.go).
func mallocArenasCapped() bool { return false }
