package main

import (
	"io"
	"os"
	"testing"
)

// TestServeGCFlags: the GC target defaults to 200, follows GOGC when it is
// set, and leaves Go's own setting (negative) for GOGC=off; the flag wins
// over both.
func TestServeGCFlags(t *testing.T) {
	for _, tc := range []struct {
		gogc   string // "" = unset
		args   []string
		want   int
		wantMB int64
	}{
		{"", nil, 200, 160},
		{"50", nil, 50, 160},
		{"off", nil, -1, 160},
		{"50", []string{"--gc-percent", "100", "--go-mem-limit-mb", "0"}, 100, 0},
	} {
		if tc.gogc == "" {
			t.Setenv("GOGC", "")
			unsetenv(t, "GOGC")
		} else {
			t.Setenv("GOGC", tc.gogc)
		}
		c, err := parseConfig(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("GOGC=%q %v: %v", tc.gogc, tc.args, err)
		}
		if c.GCPercent != tc.want || c.GoMemLimitMB != tc.wantMB {
			t.Errorf("GOGC=%q %v: gc-percent %d, go-mem-limit-mb %d; want %d, %d", tc.gogc, tc.args, c.GCPercent, c.GoMemLimitMB, tc.want, tc.wantMB)
		}
	}
}

// unsetenv removes name for the rest of the test (after t.Setenv has
// arranged for its old value to come back).
func unsetenv(t *testing.T, name string) {
	t.Helper()
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
