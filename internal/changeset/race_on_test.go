//go:build race

package changeset

// raceEnabled: the race detector's instrumentation changes what escapes
// and allocates, so allocation counts are checked only without it (the
// plain `go test ./...` pass does).
const raceEnabled = true
