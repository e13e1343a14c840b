package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/settings"
	"github.com/partita/partita/internal/tablestore"
)

// errInconsistent ends partita check when the store has problems (the
// report says which).
var errInconsistent = errors.New("the store is inconsistent")

// check opens a stopped server's store read-only and checks every key.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("partita check", flag.ContinueOnError)
	fl.SetOutput(stderr)
	data := fl.String("data", envOr("PARTITA_DATA", "./partita-data"), "data directory of the embedded store (PARTITA_DATA)")
	walDir := fl.String("wal-dir", envOr("PARTITA_WAL_DIR", ""), "the write-ahead log's directory, when the store was served with --wal-dir (PARTITA_WAL_DIR)")
	maxProblems := fl.Int("max-problems", 100, "list at most this many problems (all are counted)")
	if err := parseFlags(fl, `Usage: partita check [--data DIR]

Check a stopped server's embedded store (or a backup): open it read-only,
decode every key and entity, check the catalog against the data (every
entity and ACL belongs to a table in the catalog, every ACL and set of
service properties decodes) and print a summary. Exit status 1 when the
store is inconsistent, 2 when it cannot be read (missing, in use, or a
damaged file).

Flags:
`, args, stdout); err != nil {
		return helpIsDone(err)
	}
	fi, err := os.Stat(*data)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data directory %s does not exist", *data)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", *data)
	}
	db, err := pebblekv.Open(*data, &pebblekv.Options{ReadOnly: true, WALDir: *walDir, MinFreeBytes: -1, OnFatal: func(err error) {
		// A damaged file found by the scan (a block that fails its
		// checksum, a blob file that cannot be opened). The store's
		// default ends with serve's line, which promises that a restart
		// recovers everything: not so for a damaged file, nor for a
		// store that check only reads.
		fmt.Fprintf(stderr, "partita: cannot read the whole store: %v\npartita: the store is damaged: restore the data directory from a backup (one on another disk: a backup on the same file system shares the store's table files)\n", err)
		os.Exit(2)
	}})
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := tablestore.Check(ctx, db, tablestore.CheckOptions{
		DecodeACL: func(b []byte) error { _, err := settings.UnmarshalACL(b); return err },
		DecodeProperties: func(b []byte) error {
			var p settings.ServiceProperties
			return p.UnmarshalBinary(b)
		},
		MaxProblems: *maxProblems,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "store %s: %d tables, %d entities, %d table ACLs, %d accounts with service properties, next table id %d\n", *data, len(rep.Tables), rep.Entities, rep.ACLs, rep.Properties, rep.NextID)
	for _, t := range rep.Tables {
		state := ""
		if t.Deleting {
			state = " (being deleted)"
		}
		acl := ""
		if t.ACL {
			acl = ", ACL"
		}
		fmt.Fprintf(stdout, "  %s/%s id %d: %d entities%s%s\n", t.Account, t.Name, t.ID, t.Entities, acl, state)
	}
	if rep.OK() {
		fmt.Fprintln(stdout, "ok: no inconsistencies")
		return nil
	}
	fmt.Fprintf(stdout, "%d inconsistencies:\n", rep.Problems)
	for _, d := range rep.Details {
		fmt.Fprintln(stdout, "  "+d)
	}
	if len(rep.Details) < rep.Problems {
		fmt.Fprintf(stdout, "  ... and %d more (--max-problems)\n", rep.Problems-len(rep.Details))
	}
	return errInconsistent
}
