package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/changeset"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// BenchmarkBatchInsert100 is the server side of the bench tool's batch
// workload: a signed $batch of 100 inserts of ~1 KiB entities into one
// partition, decoded, committed to the in-memory engine and answered.
// It measures partita's own work per changeset (MIME, JSON, key encoding,
// the response), without the network or the disk.
func BenchmarkBatchInsert100(b *testing.B) { benchmarkBatch100(b, false) }

// BenchmarkBatchUpsert100 is the batch-upsert workload (what partita copy
// and import send): 100 insert-or-replace (PUT) of new keys.
func BenchmarkBatchUpsert100(b *testing.B) { benchmarkBatch100(b, true) }

func benchmarkBatch100(b *testing.B, upsert bool) {
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	// The in-memory engine keeps rows in one sorted slice, so a fresh one
	// every 50 changesets keeps its inserts from dominating.
	var s *Server
	fresh := func() {
		ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s = New(Options{Store: ts, Accounts: kr})
		w := httptest.NewRecorder()
		s.ServeHTTP(w, signedBody(b, "POST", "/devstoreaccount1/Tables", "application/json", []byte(`{"TableName":"bench"}`)))
		if w.Code != http.StatusCreated && w.Code != http.StatusNoContent {
			b.Fatalf("create table: %d %s", w.Code, w.Body)
		}
	}

	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 16)
	reqs := make([]changeset.Request, 100)
	var body []byte
	var cpu time.Duration
	b.ReportAllocs()
	b.SetBytes(int64(100 * len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i%50 == 0 {
			fresh()
		}
		for k := range reqs {
			ent := fmt.Sprintf(`{"PartitionKey":"p%03d","RowKey":"r%012d","Bucket":%d,"Payload":"%s"}`, i%16, i*100+k, k%100, payload)
			reqs[k] = changeset.Request{
				Method: http.MethodPost,
				Target: "http://127.0.0.1:10002/devstoreaccount1/bench",
				Header: http.Header{
					"Accept":         {"application/json;odata=minimalmetadata"},
					"Content-Type":   {"application/json"},
					"Prefer":         {"return-no-content"},
					"Content-Length": {strconv.Itoa(len(ent))},
				},
				Body: []byte(ent),
			}
			if upsert {
				reqs[k].Method = http.MethodPut
				reqs[k].Target = fmt.Sprintf("http://127.0.0.1:10002/devstoreaccount1/bench(PartitionKey='p%03d',RowKey='r%012d')", i%16, i*100+k)
			}
		}
		bb, cb := "batch_"+strconv.Itoa(i), "changeset_"+strconv.Itoa(i)
		body = changeset.AppendRequest(body[:0], bb, cb, &changeset.Batch{Requests: reqs, Changeset: true})
		r := signedBody(b, "POST", "/devstoreaccount1/$batch", changeset.ContentType(bb), body)
		w := httptest.NewRecorder()
		b.StartTimer()
		c0 := processCPU()
		s.ServeHTTP(w, r)
		cpu += processCPU() - c0
		if w.Code != http.StatusAccepted || bytes.Contains(w.Body.Bytes(), []byte("odata.error")) {
			b.Fatalf("batch: %d %s", w.Code, w.Body)
		}
	}
	// The process's CPU time (processCPU), GC included: steadier than
	// ns/op on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func signedBody(tb testing.TB, method, path, contentType string, body []byte) *http.Request {
	tb.Helper()
	r := signedRequest(tb, method, path)
	r.Header.Set("Content-Type", contentType)
	r.Body = http.NoBody
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.ContentLength = int64(len(body))
	return r
}
