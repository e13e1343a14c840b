package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var examplesParallel = flag.Int("examples.parallel", 3, "TestExamples: examples run at once")

var classesRE = regexp.MustCompile(`(?m)^query classes: (\S*)$`)

// TestExamples builds every program under examples/ (one per pattern of the
// table design guide) and runs each against a real partita server. Each
// program asserts its own results and the query classes the server
// reports, and exits non-zero when one fails. The test logs a table row
// per example with its time, for docs/PATTERNS.md.
func TestExamples(t *testing.T) {
	entries, err := os.ReadDir("../examples")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			names = append(names, e.Name())
		}
	}
	if len(names) < 19 {
		t.Fatalf("found %d examples under examples/, want the guide's 19: %v", len(names), names)
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../examples/...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples: %v\n%s", err, out)
	}
	s := StartServer(t, "")

	type result struct {
		took    time.Duration
		classes string
	}
	var mu sync.Mutex
	results := map[string]result{}
	sem := make(chan struct{}, max(1, *examplesParallel))
	t.Run("run", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, filepath.Join(bin, name), "-endpoint", s.Endpoint())
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				start := time.Now()
				err := cmd.Run()
				took := time.Since(start)
				if err != nil {
					t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
				}
				if !strings.Contains(stdout.String(), "ok "+name+"\n") {
					t.Fatalf("%s did not report ok:\n%s", name, stdout.String())
				}
				m := classesRE.FindStringSubmatch(stdout.String())
				if m == nil || m[1] == "" {
					t.Fatalf("%s ran no query the server classified:\n%s", name, stdout.String())
				}
				mu.Lock()
				results[name] = result{took, m[1]}
				mu.Unlock()
			})
		}
	})
	slices.Sort(names)
	var rows strings.Builder
	for _, n := range names {
		if r, ok := results[n]; ok {
			fmt.Fprintf(&rows, "| %s | %.2f s | %s |\n", n, r.took.Seconds(), strings.ReplaceAll(r.classes, ",", ", "))
		}
	}
	t.Logf("example | time | query classes (%d at once)\n%s", *examplesParallel, rows.String())
}
