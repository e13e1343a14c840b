package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/partita/partita/internal/bench"
)

// The server CPU per request (issue #22): what each operation costs the
// server in CPU time, set beside what a point get costs the do-nothing
// server measured in the same round. Unlike a rate, it does not depend on
// the disk or on how busy the bench client keeps the shared cores.

// cpuTargets are the ceilings on partita's CPU per operation (per
// entity for batch) over the do-nothing server's per point get.
var cpuTargets = map[string]float64{
	"get": 1.4, "insert": 2.5, "upsert": 2.5, "merge": 2.5, "delete": 2.5, "batch": 0.25,
}

// cpuWorkloads are the rows of the table, in order; the multi-entity ones
// are per entity (written, returned, examined).
var cpuWorkloads = []string{"get", "insert", "upsert", "merge", "delete", "mixed", "batch", "range", "partition-scan", "table-scan"}

// perEntity reports whether wl's CPU is given per entity.
func perEntity(wl string) bool {
	switch wl {
	case "batch", "range", "partition-scan", "table-scan":
		return true
	}
	return false
}

// cpuUs is r's server CPU in µs per operation, or per entity for the
// multi-entity workloads (false when r has none).
func cpuUs(r *Result) (float64, bool) {
	if r == nil {
		return 0, false
	}
	v := r.ServerCPUUsPerOp
	if perEntity(r.Workload) {
		v = r.ServerCPUUsPerEntity
	}
	return v, v > 0
}

// cpuRatio is partita's CPU for wl over the do-nothing server's per point
// get, within round r.
func cpuRatio(wl string) func(Round) (float64, bool) {
	return func(r Round) (float64, bool) {
		p, ok := cpuUs(r.Partita.Result(wl))
		n, okN := cpuUs(r.Null.Result("get"))
		if !ok || !okN {
			return 0, false
		}
		return p / n, true
	}
}

// CPUTable prints the server CPU per operation of partita, the do-nothing
// server and Azurite (medians over rounds), partita's over the do-nothing
// server's per point get (each round's ratio and their median) and the
// issue's ceiling. Rows no round measured are left out; nothing is
// printed when no report has server CPU (--server-pid not given).
func CPUTable(w io.Writer, rounds []Round) {
	med := func(of func(Round) *Report, wl string) string {
		var vs []float64
		for _, r := range rounds {
			if v, ok := cpuUs(of(r).Result(wl)); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return "-"
		}
		return bench.FormatUs(median(vs))
	}
	partitaOf := func(r Round) *Report { return r.Partita }
	var rows []string
	for _, wl := range cpuWorkloads {
		p, n, a := med(partitaOf, wl), med(nullOf, wl), med(azuriteOf, wl)
		if p == "-" && n == "-" && a == "-" {
			continue
		}
		if perEntity(wl) {
			n = "-" // the do-nothing server's canned answers are no entities
		}
		unit := "op"
		if perEntity(wl) {
			unit = "entity"
			if strings.HasSuffix(wl, "-scan") {
				unit = "entity examined"
			}
		}
		ratio, target, met := "-", "-", "-"
		cells, vs := perRound(rounds, cpuRatio(wl), func(v float64) string { return fmt.Sprintf("%.2f", v) })
		if len(vs) > 0 {
			m := median(vs)
			ratio = fmt.Sprintf("%.2f", m)
			if len(rounds) > 1 {
				ratio += " (" + strings.Join(cells, ", ") + ")"
			}
			if t, ok := cpuTargets[wl]; ok {
				target, met = fmt.Sprintf("≤ %.2f", t), "no"
				if m <= t {
					met = "yes"
				}
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", wl, unit, p, n, a, ratio, target, met))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "Server CPU per request (µs of CPU time, all threads, during the measured part; median over %d round(s)), and partita's over the do-nothing server's per point get in the same round:\n\n", len(rounds))
	fmt.Fprintln(w, "| workload | per | partita µs | do-nothing µs | Azurite µs | partita / do-nothing get | target | met |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}
