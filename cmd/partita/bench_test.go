package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pbench "github.com/partita/partita/internal/bench"
)

// TestBenchAgainstDoNothingServer runs a tiny bench through `partita bench`
// against the in-process do-nothing server and checks the op counts.
func TestBenchAgainstDoNothingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addrc := make(chan net.Addr, 1)
	srvDone := make(chan error, 1)
	var srvOut bytes.Buffer
	go func() { srvDone <- pbench.ServeNull(ctx, "127.0.0.1:0", 100, &srvOut, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-srvDone:
		t.Fatalf("do-nothing server: %v", err)
	}

	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench",
		"--endpoint", "http://" + addr.String() + "/devstoreaccount1",
		"--count", "200", "--concurrency", "4", "--max-ops", "200",
		"--batch-size", "50", "--warmup", "0", "--duration", "1m",
		"--entity-size", "100", "--json", "--progress", "none",
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var rep pbench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	want := map[string]int64{"batch": 4} // 200 entities in batches of 50
	if len(rep.Results) != len(pbench.AllWorkloads) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(pbench.AllWorkloads))
	}
	for i, res := range rep.Results {
		if res.Workload != pbench.AllWorkloads[i] {
			t.Errorf("result %d is %s, want %s", i, res.Workload, pbench.AllWorkloads[i])
		}
		n, ok := want[res.Workload]
		if !ok {
			n = 200
		}
		if res.Ops != n || res.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors (%s); want %d ops, 0 errors", res.Workload, res.Ops, res.Errors, res.FirstError, n)
		}
		if res.P50Ms <= 0 || res.P99Ms < res.P50Ms || res.P999Ms < res.P99Ms {
			t.Errorf("%s: latency quantiles %v/%v/%v out of order", res.Workload, res.P50Ms, res.P99Ms, res.P999Ms)
		}
	}
	if r := rep.Results[4]; r.Entities != 200 {
		t.Errorf("batch wrote %d entities, want 200", r.Entities)
	}

	// The text report names every workload.
	stdout.Reset()
	err = run(ctx, []string{"bench", "--endpoint", "http://" + addr.String() + "/devstoreaccount1",
		"--workload", "insert,get", "--count", "20", "--max-ops", "20", "--concurrency", "2", "--warmup", "0", "--progress", "plain"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	for _, w := range []string{"insert", "get", "ops/s", "p99 ms"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("text report lacks %q:\n%s", w, stdout.String())
		}
	}
	cancel()
	if err := <-srvDone; err != nil {
		t.Errorf("do-nothing server: %v", err)
	}
}

func TestBenchFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ctx := context.Background()
	if err := run(ctx, []string{"bench", "--workload", "nope"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "unknown workload") {
		t.Errorf("--workload nope: %v", err)
	}
	if err := run(ctx, []string{"bench", "--batch-size", "101"}, &stdout, &stderr); err == nil {
		t.Errorf("--batch-size 101 accepted")
	}
	if err := run(ctx, []string{"bench", "--help"}, &stdout, &stderr); err != nil {
		t.Errorf("--help: %v", err)
	}
	if !strings.Contains(stderr.String(), "--do-nothing-server") {
		t.Errorf("help lacks --do-nothing-server:\n%s", stderr.String())
	}
}

// TestBenchCompareRounds feeds --compare two rounds of reports and checks
// the per-round ratios and their median, and the errors for a malformed
// spec.
func TestBenchCompareRounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, get float64) string {
		t.Helper()
		rep := &pbench.Report{Results: []pbench.Result{{Workload: "get", OpsPerSec: get}}}
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
	if err := run(ctx, []string{"bench", "--compare", "partita=" + p1 + ",do-nothing=" + n1 + ";partita=" + p2 + ",do-nothing=" + n2}, &stdout, &stderr); err != nil {
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
	if err := run(ctx, []string{"bench", "--compare", "partita=" + p1 + ",do-nothing=" + n1}, &stdout, &stderr); err != nil {
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
		err := run(ctx, []string{"bench", "--compare", spec}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--compare %q: got %v, want an error with %q", spec, err, want)
		}
	}
}
