package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// CountText is "count N", with the batch workload's own count when it
// has one.
func (s Settings) CountText() string {
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
		s.Concurrency, s.EntitySize, s.Partitions, s.CountText(), s.Duration, s.Warmup, s.BatchSize, s.RangeSize, rep.NumCPU, rep.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tops\tops/s\tentities/s\texamined/s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\terrors\tsecs\tstopped by\tcores cli/srv/all\tsrv µs/op\tsrv µs/entity\t")
	for _, r := range rep.Results {
		ex := "-"
		if r.Examined > 0 {
			ex = FormatRate(r.ExaminedPerSec)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t\n",
			r.Workload, r.Ops, FormatRate(r.OpsPerSec), FormatRate(r.EntitiesPerSec), ex,
			FormatMs(r.P50Ms), FormatMs(r.P99Ms), FormatMs(r.P999Ms), FormatMs(r.MaxMs), r.Errors, r.Seconds, r.StoppedBy, FormatCores(&r),
			FormatUs(r.ServerCPUUsPerOp), FormatUs(r.ServerCPUUsPerEntity))
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

// FormatCores shows the client/server/machine cores of r ("-" for unknown).
func FormatCores(r *Result) string {
	if r == nil || r.CPUMachine == 0 {
		return "-"
	}
	srv := "-"
	if r.CPUServer > 0 {
		srv = fmt.Sprintf("%.2f", r.CPUServer)
	}
	return fmt.Sprintf("%.2f / %s / %.2f", r.CPUClient, srv, r.CPUMachine)
}

// FormatUs prints a CPU time in µs with 3 significant digits or so, "-"
// for none.
func FormatUs(v float64) string {
	if v == 0 {
		return "-"
	}
	return FormatRate(v)
}

// FormatRate prints a rate with 3 significant digits or so.
func FormatRate(v float64) string {
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

// FormatMs prints milliseconds, "-" for none.
func FormatMs(v float64) string {
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

// Result is rep's result of workload, nil when it has none (or rep is nil).
func (rep *Report) Result(workload string) *Result {
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
