//go:build benchprofile

package main

// A harness that serves partita in this test process so that `go test
// -cpuprofile` captures the server alone while `partita bench` drives it
// from another process. It is behind the benchprofile build tag so that
// ordinary test runs never compile or run it. scripts/bench-compare
// --profile uses it:
//
//	go test -c -tags benchprofile -o /tmp/harness.test ./internal/cmd/benchcompare
//	PARTITA_PROFILE_ADDR=127.0.0.1:10096 PARTITA_PROFILE_SECONDS=60 \
//	  /tmp/harness.test -test.run TestServeForProfile -test.cpuprofile /tmp/cpu.out
//	partita bench --endpoint http://127.0.0.1:10096/devstoreaccount1 …   (meanwhile)
//	go tool pprof -top /tmp/harness.test /tmp/cpu.out

import (
	"github.com/partita/partita/internal/bench"

	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/httpapi"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

func TestServeForProfile(t *testing.T) {
	addr := os.Getenv("PARTITA_PROFILE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:10096"
	}
	secs, _ := strconv.Atoi(os.Getenv("PARTITA_PROFILE_SECONDS"))
	if secs <= 0 {
		secs = 60
	}
	dir := os.Getenv("PARTITA_PROFILE_DATA")
	if dir == "" {
		dir = t.TempDir()
	}
	var db kv.DB
	if os.Getenv("PARTITA_PROFILE_STORE") == "mem" {
		db = memkv.New()
	} else {
		pdb, err := pebblekv.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		db = pdb
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	store, err := tablestore.Open(ctx, db, tablestore.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	keys, err := auth.ParseAccounts("devstoreaccount1:" + bench.Defaults.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpapi.New(httpapi.Options{Store: store, Accounts: keys, Logger: log})}
	go srv.Serve(ln)
	fmt.Printf("profile harness: serving http://%s for %ds\n", ln.Addr(), secs)
	// Stop early when the driver creates the file named by PARTITA_PROFILE_STOP.
	stop := os.Getenv("PARTITA_PROFILE_STOP")
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		if stop != "" {
			if _, err := os.Stat(stop); err == nil {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
}
