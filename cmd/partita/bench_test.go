package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	pbench "github.com/partita/partita/internal/bench"
	"github.com/partita/partita/internal/bench/nullserver"
)

// TestBenchAgainstDoNothingServer runs a tiny bench through `partita bench`
// against the in-process do-nothing server and checks the op counts.
func TestBenchAgainstDoNothingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addrc := make(chan net.Addr, 1)
	srvDone := make(chan error, 1)
	var srvOut bytes.Buffer
	go func() { srvDone <- nullserver.Serve(ctx, "127.0.0.1:0", 100, &srvOut, func(a net.Addr) { addrc <- a }) }()
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
		"--server-pid", strconv.Itoa(os.Getpid()), // the do-nothing server runs in this process
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
		// The server's CPU per operation, and per entity for the
		// multi-entity workloads, from its threads' run time in ns.
		if res.ServerCPUSource == "" || (res.ServerCPUSource == "schedstat" && res.ServerCPUUsPerOp <= 0) {
			t.Errorf("%s: server CPU %v µs/op from %q, want a reading", res.Workload, res.ServerCPUUsPerOp, res.ServerCPUSource)
		}
		multi := res.Workload == "batch" || res.Workload == "range" || strings.HasSuffix(res.Workload, "-scan")
		if multi != (res.ServerCPUUsPerEntity > 0) && res.ServerCPUSource == "schedstat" {
			t.Errorf("%s: server CPU per entity %v", res.Workload, res.ServerCPUUsPerEntity)
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
	for _, w := range []string{"insert", "get", "ops/s", "p99 ms", "srv µs/op", "srv µs/entity"} {
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
	stdout.Reset()
	if err := run(ctx, []string{"bench", "--help"}, &stdout, &stderr); err != nil {
		t.Errorf("--help: %v", err)
	}
	help := stdout.String()
	if !strings.Contains(help, "-workload") || !strings.Contains(help, "-server-pid") {
		t.Errorf("help lacks the load generator's flags:\n%s", help)
	}
	// The comparison and the growth runs are internal/cmd/benchcompare's,
	// not the product's.
	for _, dev := range []string{"do-nothing-server", "compare", "growth"} {
		if strings.Contains(help, dev) {
			t.Errorf("help mentions %q:\n%s", dev, help)
		}
		if err := run(ctx, []string{"bench", "--" + dev, "1"}, &stdout, &stderr); err == nil {
			t.Errorf("--%s accepted", dev)
		}
	}
}
