package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	pbench "github.com/partita/partita/internal/bench"
)

const benchUsage = `Usage:
  partita bench [flags]    drive a Table endpoint and report ops/s and latency

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
  batch-upsert    (not in all) $batch of --batch-size insert-or-replace (PUT) of new keys into one partition
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
	workloads := cfg.AddFlags(fs)
	jsonOut := fs.Bool("json", false, "print machine-readable JSON results on stdout")
	cpuProfile := fs.String("cpuprofile", "", "write the bench client's own CPU profile to `FILE`")
	if err := parseFlags(fs, benchUsage, args, stdout); err != nil {
		return helpIsDone(err)
	}

	var err error
	if cfg.Workloads, err = pbench.ParseWorkloads(*workloads); err != nil {
		return err
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	r, err := pbench.NewRunner(cfg, stderr, isTerminal(stderr))
	if err != nil {
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

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
