package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCPUTable: per-op and per-entity CPU of each server, partita's over
// the do-nothing server's per point get within each round, the median and
// the ceilings.
func TestCPUTable(t *testing.T) {
	round := func(pGet, pInsert, pBatchEnt, nGet, aGet float64) Round {
		return Round{
			Partita: &Report{Results: []Result{
				{Workload: "get", ServerCPUUsPerOp: pGet},
				{Workload: "insert", ServerCPUUsPerOp: pInsert},
				{Workload: "batch", ServerCPUUsPerOp: pBatchEnt * 100, ServerCPUUsPerEntity: pBatchEnt},
			}},
			Null:    &Report{Results: []Result{{Workload: "get", ServerCPUUsPerOp: nGet}, {Workload: "insert", ServerCPUUsPerOp: 40}}},
			Azurite: &Report{Results: []Result{{Workload: "get", ServerCPUUsPerOp: aGet}}},
		}
	}
	var b bytes.Buffer
	CPUTable(&b, []Round{round(60, 200, 10, 50, 700)})
	out := b.String()
	for _, want := range []string{
		"| get | op | 60.0 | 50.0 | 700 | 1.20 | ≤ 1.40 | yes |",
		"| insert | op | 200 | 40.0 | - | 4.00 | ≤ 2.50 | no |",
		"| batch | entity | 10.0 | - | - | 0.20 | ≤ 0.25 | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("one round: want %q in:\n%s", want, out)
		}
	}

	b.Reset()
	CPUTable(&b, []Round{round(60, 200, 10, 50, 700), round(90, 100, 20, 50, 800), round(75, 150, 15, 50, 900)})
	out = b.String()
	// get ratios 1.20, 1.80, 1.50: median 1.50, over the ceiling.
	for _, want := range []string{
		"| get | op | 75.0 | 50.0 | 800 | 1.50 (1.20, 1.80, 1.50) | ≤ 1.40 | no |",
		"| insert | op | 150 | 40.0 | - | 3.00 (4.00, 2.00, 3.00) | ≤ 2.50 | no |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("three rounds: want %q in:\n%s", want, out)
		}
	}

	b.Reset()
	CPUTable(&b, []Round{{Partita: &Report{Results: []Result{{Workload: "get", OpsPerSec: 5}}}}})
	if b.Len() != 0 {
		t.Errorf("no server CPU in the reports: want no table, got:\n%s", b.String())
	}
}
