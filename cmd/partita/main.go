// Command partita serves the Azure Table storage REST API.
//
//	partita serve [flags]    run the server (see partita serve --help)
//	partita backup           online backup of a running server's store
//	partita check            check a stopped server's store
//	partita version          print the version
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/partita/partita"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks for a clean stop; after it the default handling
	// is back, so that a second one ends the process even when the command
	// is stuck where ctx does not reach (a copy reading a FIFO swallowed
	// every later Ctrl-C).
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "partita:", err)
		}
		if errors.Is(err, errInconsistent) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

var errUsage = errors.New("usage")

const usage = `partita: Azure Table storage, self-hosted.

Usage:
  partita serve [flags]   start the server (partita serve --help for flags)
  partita bench [flags]   benchmark a Table endpoint (partita bench --help for flags)
  partita copy [flags]    copy tables between endpoints and JSONL files (partita copy --help)
  partita backup --admin URL --to DIR   online backup of a running server's store
  partita check --data DIR              check a stopped server's store (or a backup)
  partita advise [flags]  print the key-design advisor's findings (partita advise --help)
  partita version         print the version
  partita help COMMAND    a command's flags (the same as partita COMMAND --help)
`

// commands are run's subcommands, for `partita help COMMAND`.
var commands = map[string]bool{
	"serve": true, "bench": true, "copy": true, "backup": true, "check": true, "advise": true,
	"version": true, "help": true,
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "bench":
		return bench(ctx, args[1:], stdout, stderr)
	case "copy":
		return copyCmd(ctx, args[1:], stdout, stderr)
	case "backup":
		return backup(ctx, args[1:], stdout, stderr)
	case "check":
		return check(ctx, args[1:], stdout, stderr)
	case "advise":
		return advise(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "partita version: unexpected argument %q\n", args[1])
			return errUsage
		}
		fmt.Fprintln(stdout, "partita", partita.Version)
		return nil
	case "help", "-h", "--help":
		if len(args) > 1 {
			switch {
			case !commands[args[1]]:
				fmt.Fprintf(stderr, "partita: unknown command %q\n\n%s", args[1], usage)
				return errUsage
			case args[1] != "help" && args[1] != "version": // they have no flags
				return run(ctx, []string{args[1], "--help"}, stdout, stderr) // partita help serve
			}
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "partita: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}

// parseFlags parses a subcommand's args with fs. --help prints usage and
// then the flags to help (stdout: it was asked for) and returns
// flag.ErrHelp; a bad flag or a stray argument is said on fs's output with
// the usage after it and gives errUsage; otherwise it returns nil.
func parseFlags(fs *flag.FlagSet, usage string, args []string, help io.Writer) error {
	errOut := fs.Output()
	var text bytes.Buffer
	fs.Usage = func() {
		fs.SetOutput(&text)
		fmt.Fprint(&text, usage)
		fs.PrintDefaults()
		fs.SetOutput(errOut)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help.Write(text.Bytes())
			return err
		}
		errOut.Write(text.Bytes())
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

// helpIsDone turns parseFlags' flag.ErrHelp into success: --help has
// printed what was asked for.
func helpIsDone(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// startCPUProfile writes a CPU profile of the whole command to path (the
// --cpuprofile of bench and copy) until stop is called; with no path it
// does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
