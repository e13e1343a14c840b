package main

import (
	"github.com/partita/partita/internal/bench"

	"fmt"
	"io"
	"slices"
	"strings"
)

// Round is one side-by-side comparison: the reports of partita, the
// do-nothing server and Azurite, each taken on a fresh server one after
// the other (any but Partita may be nil).
type Round struct {
	Partita, Null, Azurite *Report
}

// A target is one figure of the performance issue: a ratio taken within
// one round, or a rate of partita's.
type target struct {
	name  string
	min   float64 // met when the median reaches it
	ratio bool    // printed as a ratio (2 decimals) instead of a rate
	value func(Round) (float64, bool)
}

// opsRatio is partita's ops/s of wl over the other server's (picked by
// other) in the same round.
func opsRatio(wl string, other func(Round) *Report) func(Round) (float64, bool) {
	return func(r Round) (float64, bool) {
		p, o := r.Partita.Result(wl), other(r).Result(wl)
		if p == nil || o == nil || o.OpsPerSec == 0 {
			return 0, false
		}
		return p.OpsPerSec / o.OpsPerSec, true
	}
}

// rate is partita's rate for wl, the one the workload is judged by
// (mainRate).
func rate(wl string) func(Round) (float64, bool) {
	return func(r Round) (float64, bool) {
		p := r.Partita.Result(wl)
		if p == nil || mainRate(p) == 0 {
			return 0, false
		}
		return mainRate(p), true
	}
}

func nullOf(r Round) *Report    { return r.Null }
func azuriteOf(r Round) *Report { return r.Azurite }

var targets = []target{
	{"point get ≥ 0.75 of the do-nothing server", 0.75, true, opsRatio("get", nullOf)},
	{"durable point insert ≥ 0.5 of the do-nothing server", 0.5, true, opsRatio("insert", nullOf)},
	{"insert ≥ 10× Azurite", 10, true, opsRatio("insert", azuriteOf)},
	{"get ≥ 10× Azurite", 10, true, opsRatio("get", azuriteOf)},
	{"upsert ≥ 10× Azurite", 10, true, opsRatio("upsert", azuriteOf)},
	{"merge ≥ 10× Azurite", 10, true, opsRatio("merge", azuriteOf)},
	{"delete ≥ 10× Azurite", 10, true, opsRatio("delete", azuriteOf)},
	{"`$batch` of 100 inserts ≥ 150,000 entities/s", 150_000, false, rate("batch")},
	{"range query ≥ 300,000 entities/s returned", 300_000, false, rate("range")},
	{"table scan with a filter ≥ 1,000,000 entities/s examined", 1_000_000, false, rate("table-scan")},
}

// median of vs (not empty); the mean of the middle two for an even count.
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Targets prints the performance issue's targets over rounds: each
// round's figure, the median and whether the median meets the target.
// Ratios are taken within a round (servers measured one after another on
// the same machine state), never across rounds. A target none of whose
// rounds has the figure (Azurite did not run, the workload was not
// selected) is left out.
func Targets(w io.Writer, rounds []Round) {
	if len(rounds) == 0 {
		return
	}
	fmt.Fprintf(w, "Targets (the performance issue): each round's figure, the median over %d round(s), and whether the median meets the target.\n\n", len(rounds))
	roundsHeader(w, []string{"target"}, len(rounds), "met", "---")
	for _, t := range targets {
		cells, vs := perRound(rounds, t.value, t.format)
		if len(vs) == 0 {
			continue
		}
		m := median(vs)
		met := "no"
		if m >= t.min {
			met = "yes"
		}
		if len(vs) < len(rounds) {
			met += fmt.Sprintf(" (%d of %d rounds)", len(vs), len(rounds))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.name, strings.Join(cells, " | "), t.format(m), met)
	}
}

func (t target) format(v float64) string {
	if t.ratio {
		return fmt.Sprintf("%.2f", v)
	}
	return bench.FormatRate(v)
}

// Spread prints each server's main rate per workload over rounds (ops/s;
// entities/s for batch and range, examined/s for the scans), with the
// median and the largest over the smallest: how much a server moved
// between fresh starts of the same code. The do-nothing server's queries
// are left out: its canned page is no query result.
func Spread(w io.Writer, rounds []Round) {
	if len(rounds) == 0 {
		return
	}
	fmt.Fprintf(w, "Rates per round (ops/s; entities/s for batch and range; examined/s for the scans), the median, and max / min over the %d rounds:\n\n", len(rounds))
	roundsHeader(w, []string{"workload", "server"}, len(rounds), "max / min", "---:")
	servers := []struct {
		name string
		of   func(Round) *Report
	}{{"partita", func(r Round) *Report { return r.Partita }}, {"do-nothing", nullOf}, {"Azurite", azuriteOf}}
	for _, wl := range bench.AllWorkloads {
		for _, s := range servers {
			if s.name == "do-nothing" && (wl == "range" || strings.HasSuffix(wl, "-scan")) {
				continue // its canned page is no query result
			}
			cells, vs := perRound(rounds, func(r Round) (float64, bool) {
				res := s.of(r).Result(wl)
				if res == nil {
					return 0, false
				}
				return mainRate(res), true
			}, bench.FormatRate)
			if len(vs) == 0 {
				continue
			}
			spread := "-"
			if lo := slices.Min(vs); lo > 0 {
				spread = fmt.Sprintf("%.2f", slices.Max(vs)/lo)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", wl, s.name, strings.Join(cells, " | "), bench.FormatRate(median(vs)), spread)
		}
	}
}

// perRound evaluates value on every round: a cell per round (format of
// the value, "-" where there is none) and the values found.
func perRound(rounds []Round, value func(Round) (float64, bool), format func(float64) string) (cells []string, vs []float64) {
	cells = make([]string, len(rounds))
	for i, r := range rounds {
		cells[i] = "-"
		if v, ok := value(r); ok {
			vs = append(vs, v)
			cells[i] = format(v)
		}
	}
	return cells, vs
}

// mainRate is the rate a workload is judged by: examined/s for the
// scans, entities/s for batch and range, ops/s otherwise.
func mainRate(r *Result) float64 {
	switch r.Workload {
	case "partition-scan", "table-scan":
		return r.ExaminedPerSec
	case "batch", "range":
		return r.EntitiesPerSec
	}
	return r.OpsPerSec
}

// roundsHeader prints a markdown table's head: the lead columns (left
// aligned), a column per round and the median (right aligned), and last,
// aligned by lastRule.
func roundsHeader(w io.Writer, lead []string, rounds int, last, lastRule string) {
	var head, rule strings.Builder
	for _, c := range lead {
		fmt.Fprintf(&head, "| %s ", c)
		rule.WriteString("|---")
	}
	for i := range rounds {
		fmt.Fprintf(&head, "| round %d ", i+1)
		rule.WriteString("|---:")
	}
	fmt.Fprintf(&head, "| median | %s |", last)
	fmt.Fprintf(&rule, "|---:|%s|", lastRule)
	fmt.Fprintln(w, head.String())
	fmt.Fprintln(w, rule.String())
}
