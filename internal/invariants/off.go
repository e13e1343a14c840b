//go:build !invariants

// Package invariants switches on checks too costly for production, as
// Pebble's package of the same name does: build or test with
// `-tags invariants` to enable them. Code guards each check with
// `if invariants.Enabled`, a constant, so the ordinary build compiles the
// checks away.
package invariants

// Enabled is true in a build with the invariants tag.
const Enabled = false
