//go:build !race

package changeset

const raceEnabled = false
