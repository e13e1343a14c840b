//go:build !race

// Package raceflag tells tests whether the race detector is on.
package raceflag

// Enabled is true when the binary is built with the race detector (see
// on.go).
const Enabled = false
