package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// countText is "count N", with the batch workload's own count when it
// has one.
func (s Settings) countText() string {
	if s.BatchCount > 0 && s.BatchCount != s.Count {
		return fmt.Sprintf("count %d (batch %d)", s.Count, s.BatchCount)
	}
	return fmt.Sprintf("count %d", s.Count)
}

// WriteText prints a human-readable table of rep.
func WriteText(w io.Writer, rep *Report) {
	s := rep.Settings
	fmt.Fprintf(w, "partita bench: %s, table %s\n", rep.Endpoint, rep.Table)
	fmt.Fprintf(w, "concurrency %d, entity %d B, %d partitions, %s, duration %s (+%s warmup), batch %d, range %d rows, %d CPUs, %s\n\n",
		s.Concurrency, s.EntitySize, s.Partitions, s.countText(), s.Duration, s.Warmup, s.BatchSize, s.RangeSize, rep.NumCPU, rep.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tops\tops/s\tentities/s\texamined/s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\terrors\tsecs\tstopped by\tcores cli/srv/all\t")
	for _, r := range rep.Results {
		ex := "-"
		if r.Examined > 0 {
			ex = fmtRate(r.ExaminedPerSec)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%s\t\n",
			r.Workload, r.Ops, fmtRate(r.OpsPerSec), fmtRate(r.EntitiesPerSec), ex,
			fmtMs(r.P50Ms), fmtMs(r.P99Ms), fmtMs(r.P999Ms), fmtMs(r.MaxMs), r.Errors, r.Seconds, r.StoppedBy, fmtCores(&r))
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.FirstError != "" {
			fmt.Fprintf(w, "\n%s: %d errors; first: %s", r.Workload, r.Errors, r.FirstError)
		}
	}
	fmt.Fprintf(w, "\ntotal %.1fs\n", rep.Seconds)
}

// WriteJSON prints rep as indented JSON.
func WriteJSON(w io.Writer, rep any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// fmtCores shows the client/server/machine cores of r ("-" for unknown).
func fmtCores(r *Result) string {
	if r == nil || r.CPUMachine == 0 {
		return "-"
	}
	srv := "-"
	if r.CPUServer > 0 {
		srv = fmt.Sprintf("%.2f", r.CPUServer)
	}
	return fmt.Sprintf("%.2f / %s / %.2f", r.CPUClient, srv, r.CPUMachine)
}

func fmtRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtMs(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

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

func (rep *Report) result(workload string) *Result {
	if rep == nil {
		return nil
	}
	for i := range rep.Results {
		if rep.Results[i].Workload == workload {
			return &rep.Results[i]
		}
	}
	return nil
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
		s.Concurrency, s.EntitySize, s.Partitions, s.countText(), s.Duration, s.Warmup, s.BatchSize, s.RangeSize, partita.GoVersion, partita.NumCPU)

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
		return fmtRate(r.OpsPerSec)
	}
	p99 := func(r *Result) string {
		if r == nil {
			return "-"
		}
		return fmtMs(r.P99Ms)
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
		p, n, a := partita.result(wl), null.result(wl), azurite.result(wl)
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
		return fmtRate(r.EntitiesPerSec)
	}
	exam := func(r *Result) string {
		if r == nil || r.Examined == 0 {
			return "-"
		}
		return fmtRate(r.ExaminedPerSec)
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
		p, a := partita.result(wl), azurite.result(wl)
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
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.Workload, fmtCores(&r), fmtCores(null.result(r.Workload)), fmtCores(azurite.result(r.Workload)))
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
