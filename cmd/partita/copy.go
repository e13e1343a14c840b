package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partita/partita/internal/transfer"
)

const copyUsage = `Usage:
  partita copy --from SRC --to DST [flags]
  partita copy --from SRC --to DST --verify [flags]

Copies tables between any two of:
  a Table endpoint     an Azure Storage connection string
                       ("DefaultEndpointsProtocol=…;AccountName=…;AccountKey=…;TableEndpoint=…",
                       "UseDevelopmentStorage=true", or with "SharedAccessSignature=…"),
                       or an endpoint URL with an account or table SAS
                       ("https://acct.table.core.windows.net/?sv=…&sig=…")
  a JSONL file         FILE.jsonl or FILE.jsonl.gz: one entity per line, every table in it
  a folder             DIR: one TABLE.jsonl per table (any other SRC/DST is a folder)
The JSONL format keeps every EDM type exactly; see docs/COPY.md.

Tables are created at the destination when missing and entities are written
with insert-or-replace in $batches of up to 100 per partition, so a re-run
is idempotent. An endpoint source is read in --parallel PartitionKey ranges
at once. The destination's 503 and 500 are retried with backoff (honouring
Retry-After). --verify copies nothing: it compares source and destination
entity by entity, prints each difference, and exits non-zero if any.
Exit status: 0 on success; 2 on any failure, difference or refused entity.

Flags:
`

func copyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o transfer.Options
	fs := flag.NewFlagSet("partita copy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.From, "from", "", "source: connection string, endpoint URL with SAS, JSONL file or folder")
	fs.StringVar(&o.To, "to", "", "destination: connection string, endpoint URL with SAS, JSONL file or folder")
	tables := fs.String("tables", "", "comma list of table names or globs (path.Match: *, ?, [a-z]); default all")
	fs.StringVar(&o.Filter, "filter", "", "OData $filter applied to every table of an endpoint source (e.g. \"PartitionKey ge '2024'\")")
	fs.IntVar(&o.Parallel, "parallel", 4, "key ranges copied at once per table (endpoint source) or batch writers (file source), 1 to 256")
	fs.StringVar(&o.Checkpoint, "checkpoint", "", "record per-range progress in `FILE`; run again with the same endpoints, --filter and --tables to resume, with a new key or SAS if need be (endpoint to endpoint)")
	fs.BoolVar(&o.Verify, "verify", false, "compare source and destination instead of copying")
	onRefused := fs.String("on-refused", "stop", "an entity the destination refuses (too large, bad key): stop, or skip it and go on (each is printed; the exit status is still non-zero)")
	progress := fs.String("progress", "auto", "progress on stderr: auto (one updating line on a terminal, plain lines otherwise), plain, none")
	fs.DurationVar(&o.ProgressInterval, "progress-interval", 0, "time between progress lines (default 0.5s on a terminal, 10s otherwise)")
	cpuProfile := fs.String("cpuprofile", "", "write the copy's own CPU profile to `FILE` (scripts/bench-copy --profile)")
	if err := parseFlags(fs, copyUsage, args, stdout); err != nil {
		return helpIsDone(err)
	}
	if o.From == "" || o.To == "" {
		fmt.Fprintln(stderr, "partita copy: --from and --to are required")
		return errUsage
	}
	if o.ProgressInterval < 0 {
		// 0 is the default's "unset"; a negative one is a mistake.
		return fmt.Errorf("--progress-interval %v: want a positive duration", o.ProgressInterval)
	}
	if o.Parallel < 1 {
		// 0 would mean the library's default: said as given, it is a mistake.
		return fmt.Errorf("--parallel %d: at least 1", o.Parallel)
	}
	if *tables != "" {
		for _, t := range strings.Split(*tables, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Tables = append(o.Tables, t)
			}
		}
	}
	switch *onRefused {
	case "stop":
	case "skip":
		o.SkipRefused = true
	default:
		return fmt.Errorf("--on-refused %q: want stop or skip", *onRefused)
	}
	switch *progress {
	case "auto":
		o.Progress = stderr
		if f, ok := stderr.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				o.Terminal = true
			}
		}
	case "plain":
		o.Progress = stderr
	case "none":
	default:
		return fmt.Errorf("--progress %q: want auto, plain or none", *progress)
	}
	o.Out = stdout
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	return transfer.Run(ctx, o)
}
