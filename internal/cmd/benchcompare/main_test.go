package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCompareRounds feeds --compare two rounds of reports and checks
// the per-round ratios and their median, and the errors for a malformed
// spec.
func TestBenchCompareRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, get float64) string {
		t.Helper()
		rep := &Report{Results: []Result{{Workload: "get", OpsPerSec: get}}}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p1, n1 := write("p1.json", 30), write("n1.json", 40)
	p2, n2 := write("p2.json", 36), write("n2.json", 40)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"--compare", "partita=" + p1 + ",do-nothing=" + n1 + ";partita=" + p2 + ",do-nothing=" + n2}, &stdout, &stderr); err != nil {
		t.Fatalf("two rounds: %v\n%s", err, stderr.String())
	}
	// 30/40 and 36/40: 0.75 and 0.90, median 0.825 (printed 0.82 or 0.83).
	if want := "| point get ≥ 0.75 of the do-nothing server | 0.75 | 0.90 | 0.8"; !strings.Contains(stdout.String(), want) {
		t.Errorf("two rounds: want %q in:\n%s", want, stdout.String())
	}
	if !strings.Contains(stdout.String(), "| get | partita | 30.0 | 36.0 | 33.0 | 1.20 |") {
		t.Errorf("two rounds: no spread row for partita's get in:\n%s", stdout.String())
	}

	stdout.Reset()
	if err := run(ctx, []string{"--compare", "partita=" + p1 + ",do-nothing=" + n1}, &stdout, &stderr); err != nil {
		t.Fatalf("one round: %v", err)
	}
	for _, want := range []string{"Single-entity operations", "| point get ≥ 0.75 of the do-nothing server | 0.75 | 0.75 | yes |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("one round: want %q in:\n%s", want, stdout.String())
		}
	}

	for spec, want := range map[string]string{
		"partita=" + p1 + ",partita=" + p2:         "given twice in one round",
		"partita=" + p1 + ";do-nothing=" + n1:      "round 2: partita=FILE is required",
		"partita=" + p1 + ",nobody=" + n1:          "unknown label",
		"partita=" + filepath.Join(dir, "missing"): "missing",
	} {
		err := run(ctx, []string{"--compare", spec}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--compare %q: got %v, want an error with %q", spec, err, want)
		}
	}
}
