//go:build !cgo

package main

// pebbleOffHeap: built without cgo, Pebble's block cache and memtables are
// Go allocations.
const pebbleOffHeap = false
