package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// suiteRun is an external test suite's command (pytest, mvn, node --test)
// for runSuite.
type suiteRun struct {
	name string        // in messages, e.g. "pytest"
	max  time.Duration // at most this long; less when the test's deadline is nearer
	dir  string
	env  []string
	argv []string
	// keep, when set, tells which output lines go to the test log.
	keep func(line string) bool
	// hint is added to the message of a failing run.
	hint string
}

// runSuite runs r, streaming its output to the test log, and fails the
// test when the command fails or does not finish in time.
func runSuite(t *testing.T, r suiteRun) {
	t.Helper()
	budget := r.max
	if d, ok := t.Deadline(); ok {
		if left := time.Until(d) - 15*time.Second; left < budget {
			budget = left
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if r.keep == nil || r.keep(sc.Text()) {
				t.Log(sc.Text())
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Logf("running %s in %s", strings.Join(r.argv, " "), r.dir)
	start := time.Now()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	t.Logf("%s finished in %v", r.name, time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v", r.name, budget)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("%s failed (exit code %d); see the output above%s", r.name, exit.ExitCode(), r.hint)
	} else if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
}
