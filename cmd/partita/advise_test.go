package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/partita/partita"
	"github.com/partita/partita/internal/tablestore"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestAdvise checks partita advise against the handlers as the admin
// listener mounts them (observability.mount), over a Pebble store whose
// figures /metrics reports.
func TestAdvise(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := parseConfig(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	kr, _ := auth.ParseAccounts("devstoreaccount1:Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	store, err := tablestore.Open(context.Background(), db, tablestore.Options{RowCacheBytes: c.RowCacheMB << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// One entity read twice: a row cache miss, then a hit.
	if _, err := store.CreateTable(context.Background(), "devstoreaccount1", "rows"); err != nil {
		t.Fatal(err)
	}
	key := partita.Key{PartitionKey: "p", RowKey: "r"}
	if _, err := store.Write(context.Background(), "devstoreaccount1", "rows", partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := store.GetEntity(context.Background(), "devstoreaccount1", "rows", key); err != nil {
			t.Fatal(err)
		}
	}
	obs := newObservability(c, kr, db, store)
	if obs.metrics == nil || obs.advisor == nil {
		t.Fatal("metrics and advisor are not on by default")
	}
	for i := 0; i < 2000; i++ {
		obs.advisor.Write("devstoreaccount1", "events", "current", fmt.Sprintf("%05d", (i*7919)%10000), false, 0)
	}
	mux := http.NewServeMux()
	obs.mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"advise", "--admin", srv.URL}, &out, &errb); err != nil {
		t.Fatalf("advise: %v %s", err, errb.String())
	}
	for _, want := range []string{"1 finding(s)", "hot-partition  devstoreaccount1/events", "writes=2000", "pattern:  Prepend/append anti-pattern"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("advise output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"advise", "--admin", strings.TrimPrefix(srv.URL, "http://"), "--json"}, &out, &errb); err != nil {
		t.Fatalf("advise --json: %v", err)
	}
	var rep advisor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Findings) != 1 || rep.Findings[0].PartitionKey != "current" {
		t.Errorf("advise --json: %v %s", err, out.String())
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"partita_pebble_disk_bytes ", "partita_pebble_block_cache_hits_total ", "partita_pebble_wal_sync_seconds_count ", "partita_requests_in_flight 0",
		"partita_row_cache_hits_total 1\n", "partita_row_cache_misses_total 1\n", "partita_row_cache_rows 1\n"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Without the advisor, partita advise says what is wrong.
	c.Advisor = false
	mux = http.NewServeMux()
	newObservability(c, kr, db, store).mount(mux)
	off := httptest.NewServer(mux)
	defer off.Close()
	err = run(context.Background(), []string{"advise", "--admin", off.URL}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("advise without the advisor: %v", err)
	}
}

func TestAdviseFlags(t *testing.T) {
	c, err := parseConfig([]string{"--metrics=false", "--advisor=false"}, io.Discard, io.Discard)
	if err != nil || c.Metrics || c.Advisor {
		t.Errorf("--metrics=false --advisor=false: %+v %v", c, err)
	}
}

// TestAdminBase: backup and advise check --admin the same way: an http or
// https URL with a host, without its trailing slash; anything else is
// refused (advise adds http:// to a bare host:port first).
func TestAdminBase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1:10012", ""},
		{"http://127.0.0.1:10012/", "http://127.0.0.1:10012"},
		{"https://h:1", "https://h:1"},
		{"ftp://h:1", ""},
		{"http://", ""},
	} {
		got, err := adminBase(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("adminBase(%q) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("adminBase(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestAdvisorAccountShare: with more than one account configured, one
// account's tables take at most --client-share of the advisor's places;
// with one account, all of them.
func TestAdvisorAccountShare(t *testing.T) {
	_, devKey, _ := strings.Cut(DevAccounts, ":")
	for _, tc := range []struct {
		accounts string
		share    int
		want     int
	}{
		{DevAccounts, 50, advisor.DefaultMaxTables},
		{DevAccounts + ";b:" + devKey, 50, advisor.DefaultMaxTables / 2},
		{DevAccounts + ";b:" + devKey, 25, advisor.DefaultMaxTables / 4},
	} {
		c, err := parseConfig([]string{"--accounts", tc.accounts, "--client-share", fmt.Sprint(tc.share), "--metrics=false"}, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		kr, err := auth.ParseAccounts(c.Accounts)
		if err != nil {
			t.Fatal(err)
		}
		obs := newObservability(c, kr, nil, nil)
		for i := 0; i < 2*advisor.DefaultMaxTables; i++ {
			obs.advisor.Write("devstoreaccount1", fmt.Sprintf("t%d", i), "p", "r", false, 0)
		}
		if got := obs.advisor.Tables(); got != tc.want {
			t.Errorf("%d account(s), --client-share %d: one account's busy tables took %d places, want %d", len(kr), tc.share, got, tc.want)
		}
	}
}
