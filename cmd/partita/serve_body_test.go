package main

import (
	"io"
	"testing"
	"time"
)

// TestServeBodyFlags: the body budget, client share and body deadline
// flags have their documented defaults, and values that would disable a
// bound are refused.
func TestServeBodyFlags(t *testing.T) {
	c, err := parseConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyMB != 64 || c.ClientShare != 50 || c.BodyTimeout != 10*time.Second || c.BodyMinRateKB != 64 {
		t.Errorf("defaults: --max-body-mb %d --client-share %d --body-timeout %v --body-min-rate-kb %d",
			c.MaxBodyMB, c.ClientShare, c.BodyTimeout, c.BodyMinRateKB)
	}
	c, err = parseConfig([]string{"--max-body-mb", "8", "--client-share", "100", "--body-timeout", "1s", "--body-min-rate-kb", "1"}, io.Discard)
	if err != nil || c.MaxBodyMB != 8 || c.ClientShare != 100 || c.BodyTimeout != time.Second || c.BodyMinRateKB != 1 {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--client-share", "0"},
		{"--client-share", "101"},
		{"--max-body-mb", "0"},
		{"--body-timeout", "0s"},
		{"--body-min-rate-kb", "0"},
	} {
		if _, err := parseConfig(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
