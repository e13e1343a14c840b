package main

import (
	"io"
	"testing"
	"time"
)

// TestServeBodyFlags: the body budget, client share and body deadline
// flags have their documented defaults, and values that would disable a
// bound, or that the server would quietly replace, are refused.
func TestServeBodyFlags(t *testing.T) {
	c, err := parseConfig(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyMB != 64 || c.ClientShare != 50 || c.BodyTimeout != 10*time.Second || c.BodyMinRateKB != 64 {
		t.Errorf("defaults: --max-body-mb %d --client-share %d --body-timeout %v --body-min-rate-kb %d",
			c.MaxBodyMB, c.ClientShare, c.BodyTimeout, c.BodyMinRateKB)
	}
	c, err = parseConfig([]string{"--max-body-mb", "8", "--client-share", "100", "--body-timeout", "1s", "--body-min-rate-kb", "1"}, io.Discard, io.Discard)
	if err != nil || c.MaxBodyMB != 8 || c.ClientShare != 100 || c.BodyTimeout != time.Second || c.BodyMinRateKB != 1 {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--client-share", "0"},
		{"--client-share", "101"},
		{"--max-body-mb", "0"},
		{"--body-timeout", "0s"},
		{"--body-min-rate-kb", "0"},
		// Taken for unset and replaced by a default without a word, or
		// overflowing once scaled to bytes (a negative budget, then 64 MiB).
		{"--max-inflight", "0"},
		{"--max-inflight", "-5"},
		{"--max-connections", "-1"},
		{"--queue-wait", "-1s"},
		{"--queue-wait", "0s"},
		{"--scan-budget", "0s"},
		{"--scan-budget", "-1s"},
		{"--read-header-timeout", "-1s"},
		{"--idle-timeout", "-1s"},
		{"--shutdown-timeout", "-1s"},
		{"--max-sync-duration", "-1s"},
		{"--min-free-mb", "-1"},
		{"--row-cache-mb", "-1"},
		{"--max-body-mb", "9999999999999"},
		{"--body-min-rate-kb", "9999999999999999"},
	} {
		if _, err := parseConfig(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
