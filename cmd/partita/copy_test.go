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
