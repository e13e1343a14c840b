package main

import (
	"github.com/partita/partita/internal/bench"

	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// GrowthConfig is `benchcompare --growth N`: how a server behaves as one
// table grows from Small to Target entities.
type GrowthConfig struct {
	Small  int // first checkpoint (100,000)
	Target int // final size
	// ServerPID, when set, is sampled for VmRSS (Linux /proc).
	ServerPID int
	// ServerData, when set, is a directory whose size is reported.
	ServerData string
	// LoadTimeout caps each load phase.
	LoadTimeout time.Duration
	// Settle, when positive (and ServerPID is set), measures each
	// checkpoint a second time once the server has gone idle (its
	// compactions done), waiting at most this long.
	Settle time.Duration
}

// GrowthPoint is the measurements at one table size.
type GrowthPoint struct {
	Entities        int64   `json:"entities"`
	LoadSeconds     float64 `json:"load_seconds"`      // this load phase
	LoadEntitiesSec float64 `json:"load_entities_sec"` // this load phase
	LoadErrors      int64   `json:"load_errors"`
	Get             Result  `json:"get"`
	Range           Result  `json:"range"`
	RSSMaxKiB       int64   `json:"rss_max_kib,omitempty"` // max VmRSS so far
	RSSNowKiB       int64   `json:"rss_now_kib,omitempty"`
	DataBytes       int64   `json:"data_bytes,omitempty"`
	// Settled is the second measurement, after the server went idle.
	Settled *SettledPoint `json:"settled,omitempty"`
}

// SettledPoint is a checkpoint measured again once the server was idle.
type SettledPoint struct {
	WaitSeconds float64 `json:"wait_seconds"` // until idle (or the cap)
	Idle        bool    `json:"idle"`         // false: the cap came first
	Get         Result  `json:"get"`
	Range       Result  `json:"range"`
}

// GrowthReport is the result of --growth.
type GrowthReport struct {
	Endpoint  string        `json:"endpoint"`
	Table     string        `json:"table"`
	Started   time.Time     `json:"started"`
	Settings  Settings      `json:"settings"`
	Points    []GrowthPoint `json:"points"`
	Drop      Result        `json:"drop_table"`
	RSSMaxKiB int64         `json:"rss_max_kib,omitempty"`
	DataAfter int64         `json:"data_bytes_after_drop,omitempty"`
	Seconds   float64       `json:"seconds"`
}

// rssSampler polls VmRSS of a process.
type rssSampler struct {
	pid  int
	max  atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

// readVmRSS returns VmRSS of pid in KiB from /proc/PID/status.
func readVmRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func startRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{})}
	if pid <= 0 {
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() int64 {
	if s.pid <= 0 {
		return 0
	}
	v, err := readVmRSS(s.pid)
	if err != nil {
		return 0
	}
	for {
		m := s.max.Load()
		if v <= m || s.max.CompareAndSwap(m, v) {
			return v
		}
	}
}

func (s *rssSampler) close() {
	if s.pid > 0 {
		close(s.stop)
		s.wg.Wait()
	}
}

func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// waitIdle waits until the server process has used under a tenth of a core
// over five seconds (its flushes and compactions are done), at most max.
func waitIdle(ctx context.Context, pid int, max time.Duration, log io.Writer) (secs float64, idle bool) {
	t0 := time.Now()
	fmt.Fprintf(log, "benchcompare: growth: waiting for the server to go idle (at most %s)\n", max)
	for time.Since(t0) < max && ctx.Err() == nil {
		a := bench.ProcessCPUSeconds(pid)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		if (bench.ProcessCPUSeconds(pid)-a)/5 < 0.1 {
			secs = time.Since(t0).Seconds()
			fmt.Fprintf(log, "benchcompare: growth: idle after %.0f s\n", secs)
			return secs, true
		}
	}
	secs = time.Since(t0).Seconds()
	fmt.Fprintf(log, "benchcompare: growth: still busy after %.0f s; measuring anyway\n", secs)
	return secs, false
}

// runGrowth loads r's table to g.Small entities with $batch, measures point
// gets and range reads, loads on to g.Target, measures again, and times
// Delete Table.
func runGrowth(ctx context.Context, r *bench.Runner, g GrowthConfig) (*GrowthReport, error) {
	cfg := r.Config()
	P := uint64(cfg.Partitions)
	roundUp := func(n int) uint64 { return (uint64(n) + P - 1) / P * P }
	small, target := roundUp(g.Small), roundUp(g.Target)
	if small > target {
		small = target
	}
	if g.LoadTimeout <= 0 {
		g.LoadTimeout = 4 * time.Hour
	}
	rep := &GrowthReport{Endpoint: r.Endpoint(), Table: r.Table(), Started: time.Now().UTC(), Settings: Settings{
		Workloads: []string{"load", "get", "range", "drop-table"}, Concurrency: cfg.Concurrency, EntitySize: cfg.EntitySize,
		Partitions: cfg.Partitions, Count: int(target), Duration: cfg.Duration.String(), Warmup: cfg.Warmup.String(),
		BatchSize: cfg.BatchSize, RangeSize: cfg.RangeSize, MaxOps: cfg.MaxOps,
	}}
	t0 := time.Now()
	log := r.Log()
	if err := r.CreateTable(ctx); err != nil {
		return nil, fmt.Errorf("growth: %w", err)
	}
	rss := startRSS(g.ServerPID)
	defer rss.close()
	defer r.DeleteTableUnlessDropped(ctx)

	checkpoint := func(from, to uint64) GrowthPoint {
		fmt.Fprintf(log, "benchcompare: growth: loading entities %d..%d\n", from, to)
		ld := r.Load(ctx, from, to, g.LoadTimeout)
		p := GrowthPoint{Entities: r.TableSize(), LoadSeconds: ld.Seconds, LoadEntitiesSec: ld.EntitiesPerSec, LoadErrors: ld.Errors}
		if ld.FirstError != "" {
			fmt.Fprintf(log, "benchcompare: growth: load errors: %d, first: %s\n", ld.Errors, ld.FirstError)
		}
		if ctx.Err() != nil {
			return p
		}
		p.Get = r.RunWorkload(ctx, "get")
		p.Range = r.RunWorkload(ctx, "range")
		if g.Settle > 0 && g.ServerPID > 0 && ctx.Err() == nil {
			st := &SettledPoint{}
			st.WaitSeconds, st.Idle = waitIdle(ctx, g.ServerPID, g.Settle, log)
			st.Get = r.RunWorkload(ctx, "get")
			st.Range = r.RunWorkload(ctx, "range")
			p.Settled = st
		}
		p.RSSNowKiB = rss.sample()
		p.RSSMaxKiB = rss.max.Load()
		p.DataBytes = dirSize(g.ServerData)
		return p
	}
	rep.Points = append(rep.Points, checkpoint(0, small))
	if target > small && ctx.Err() == nil {
		rep.Points = append(rep.Points, checkpoint(small, target))
	}
	if ctx.Err() == nil {
		rep.Drop = r.DropTable(ctx)
		// Give a background purge a moment, then see what is left.
		rss.sample()
		if g.ServerData != "" {
			time.Sleep(2 * time.Second)
			rep.DataAfter = dirSize(g.ServerData)
		}
	}
	rep.RSSMaxKiB = rss.max.Load()
	rep.Seconds = time.Since(t0).Seconds()
	return rep, ctx.Err()
}

// WriteGrowth prints the growth report as markdown.
func WriteGrowth(w io.Writer, rep *GrowthReport) {
	s := rep.Settings
	fmt.Fprintf(w, "Growth: %s, table %s; concurrency %d, entity payload %d B, %d partitions, load with $batch of %d; get/range %s each (+%s warmup).\n\n",
		rep.Endpoint, rep.Table, s.Concurrency, s.EntitySize, s.Partitions, s.BatchSize, s.Duration, s.Warmup)
	fmt.Fprint(w, "| measure |")
	for _, p := range rep.Points {
		fmt.Fprintf(w, " at %d |", p.Entities)
	}
	fmt.Fprint(w, "\n|---|")
	for range rep.Points {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	row := func(name string, f func(p GrowthPoint) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, p := range rep.Points {
			fmt.Fprintf(w, " %s |", f(p))
		}
		fmt.Fprintln(w)
	}
	var cum float64
	row("load time of this step (s)", func(p GrowthPoint) string { return fmt.Sprintf("%.1f", p.LoadSeconds) })
	row("load time, cumulative (s)", func(p GrowthPoint) string { cum += p.LoadSeconds; return fmt.Sprintf("%.1f", cum) })
	row("load entities/s (this step)", func(p GrowthPoint) string { return bench.FormatRate(p.LoadEntitiesSec) })
	row("load errors", func(p GrowthPoint) string { return fmt.Sprint(p.LoadErrors) })
	row("point get ops/s", func(p GrowthPoint) string { return bench.FormatRate(p.Get.OpsPerSec) })
	row("point get p50 ms", func(p GrowthPoint) string { return bench.FormatMs(p.Get.P50Ms) })
	row("point get p99 ms", func(p GrowthPoint) string { return bench.FormatMs(p.Get.P99Ms) })
	row("point get errors", func(p GrowthPoint) string { return fmt.Sprint(p.Get.Errors) })
	row("range entities/s", func(p GrowthPoint) string { return bench.FormatRate(p.Range.EntitiesPerSec) })
	row("range p99 ms", func(p GrowthPoint) string { return bench.FormatMs(p.Range.P99Ms) })
	row("range errors", func(p GrowthPoint) string { return fmt.Sprint(p.Range.Errors) })
	if rep.Points[0].Settled != nil {
		settled := func(f func(st *SettledPoint) string) func(p GrowthPoint) string {
			return func(p GrowthPoint) string {
				if p.Settled == nil {
					return "-"
				}
				return f(p.Settled)
			}
		}
		row("wait until the server is idle (s)", settled(func(st *SettledPoint) string {
			if !st.Idle {
				return fmt.Sprintf("%.0f (still busy)", st.WaitSeconds)
			}
			return fmt.Sprintf("%.0f", st.WaitSeconds)
		}))
		row("idle: point get ops/s", settled(func(st *SettledPoint) string { return bench.FormatRate(st.Get.OpsPerSec) }))
		row("idle: point get p99 ms", settled(func(st *SettledPoint) string { return bench.FormatMs(st.Get.P99Ms) }))
		row("idle: range entities/s", settled(func(st *SettledPoint) string { return bench.FormatRate(st.Range.EntitiesPerSec) }))
		row("idle: errors (get / range)", settled(func(st *SettledPoint) string { return fmt.Sprintf("%d / %d", st.Get.Errors, st.Range.Errors) }))
	}
	row("server VmRSS max so far (MiB)", func(p GrowthPoint) string { return mib(p.RSSMaxKiB << 10) })
	row("server VmRSS now (MiB)", func(p GrowthPoint) string { return mib(p.RSSNowKiB << 10) })
	row("data dir (MiB)", func(p GrowthPoint) string { return mib(p.DataBytes) })
	fmt.Fprintln(w)
	if rep.Drop.Workload != "" {
		if rep.Drop.Errors > 0 {
			fmt.Fprintf(w, "Delete Table: failed: %s\n", rep.Drop.FirstError)
		} else {
			fmt.Fprintf(w, "Delete Table of %d entities: %.1f ms", rep.Drop.Entities, rep.Drop.MaxMs)
			if rep.DataAfter > 0 {
				fmt.Fprintf(w, "; data dir 2 s later: %s MiB", mib(rep.DataAfter))
			}
			fmt.Fprintln(w, ".")
		}
	}
	if rep.RSSMaxKiB > 0 {
		fmt.Fprintf(w, "Server VmRSS max over the run: %s MiB.\n", mib(rep.RSSMaxKiB<<10))
	}
	fmt.Fprintf(w, "Total %.0f s.\n", rep.Seconds)
}

func mib(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}
