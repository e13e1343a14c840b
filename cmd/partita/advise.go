package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/partita/partita/internal/advisor"
)

// advise prints the key-design advisor's findings, read from a server's
// admin listener (GET /advisor).
func advise(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("partita advise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	admin := fs.String("admin", envOr("PARTITA_ADMIN_URL", "http://127.0.0.1:10012"), "the server's admin listener (serve --admin-addr) (PARTITA_ADMIN_URL)")
	asJSON := fs.Bool("json", false, "print the findings as the admin listener's JSON")
	if err := parseFlags(fs, "Usage: partita advise [--admin URL] [--json]\n\nPrint the key-design advisor's findings about a running server's traffic.\n\nFlags:\n", args, stdout); err != nil {
		return helpIsDone(err)
	}
	a := *admin
	if !strings.Contains(a, "://") {
		a = "http://" + a // advise also takes a bare host:port
	}
	base, err := adminBase(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/advisor", nil)
	if err != nil {
		return fmt.Errorf("--admin %q: %w", *admin, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/advisor: %s (is the advisor on, and is this the admin listener?)", base, resp.Status)
	}
	var rep advisor.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return fmt.Errorf("%s/advisor: not the advisor's JSON: %w", base, err)
	}
	if *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	writeFindings(stdout, rep)
	return nil
}

// writeFindings prints a report for people: one block per finding.
func writeFindings(w io.Writer, rep advisor.Report) {
	fmt.Fprintf(w, "%d finding(s) over the last %s, %d table(s) watched\n", len(rep.Findings), time.Duration(rep.WindowSeconds*float64(time.Second)), rep.Tables)
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "\n%s  %s/%s\n", f.Kind, f.Account, f.Table)
		fmt.Fprintf(w, "  seen:     %s\n", f.Summary)
		names := make([]string, 0, len(f.Evidence))
		for n := range f.Evidence {
			names = append(names, n)
		}
		sort.Strings(names)
		var ev []string
		for _, n := range names {
			ev = append(ev, fmt.Sprintf("%s=%g", n, f.Evidence[n]))
		}
		fmt.Fprintf(w, "  evidence: %s\n", strings.Join(ev, " "))
		fmt.Fprintf(w, "  pattern:  %s\n", f.Pattern)
		fmt.Fprintf(w, "  fix:      %s\n", f.Fix)
	}
}
