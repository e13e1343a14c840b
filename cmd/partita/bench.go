package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	pbench "github.com/partita/partita/internal/bench"
)

const benchUsage = `Usage:
  partita bench [flags]                      drive a Table endpoint and report ops/s and latency
  partita bench --do-nothing-server ADDR     serve canned responses (the client/HTTP ceiling);
                                             its canned entity has an --entity-size Payload
  partita bench --growth N [flags]           load one table to N entities, measuring on the way
  partita bench --compare partita=A.json[,do-nothing=B.json][,azurite=C.json][;partita=...]
                                             print the markdown comparison of --json reports and
                                             the targets; rounds separated by ';' give each
                                             round's ratios, their medians and each server's spread

The bench speaks SharedKeyLite to any Table endpoint: partita, Azurite or a
real account. Workloads (--workload, comma list, default all in this order):
  insert          POST entities (Prefer: return-no-content), keys over --partitions, unique RowKeys
  get             point GET of random existing entities
  upsert          PUT without If-Match (insert or replace) of existing keys
  merge           PATCH with If-Match: * of existing keys
  batch           $batch of --batch-size inserts into one partition (new keys)
  range           PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b' (~--range-size rows),
                  following continuation tokens
  partition-scan  PartitionKey eq 'p' and Bucket lt 100 (a non-key filter, 10% match)
  table-scan      Bucket eq 7 over the whole table (0.1% match), following continuations
  mixed           70% get, 10% upsert, 10% merge, 10% range
  delete          DELETE with If-Match: * of what insert created (runs last)
  drop-table      (not in all) Delete Table as one timed operation
insert, batch and delete run --count entities; the others run for --duration
(after --warmup), at most --max-ops operations. Workloads that need data load
--count entities first when the table has none.

Flags:
`

func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := pbench.Defaults
	fs := flag.NewFlagSet("partita bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "Table endpoint, path style (http://host:port/account) or host style")
	fs.StringVar(&cfg.Account, "account", cfg.Account, "account name to sign with")
	fs.StringVar(&cfg.Key, "key", cfg.Key, "account key (base64)")
	workloads := fs.String("workload", "all", "comma list of workloads (see above), or all")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "concurrent requests (goroutines and keep-alive connections)")
	fs.IntVar(&cfg.EntitySize, "entity-size", cfg.EntitySize, "bytes of random payload per entity (the Payload property)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions the keys spread over")
	fs.IntVar(&cfg.Count, "count", cfg.Count, "entities per insert-like workload (insert, batch, delete)")
	fs.IntVar(&cfg.BatchCount, "batch-count", 0, "entities of the measured batch workload when it should differ from --count (0: --count); it then runs after the other workloads, in a table of its own, and the bench's table still gets --count entities by $batch, unmeasured")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "time cap per workload (measured part)")
	fs.DurationVar(&cfg.CountCap, "count-cap", 0, "time cap of insert, batch and delete when it should differ from --duration (0: --duration)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured lead-in of each duration-bound workload")
	fs.IntVar(&cfg.BatchSize, "batch-size", cfg.BatchSize, "operations per $batch changeset (1..100)")
	fs.IntVar(&cfg.RangeSize, "range-size", cfg.RangeSize, "rows one range query asks for")
	fs.IntVar(&cfg.MaxOps, "max-ops", cfg.MaxOps, "operation cap of each duration-bound workload")
	fs.StringVar(&cfg.Table, "table", "", "table to use, created if missing and kept (default: a fresh unique table, deleted at the end)")
	fs.IntVar(&cfg.Preloaded, "preloaded", 0, "entities 0..N-1 of the bench's key layout already exist in --table (same --partitions); insert continues after them")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "timeout of one HTTP request")
	fs.StringVar(&cfg.Progress, "progress", cfg.Progress, "progress on stderr: auto (a bar on a terminal, plain lines otherwise), bar, plain, none")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random key choice and payloads (0: from the clock)")
	jsonOut := fs.Bool("json", false, "print machine-readable JSON results on stdout")
	nullAddr := fs.String("do-nothing-server", "", "run the do-nothing server on `ADDR` (e.g. 127.0.0.1:10099) instead of a bench")
	growth := fs.Int("growth", 0, "growth mode: load one table to `N` entities with $batch; measure get p99 and range at --growth-small and at N; time Delete Table")
	growthSmall := fs.Int("growth-small", 100_000, "first checkpoint of --growth")
	fs.IntVar(&cfg.ServerPID, "server-pid", 0, "report the CPU use of this server process (/proc/PID/stat); --growth also samples its VmRSS")
	serverData := fs.String("server-data", "", "growth: report the size of this data directory")
	growthSettle := fs.Duration("growth-settle", 0, "growth: also measure each checkpoint once the server (--server-pid) has gone idle, waiting at most this long (0: no second measurement)")
	cpuProfile := fs.String("cpuprofile", "", "write the bench client's own CPU profile to `FILE`")
	compare := fs.String("compare", "", "print the markdown comparison of reports: partita=FILE[,do-nothing=FILE][,azurite=FILE], rounds separated by ';'")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "partita bench: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}

	switch {
	case *nullAddr != "":
		return pbench.ServeNull(ctx, *nullAddr, cfg.EntitySize, stdout, nil)
	case *compare != "":
		return benchCompare(*compare, stdout)
	}

	var err error
	if cfg.Workloads, err = pbench.ParseWorkloads(*workloads); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := pbench.NewRunner(cfg, stderr, isTerminal(stderr))
	if err != nil {
		return err
	}

	if *growth > 0 {
		rep, err := r.RunGrowth(ctx, pbench.GrowthConfig{Small: *growthSmall, Target: *growth, ServerPID: cfg.ServerPID, ServerData: *serverData, Settle: *growthSettle})
		if rep != nil {
			if *jsonOut {
				pbench.WriteJSON(stdout, rep)
			} else {
				pbench.WriteGrowth(stdout, rep)
			}
		}
		return err
	}

	rep, err := r.Run(ctx)
	if rep != nil {
		if *jsonOut {
			if werr := pbench.WriteJSON(stdout, rep); werr != nil {
				return werr
			}
		} else {
			pbench.WriteText(stdout, rep)
		}
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted")
	}
	return err
}

func benchCompare(spec string, stdout io.Writer) error {
	var rounds []pbench.Round
	for _, group := range strings.Split(spec, ";") {
		if strings.TrimSpace(group) == "" {
			continue
		}
		var r pbench.Round
		for _, part := range strings.Split(group, ",") {
			label, file, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return fmt.Errorf("--compare: %q: want label=file", part)
			}
			var slot **pbench.Report
			switch strings.ToLower(label) {
			case "partita":
				slot = &r.Partita
			case "do-nothing", "null":
				slot = &r.Null
			case "azurite":
				slot = &r.Azurite
			default:
				return fmt.Errorf("--compare: unknown label %q (want partita, do-nothing, azurite)", label)
			}
			if *slot != nil {
				return fmt.Errorf("--compare: %s given twice in one round (separate rounds with ';')", label)
			}
			rep, err := pbench.ReadReport(file)
			if err != nil {
				return fmt.Errorf("--compare: %w", err)
			}
			*slot = rep
		}
		if r.Partita == nil {
			return fmt.Errorf("--compare: round %d: partita=FILE is required", len(rounds)+1)
		}
		rounds = append(rounds, r)
	}
	if len(rounds) == 0 {
		return errors.New("--compare: partita=FILE is required")
	}
	if len(rounds) == 1 {
		r := rounds[0]
		pbench.Compare(stdout, r.Partita, r.Null, r.Azurite)
		fmt.Fprintln(stdout)
		pbench.Targets(stdout, rounds)
		return nil
	}
	pbench.Targets(stdout, rounds)
	fmt.Fprintln(stdout)
	pbench.Spread(stdout, rounds)
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
