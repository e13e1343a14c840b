//go:build race

package raceflag

// Enabled is true when the binary is built with the race detector. Its
// instrumentation changes what escapes and allocates, and sync.Pool drops
// items at random under it, so tests check allocation counts only when
// Enabled is false.
const Enabled = true
