package main

import (
	"github.com/partita/partita/internal/bench"

	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadReport reads a --json report.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Compare prints the markdown tables of scripts/bench-compare from the
// --json reports of partita, the do-nothing server and Azurite (any but
// partita may be nil).
func Compare(w io.Writer, partita, null, azurite *Report) {
	if partita == nil {
		fmt.Fprintln(w, "no partita report")
		return
	}
	s := partita.Settings
	fmt.Fprintf(w, "Settings: concurrency %d, entity payload %d B, %d partitions, %s, duration %s per workload (+%s warmup), batch %d, range %d rows; client %s on %d CPUs.\n\n",
		s.Concurrency, s.EntitySize, s.Partitions, s.CountText(), s.Duration, s.Warmup, s.BatchSize, s.RangeSize, partita.GoVersion, partita.NumCPU)

	ratio := func(a, b *Result) string {
		if a == nil || b == nil || b.OpsPerSec == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a.OpsPerSec/b.OpsPerSec)
	}
	cell := func(r *Result) string {
		if r == nil {
			return "-"
		}
		return bench.FormatRate(r.OpsPerSec)
	}
	p99 := func(r *Result) string {
		if r == nil {
			return "-"
		}
		return bench.FormatMs(r.P99Ms)
	}
	errs := func(r *Result) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprint(r.Errors)
	}

	fmt.Fprintln(w, "Single-entity operations (ops/s, higher is better; p99 latency in ms):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | partita ops/s | partita p99 | do-nothing ops/s | partita / do-nothing | Azurite ops/s | Azurite p99 | partita / Azurite | errors (partita / do-nothing / Azurite) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, wl := range []string{"insert", "get", "upsert", "merge", "delete", "mixed"} {
		p, n, a := partita.Result(wl), null.Result(wl), azurite.Result(wl)
		if p == nil && n == nil && a == nil {
			continue
		}
		nr := "-"
		if wl == "insert" || wl == "get" {
			nr = ratio(p, n)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |\n", wl, cell(p), p99(p), cell(n), nr, cell(a), p99(a), ratio(p, a), errs(p), errs(n), errs(a))
	}
	fmt.Fprintln(w)

	ents := func(r *Result) string {
		if r == nil {
			return "-"
		}
		return bench.FormatRate(r.EntitiesPerSec)
	}
	exam := func(r *Result) string {
		if r == nil || r.Examined == 0 {
			return "-"
		}
		return bench.FormatRate(r.ExaminedPerSec)
	}
	entRatio := func(a, b *Result) string {
		if a == nil || b == nil || b.EntitiesPerSec == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a.EntitiesPerSec/b.EntitiesPerSec)
	}
	fmt.Fprintln(w, "Multi-entity operations (entities/s: written for batch, returned for queries; examined/s for scans):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | partita entities/s | partita examined/s | partita ops/s | partita p99 | Azurite entities/s | Azurite ops/s | Azurite p99 | partita / Azurite | errors (partita / Azurite) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, wl := range []string{"batch", "range", "partition-scan", "table-scan"} {
		p, a := partita.Result(wl), azurite.Result(wl)
		if p == nil && a == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", wl, ents(p), exam(p), cell(p), p99(p), ents(a), cell(a), p99(a), entRatio(p, a), errs(p), errs(a))
	}
	if azurite == nil {
		fmt.Fprintln(w, "\n(Azurite did not run: its columns are empty.)")
	}

	fmt.Fprintf(w, "\nCPU: cores kept busy on average, bench client / server / whole machine (%d CPUs; the machine column includes every other process):\n\n", partita.NumCPU)
	fmt.Fprintln(w, "| workload | partita | do-nothing | Azurite |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range partita.Results {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.Workload, bench.FormatCores(&r), bench.FormatCores(null.Result(r.Workload)), bench.FormatCores(azurite.Result(r.Workload)))
	}
	var notes []string
	for _, x := range []struct {
		name string
		rep  *Report
	}{{"partita", partita}, {"do-nothing", null}, {"Azurite", azurite}} {
		if x.rep == nil {
			continue
		}
		for _, r := range x.rep.Results {
			if r.FirstError != "" {
				notes = append(notes, fmt.Sprintf("- %s %s: %d errors, first: `%s`", x.name, r.Workload, r.Errors, strings.ReplaceAll(r.FirstError, "`", "'")))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nErrors:")
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}
