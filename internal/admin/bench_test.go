package admin_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/admin"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

var (
	benchEntities = flag.Int("backup.entities", 1_000_000, "entities in BenchmarkBackup's store")
	benchTo       = flag.String("backup.to", "", "write BenchmarkBackup's backups under this directory, e.g. on another file system, where the files are copied instead of linked (default beside the store)")
)

// BenchmarkBackup loads -backup.entities entities shaped as partita
// bench's (16 partitions, Seq, Bucket and a 1 KiB Payload) through the
// Store in batches of 100 (unsynced, to load fast), then times POST
// /backup through the admin handler on a real listener, and partita
// check's walk of the backup (docs/PERFORMANCE.md, "Backups"):
//
//	go test ./internal/admin -run '^$' -bench Backup -benchtime 3x -timeout 1h
func BenchmarkBackup(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := pebblekv.Open(filepath.Join(dir, "data"), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	store, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const account, table, parts = "devstoreaccount1", "backupbench", 16
	if _, err := store.CreateTable(ctx, account, table); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	payload := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		var sb strings.Builder
		for range 1024 {
			sb.WriteByte(letters[rng.IntN(len(letters))])
		}
		return sb.String()
	}
	start := time.Now()
	n := *benchEntities
	for first := 0; first < n; first += 100 * parts {
		for p := 0; p < parts; p++ {
			var ops []partita.Op
			for i := first + p; i < min(n, first+100*parts); i += parts {
				ops = append(ops, partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{
					PartitionKey: fmt.Sprintf("p%04d", p), RowKey: fmt.Sprintf("r%012d", i/parts),
					Properties: []partita.Property{
						{Name: "Seq", Value: edm.Value{Type: edm.Int64, Int: int64(i)}},
						{Name: "Bucket", Value: edm.Value{Type: edm.Int32, Int: int64(i % 1000)}},
						{Name: "Payload", Value: edm.Value{Type: edm.String, Str: payload()}},
					},
				}})
			}
			if len(ops) == 0 {
				continue
			}
			if _, err := store.WriteBatch(ctx, account, table, ops); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("loaded %d entities in %v", n, time.Since(start).Round(time.Millisecond))

	srv := httptest.NewServer(admin.New(admin.Options{DB: db, Engine: "pebble", Store: store}))
	defer srv.Close()
	var checkTime time.Duration
	var size int64
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		target := filepath.Join(dir, fmt.Sprintf("backup%d", i))
		if *benchTo != "" {
			target = filepath.Join(*benchTo, fmt.Sprintf("partita-backupbench-%d-%d", time.Now().UnixNano(), i))
			b.Cleanup(func() { os.RemoveAll(target) })
		}
		resp, err := http.Post(srv.URL+"/backup", "application/json", strings.NewReader(fmt.Sprintf(`{"dir":%q}`, target)))
		if err != nil {
			b.Fatal(err)
		}
		var res admin.BackupResult
		json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("backup: %s", resp.Status)
		}
		size = res.Bytes
		b.StopTimer()
		if i == 1 {
			bdb, err := pebblekv.Open(target, &pebblekv.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			cs := time.Now()
			rep, err := tablestore.Check(ctx, bdb, tablestore.CheckOptions{})
			checkTime = time.Since(cs)
			bdb.Close()
			if err != nil || !rep.OK() || rep.Entities != int64(n) {
				b.Fatalf("check of the backup: %v %+v", err, rep)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(checkTime.Seconds(), "check-s")
	b.ReportMetric(float64(size)/(1<<20), "backup-MiB")
}
