package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestHelpAndUsage: help that was asked for goes to stdout and succeeds,
// whichever way it was asked; a mistake goes to stderr with the usage and
// fails with errUsage (exit status 2).
func TestHelpAndUsage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		ok   bool
		out  string // in stdout when ok, in stderr otherwise
	}{
		{[]string{"help"}, true, "partita serve [flags]"},
		{[]string{"--help"}, true, "partita serve [flags]"},
		{[]string{"help", "serve"}, true, "-max-connections"},
		{[]string{"serve", "--help"}, true, "-max-connections"},
		{[]string{"help", "copy"}, true, "-checkpoint"},
		{[]string{"check", "-h"}, true, "Usage: partita check"},
		{[]string{"help", "nope"}, false, `unknown command "nope"`},
		{[]string{"version", "extra"}, false, `unexpected argument "extra"`},
		{[]string{"check", "--no-such-flag"}, false, "Usage: partita check"},
		{[]string{"advise", "stray"}, false, `unexpected argument "stray"`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(ctx, tc.args, &stdout, &stderr)
		name := strings.Join(tc.args, " ")
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if !strings.Contains(stdout.String(), tc.out) {
				t.Errorf("%s: stdout lacks %q:\n%s", name, tc.out, stdout.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("%s: stderr %q, want nothing", name, stderr.String())
			}
			continue
		}
		if !errors.Is(err, errUsage) {
			t.Errorf("%s: err %v, want errUsage", name, err)
		}
		if !strings.Contains(stderr.String(), tc.out) {
			t.Errorf("%s: stderr lacks %q:\n%s", name, tc.out, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: stdout %q, want nothing", name, stdout.String())
		}
	}
}
