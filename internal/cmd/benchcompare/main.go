// Command benchcompare is the developer side of `partita bench`: it sets
// partita beside Azurite and a do-nothing server, checks the performance
// targets, and grows one table to millions of entities. scripts/bench-compare
// drives it; the product binary links none of it.
//
//	go run ./internal/cmd/benchcompare --compare partita=A.json[,do-nothing=B.json][,azurite=C.json][;...]
//	go run ./internal/cmd/benchcompare --do-nothing-server 127.0.0.1:0 [--entity-size N]
//	go run ./internal/cmd/benchcompare --growth N [partita bench flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/partita/partita/internal/bench"
	"github.com/partita/partita/internal/bench/nullserver"
)

// The reports come from `partita bench --json`.
type (
	Report   = bench.Report
	Result   = bench.Result
	Settings = bench.Settings
)

const usage = `Usage:
  benchcompare --compare partita=A.json[,do-nothing=B.json][,azurite=C.json][;partita=...]
      print the markdown comparison of 'partita bench --json' reports and the
      targets; rounds separated by ';' give each round's ratios, their medians
      and each server's spread
  benchcompare --do-nothing-server ADDR [--entity-size N]
      serve canned responses (the client/HTTP ceiling) until interrupted; the
      canned entity has an --entity-size Payload
  benchcompare --growth N [--growth-small N] [--server-pid PID] [--server-data DIR]
               [--growth-settle D] [--json] [partita bench flags]
      load one table to N entities with $batch, measuring point gets and range
      reads at --growth-small and at N; time Delete Table

Flags:
`

var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "benchcompare:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := bench.Defaults
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.AddFlags(fs)
	compare := fs.String("compare", "", "print the markdown comparison of reports: partita=FILE[,do-nothing=FILE][,azurite=FILE], rounds separated by ';'")
	nullAddr := fs.String("do-nothing-server", "", "run the do-nothing server on `ADDR` (e.g. 127.0.0.1:10099)")
	growth := fs.Int("growth", 0, "load one table to `N` entities with $batch; measure get p99 and range at --growth-small and at N; time Delete Table")
	growthSmall := fs.Int("growth-small", 100_000, "first checkpoint of --growth")
	serverData := fs.String("server-data", "", "growth: report the size of this data directory")
	growthSettle := fs.Duration("growth-settle", 0, "growth: also measure each checkpoint once the server (--server-pid) has gone idle, waiting at most this long (0: no second measurement)")
	jsonOut := fs.Bool("json", false, "growth: print the report as JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchcompare: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	switch {
	case *compare != "":
		return compareReports(*compare, stdout)
	case *nullAddr != "":
		return nullserver.Serve(ctx, *nullAddr, cfg.EntitySize, stdout, nil)
	case *growth > 0:
		r, err := bench.NewRunner(cfg, stderr, false)
		if err != nil {
			return err
		}
		rep, err := runGrowth(ctx, r, GrowthConfig{Small: *growthSmall, Target: *growth, ServerPID: cfg.ServerPID, ServerData: *serverData, Settle: *growthSettle})
		if rep != nil {
			if *jsonOut {
				bench.WriteJSON(stdout, rep)
			} else {
				WriteGrowth(stdout, rep)
			}
		}
		return err
	}
	fs.Usage()
	return errUsage
}

// cpuSection prints the CPU table after a blank line, when there is one.
func cpuSection(w io.Writer, rounds []Round) {
	var b strings.Builder
	CPUTable(&b, rounds)
	if b.Len() > 0 {
		fmt.Fprintln(w)
		io.WriteString(w, b.String())
	}
}

// compareReports prints the comparison of the --compare spec's reports.
func compareReports(spec string, stdout io.Writer) error {
	var rounds []Round
	for _, group := range strings.Split(spec, ";") {
		if strings.TrimSpace(group) == "" {
			continue
		}
		var r Round
		for _, part := range strings.Split(group, ",") {
			label, file, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return fmt.Errorf("--compare: %q: want label=file", part)
			}
			var slot **Report
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
			rep, err := ReadReport(file)
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
		Compare(stdout, r.Partita, r.Null, r.Azurite)
		fmt.Fprintln(stdout)
		Targets(stdout, rounds)
		cpuSection(stdout, rounds)
		return nil
	}
	Targets(stdout, rounds)
	fmt.Fprintln(stdout)
	Spread(stdout, rounds)
	cpuSection(stdout, rounds)
	return nil
}
