//go:build linux && cgo

package main

/*
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

static int partita_arenas_capped;

// glibc fixes its limit on malloc arenas the first time a thread needs
// one, which the Go runtime's threads do before main runs; so the cap is
// set by a constructor, when the process is loaded. It does nothing where
// the C library has no such setting (musl) or when MALLOC_ARENA_MAX is set.
__attribute__((constructor)) static void partita_cap_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") != NULL) {
		return;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus >= 8 ? (int)(cpus / 4) : 1;
	partita_arenas_capped = mallopt(M_ARENA_MAX, n) == 1;
#endif
}

static int partita_arenas_were_capped(void) { return partita_arenas_capped; }
*/
import "C"

// mallocArenasCapped reports whether the C allocator's arenas, in which
// Pebble keeps its block cache and memtables, were capped when the
// process started: at one per four CPUs (one below eight CPUs), unless
// MALLOC_ARENA_MAX said otherwise. glibc's default, eight per core,
// spreads the cache's 4 KiB blocks over many arenas whose free space is
// not shared: with the block cache full, a server of a 100,000-entity
// table held 400 MB resident with the default, 357 MB with two arenas and
// 314 MB with one, at the same CPU per get (docs/PERFORMANCE.md,
// "Memory").
func mallocArenasCapped() bool { return C.partita_arenas_were_capped() == 1 }
