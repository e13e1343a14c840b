package main

import (
	"os"
	"runtime"
	"testing"
)

// TestMallocArenasCapped: built with cgo on Linux (glibc), the process's
// arenas were capped at load unless MALLOC_ARENA_MAX was set.
func TestMallocArenasCapped(t *testing.T) {
	_, set := os.LookupEnv("MALLOC_ARENA_MAX")
	want := runtime.GOOS == "linux" && pebbleOffHeap && !set
	if got := mallocArenasCapped(); got != want {
		t.Errorf("mallocArenasCapped() = %v, want %v (MALLOC_ARENA_MAX set: %v)", got, want, set)
	}
}
