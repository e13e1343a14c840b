package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partita/partita/internal/admin"
)

// backup asks a running server, through its admin listener, for an online
// backup of its store into a directory.
func backup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("partita backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	adminURL := fs.String("admin", envOr("PARTITA_ADMIN_URL", "http://127.0.0.1:10012"), "the server's admin listener (serve --admin-addr) (PARTITA_ADMIN_URL)")
	to := fs.String("to", "", "the directory to write the backup into: new or empty; a relative path is relative to this command's working directory")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	if err := parseFlags(fs, `Usage: partita backup [--admin URL] --to DIR

Take an online backup of a running server's embedded store: a consistent
point-in-time copy that holds every write acknowledged before the backup
began, taken while the server goes on serving. The server writes DIR itself,
so DIR is a path on the server's machine. Restore by serving it:
partita serve --data DIR. Check it with partita check --data DIR.

Flags:
`, args, stdout); err != nil {
		return helpIsDone(err)
	}
	if *to == "" {
		fmt.Fprintln(stderr, "partita backup: --to DIR is required")
		return errUsage
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		return fmt.Errorf("--to %s: %w", *to, err)
	}
	base, err := adminBase(*adminURL)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(admin.BackupRequest{Dir: dir})
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/backup", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	var connected atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if connected.Load() && ctx.Err() != nil {
			// The server took the request: a checkpoint cannot be
			// canceled, so it may well finish after this.
			return fmt.Errorf("gave up waiting for the backup after --timeout %s; the server may still be writing it into %s: wait for \"backup written\" or \"backup failed\" in its log before using or removing it", *timeout, dir)
		}
		return fmt.Errorf("cannot reach the admin listener at %s (is partita serve running with --admin-addr?): %w", *adminURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", *adminURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e admin.ErrorBody
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return fmt.Errorf("backup refused (%s): %s", resp.Status, e.Error)
		}
		return fmt.Errorf("backup refused (%s): %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var res admin.BackupResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("unexpected answer from %s: %q", *adminURL, raw)
	}
	fmt.Fprintf(stdout, "partita: backup written to %s (%.1f MiB in %.2fs); restore with: partita serve --data %s\n", res.Dir, float64(res.Bytes)/(1<<20), res.Seconds, res.Dir)
	return nil
}

// adminBase checks an --admin value (the admin listener's URL, as `partita
// backup` and `partita advise` take it) and returns it without a trailing
// slash.
func adminBase(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--admin %q: want the admin listener's URL, e.g. http://127.0.0.1:10012", v)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
