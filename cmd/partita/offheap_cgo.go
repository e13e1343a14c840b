//go:build cgo

package main

// pebbleOffHeap: built with cgo, Pebble allocates its block cache and
// memtables with C's allocator, outside the Go heap.
const pebbleOffHeap = true
