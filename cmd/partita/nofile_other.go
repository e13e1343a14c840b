//go:build !unix

package main

// openFileLimit: no limit to fit under.
func openFileLimit() uint64 { return 0 }
