package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyParallelRange: --parallel outside 1..256 is refused as the help
// says, instead of 0 or a negative silently becoming 4.
func TestCopyParallelRange(t *testing.T) {
	dir := t.TempDir()
	for p, want := range map[string]string{"0": "at least 1", "-1": "at least 1", "257": "at most 256"} {
		err := run(context.Background(), []string{"copy", "--progress", "none", "--from", filepath.Join(dir, "in.jsonl"), "--to", filepath.Join(dir, "out"), "--parallel", p}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--parallel "+p+": "+want) {
			t.Errorf("--parallel %s: err = %v", p, err)
		}
	}
}

// TestCopyFlagMistakes: flags that would otherwise be ignored or replaced by
// a default without a word are refused.
func TestCopyFlagMistakes(t *testing.T) {
	dir := t.TempDir()
	base := []string{"copy", "--progress", "none", "--from", filepath.Join(dir, "in.jsonl"), "--to", filepath.Join(dir, "out")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--progress-interval", "-1s"}, "--progress-interval -1s: want a positive duration"},
		{[]string{"--verify", "--checkpoint", filepath.Join(dir, "cp")}, "--checkpoint is for a copy"},
	} {
		err := run(context.Background(), append(append([]string{}, base...), tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
