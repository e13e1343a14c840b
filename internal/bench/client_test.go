package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/bench/nullserver"
	"github.com/partita/partita/internal/changeset"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestSignMatchesAuth(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", devKey, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A worked SharedKey signature over the dev key (docs/COMPATIBILITY.md §10).
	date := "Tue, 02 Jan 2024 03:04:05 GMT"
	for path, want := range map[string]string{
		"/devstoreaccount1/Tables":                                 "vqH9cAkS8xJlO5MTje1QvTgbpxIibsQNqN4+xo6qZpI=",
		"/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')": "e7Fx+YA6DfPeka9HE3z8AhMLlTxt8pNxYe/gSr2CoUA=",
	} {
		got := c.sign(date, path)
		if got != "SharedKeyLite devstoreaccount1:"+want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

// TestRequestsVerify sends each kind of request the bench makes to a server
// that verifies the signature with internal/auth and decodes $batch bodies
// with internal/changeset.
func TestRequestsVerify(t *testing.T) {
	keys, err := auth.ParseAccounts("devstoreaccount1:" + devKey)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fails []string
	null := nullserver.Handler(64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		rawPath, rawQuery, _ := strings.Cut(r.RequestURI, "?")
		q, _ := url.ParseQuery(rawQuery)
		if _, err := keys.Verify(auth.Request{Method: r.Method, Header: r.Header, RawPath: rawPath, Query: q}, "devstoreaccount1", time.Now()); err != nil {
			fails = append(fails, r.Method+" "+r.RequestURI+": "+err.Error())
		}
		if strings.HasSuffix(rawPath, "$batch") {
			var body bytes.Buffer
			body.ReadFrom(r.Body)
			b, err := changeset.Decode(r.Header.Get("Content-Type"), body.Bytes(), 100)
			if err != nil {
				fails = append(fails, "batch: "+err.Error())
			} else if len(b.Requests) != 3 || b.Requests[0].Header.Get("Prefer") != "return-no-content" {
				fails = append(fails, "batch: unexpected decode")
			}
		}
		null.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := Defaults
	cfg.Endpoint = srv.URL + "/devstoreaccount1"
	cfg.Workloads = AllWorkloads
	cfg.Count, cfg.BatchSize, cfg.MaxOps, cfg.Concurrency, cfg.Warmup, cfg.Progress = 3, 3, 3, 1, 0, "none"
	r, err := NewRunner(cfg, &bytes.Buffer{}, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		if res.Errors != 0 {
			t.Errorf("%s: %s", res.Workload, res.FirstError)
		}
	}
	for _, f := range fails {
		t.Error(f)
	}
}

// TestBatchCount: --batch-count, when set, bounds the measured batch
// workload instead of --count; it runs after the other workloads, in a
// table of its own that is created and deleted around it, while the main
// table still gets --count batch entities at the batch workload's place,
// so the other workloads see what they would see without it.
func TestBatchCount(t *testing.T) {
	for _, tc := range []struct{ count, batchCount, wantBatches, wantEntities int }{
		{6, 0, 2, 6},
		{6, 21, 7, 21},
		{6, 20, 7, 20}, // the last batch is short
	} {
		var mu sync.Mutex // guards everything the handler records
		var batches, inserts int
		batchTables := map[string]bool{} // tables named in $batch bodies
		var created, deleted []string
		var queries, queriesBeforeSide int // table-scan pages, in all and before the side table
		null := nullserver.Handler(64)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			path := r.URL.Opaque + r.URL.Path
			switch {
			case strings.HasSuffix(path, "$batch"):
				batches++
				var body bytes.Buffer
				body.ReadFrom(r.Body)
				b, err := changeset.Decode(r.Header.Get("Content-Type"), body.Bytes(), 100)
				if err != nil {
					t.Errorf("batch: %v", err)
					break
				}
				for _, req := range b.Requests {
					batchTables[req.Target[strings.LastIndexByte(req.Target, '/')+1:]] = true
				}
			case r.Method == http.MethodPost && strings.HasSuffix(path, "/Tables"):
				var body struct{ TableName string }
				json.NewDecoder(r.Body).Decode(&body)
				created = append(created, body.TableName)
				if len(created) == 2 {
					queriesBeforeSide = queries
				}
			case r.Method == http.MethodGet && strings.HasSuffix(path, "()"):
				queries++
			case r.Method == http.MethodPost:
				inserts++
			case r.Method == http.MethodDelete && strings.Contains(path, "/Tables('"):
				name, _, _ := strings.Cut(path[strings.Index(path, "/Tables('")+len("/Tables('"):], "'")
				deleted = append(deleted, name)
			}
			null.ServeHTTP(w, r)
		}))
		cfg := Defaults
		cfg.Endpoint = srv.URL + "/devstoreaccount1"
		cfg.Workloads = []string{"insert", "batch", "table-scan"}
		cfg.Count, cfg.BatchCount, cfg.BatchSize, cfg.Concurrency, cfg.Progress = tc.count, tc.batchCount, 3, 2, "none"
		cfg.MaxOps, cfg.Warmup = 4, 0
		r, err := NewRunner(cfg, &bytes.Buffer{}, false)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(context.Background())
		srv.Close() // waits for the handlers: their records are complete
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Result{}
		for _, res := range rep.Results {
			got[res.Workload] = res
		}
		unmeasured := 0
		if tc.batchCount > 0 {
			unmeasured = tc.count / cfg.BatchSize
		}
		if b := got["batch"]; batches != unmeasured+tc.wantBatches || b.Ops != int64(tc.wantBatches) || b.Entities != int64(tc.wantEntities) {
			t.Errorf("%+v: %d $batch requests, report %d ops %d entities", tc, batches, b.Ops, b.Entities)
		}
		if len(rep.Results) != 3 || rep.Results[1].Workload != "batch" {
			t.Errorf("%+v: results out of order: %+v", tc, rep.Results)
		}
		if inserts != tc.count || got["insert"].Ops != int64(tc.count) {
			t.Errorf("%+v: %d inserts, report %d", tc, inserts, got["insert"].Ops)
		}
		main := r.Table()
		// Either way the scan sees the inserts and --count batch entities.
		wantTables, wantExamined := []string{main}, 2*tc.count
		if tc.batchCount > 0 {
			// The batch's own table, created after the main one and
			// deleted before it.
			if len(created) != 2 || created[0] != main || created[1] == main || len(batchTables) != 2 || !batchTables[created[1]] || !batchTables[main] {
				t.Errorf("%+v: created %v (main %s), batches into %v", tc, created, main, batchTables)
			}
			wantTables = []string{created[len(created)-1], main}
			if queries == 0 || queriesBeforeSide != queries {
				t.Errorf("%+v: %d of %d scan queries before the measured batch, want all", tc, queriesBeforeSide, queries)
			}
		} else if len(batchTables) != 1 || !batchTables[main] {
			t.Errorf("%+v: batches into %v, want %s", tc, batchTables, main)
		}
		if strings.Join(deleted, ",") != strings.Join(wantTables, ",") {
			t.Errorf("%+v: deleted %v, want %v", tc, deleted, wantTables)
		}
		if s := got["table-scan"]; s.Ops == 0 || s.Examined != s.Ops*int64(wantExamined) {
			t.Errorf("%+v: table scan examined %d in %d scans, want %d a scan", tc, s.Examined, s.Ops, wantExamined)
		}
	}
}

func TestCountEntities(t *testing.T) {
	for body, want := range map[string]int{
		`{"odata.metadata":"x","value":[]}`:                                                     0,
		`{"value":[{"a":1},{"b":"}{\"]"},{"c":{"d":[1,{"e":2}]}}]}`:                             3,
		`{"odata.metadata":"u#t","value":[{"PartitionKey":"p","RowKey":"r","X":"[{"}], "y": 2}`: 1,
		`{"value": [{}, {}]}`:        2,
		`{"odata.error":{"code":1}}`: -1,
	} {
		if got := countEntities([]byte(body)); got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
}

func TestBatchFailure(t *testing.T) {
	ok := "--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nETag: x\r\n\r\n\r\n--b--\r\n"
	if f := batchFailure([]byte(ok)); f != "" {
		t.Errorf("ok batch: %q", f)
	}
	bad := "--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n{\"odata.error\":{\"code\":\"EntityAlreadyExists\"}}\r\n--b--\r\n"
	if f := batchFailure([]byte(bad)); !strings.Contains(f, "409 Conflict") || !strings.Contains(f, "EntityAlreadyExists") {
		t.Errorf("failed batch: %q", f)
	}
}

func TestEntityJSONAndKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	b := appendEntityJSON(nil, []byte("p0001"), []byte("r000000000002"), 1234, 50, rng, `"Merged":true`)
	s := string(b)
	for _, want := range []string{`"PartitionKey":"p0001"`, `"RowKey":"r000000000002"`, `"Seq":"1234"`, `"Bucket":234`, `"Merged":true`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	if i := strings.Index(s, `"Payload":"`); i < 0 || len(s)-i-len(`"Payload":"`)-2 != 50 {
		t.Errorf("payload length wrong in %s", s)
	}
	if pkString(3) != "p0003" || rkString(42) != "r000000000042" {
		t.Errorf("keys: %s %s", pkString(3), rkString(42))
	}
	if escapeKey("a'b c") != "a''b%20c" {
		t.Errorf("escapeKey: %s", escapeKey("a'b c"))
	}
}

// FuzzCountEntities checks the byte scan against encoding/json on every
// input that decodes as an object whose "value" is an array of objects.
func FuzzCountEntities(f *testing.F) {
	f.Add(`{"value":[{"a":"x\\\"]}"},{"b":[{}]}]}`)
	f.Add(`{"odata.metadata":"m","value":[{"s":"\\\\"},{"t":"\\\\\\\""}]}`)
	f.Add(`{"value":[]}`)
	f.Fuzz(func(t *testing.T, body string) {
		// The oracle: the elements of the first member's array that are
		// objects, by encoding/json's tokenizer.
		if !json.Valid([]byte(body)) || !strings.HasPrefix(body, `{"value":[`) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(body))
		for range 3 { // '{', "value", '['
			if _, err := dec.Token(); err != nil {
				t.Fatal(err)
			}
		}
		want := 0
		for dec.More() {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if v[0] == '{' {
				want++
			}
		}
		if got := countEntities([]byte(body)); got != want {
			t.Fatalf("%s: counted %d, encoding/json %d", body, got, want)
		}
	})
}

// payloadOneByOne is appendPayload as it was first written: ten 6-bit
// characters from each random word, appended one at a time.
func payloadOneByOne(dst []byte, rng *rand.Rand, n int) []byte {
	for n > 0 {
		x := rng.Uint64()
		for j := 0; j < 10 && n > 0; j++ {
			dst = append(dst, payloadAlphabet[x&63])
			x >>= 6
			n--
		}
	}
	return dst
}

// TestAppendPayload compares appendPayload with its first form for every
// length up to two KiB, after a prefix that must survive: the same bytes and
// the generator left in the same state, so the bench sends what it sent
// before. Payloads must differ, and use the whole alphabet at every place.
func TestAppendPayload(t *testing.T) {
	seen := map[string]bool{}
	for n := -1; n <= 2048; n++ {
		a, b := rand.New(rand.NewPCG(7, uint64(n))), rand.New(rand.NewPCG(7, uint64(n)))
		got := appendPayload([]byte("prefix"), a, n)
		want := payloadOneByOne([]byte("prefix"), b, n)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d:\n got %q\nwant %q", n, got, want)
		}
		if a.Uint64() != b.Uint64() {
			t.Fatalf("n=%d: the generators drifted apart", n)
		}
		for _, c := range got[len("prefix"):] {
			if !strings.ContainsRune(payloadAlphabet, rune(c)) {
				t.Fatalf("n=%d: %q is not in the alphabet", n, c)
			}
		}
		if n >= 16 {
			if p := string(got[len("prefix"):][:16]); seen[p] {
				t.Fatalf("n=%d: payload prefix %q repeats", n, p)
			} else {
				seen[p] = true
			}
		}
	}
	// One generator, many payloads: no two alike, and every character of
	// the alphabet shows up at each of the ten positions a word fills.
	rng := rand.New(rand.NewPCG(1, 2))
	var pos [10]map[byte]bool
	for i := range pos {
		pos[i] = map[byte]bool{}
	}
	for range 2000 {
		p := appendPayload(nil, rng, 20)
		if seen[string(p[:16])] {
			t.Fatalf("payload %q repeats", p)
		}
		seen[string(p[:16])] = true
		for i := range 20 {
			pos[i%10][p[i]] = true
		}
	}
	for i, m := range pos {
		if len(m) != len(payloadAlphabet) {
			t.Errorf("position %d of a word: %d of %d characters seen", i, len(m), len(payloadAlphabet))
		}
	}
}

func BenchmarkAppendEntityJSON1K(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = appendEntityJSON(buf[:0], []byte("p0001"), []byte("r000000000002"), uint64(i), 1024, rng, "")
	}
	b.SetBytes(int64(len(buf)))
}

// TestShortLoadWarns: when the load that a workload needs is cut short by
// its time cap, the log says how much of --count the table holds.
func TestShortLoadWarns(t *testing.T) {
	null := nullserver.Handler(64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/Tables") {
			time.Sleep(20 * time.Millisecond) // an insert: the load outlasts its cap
		}
		null.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := Defaults
	cfg.Endpoint = srv.URL + "/devstoreaccount1"
	cfg.Workloads = []string{"get"}
	cfg.Count, cfg.MaxOps, cfg.Concurrency, cfg.Warmup, cfg.Progress = 1000, 3, 1, 0, "none"
	cfg.Duration = 100 * time.Millisecond
	var log bytes.Buffer
	r, err := NewRunner(cfg, &log, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "of 1000 entities loaded within 100ms") {
		t.Errorf("no warning of the short load in the log:\n%s", log.String())
	}
}

// TestLoadIntoExistingTable: a run on a named table (--table) that a run
// before it loaded finds the key layout's entities there (409 on insert).
// They are what the load is for: the workload runs on them. It used to
// count none loaded, warn of a short load after a fraction of a second
// and do no operation at all.
func TestLoadIntoExistingTable(t *testing.T) {
	null := nullserver.Handler(64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/Tables") {
			w.Header().Set("x-ms-error-code", "EntityAlreadyExists")
			w.WriteHeader(http.StatusConflict)
			return
		}
		null.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := Defaults
	cfg.Endpoint = srv.URL + "/devstoreaccount1"
	cfg.Table = "existing"
	cfg.Workloads = []string{"get"}
	cfg.Count, cfg.MaxOps, cfg.Concurrency, cfg.Warmup, cfg.Progress = 100, 50, 2, 0, "none"
	cfg.Duration = 2 * time.Second
	var log bytes.Buffer
	r, err := NewRunner(cfg, &log, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "entities loaded within") {
		t.Errorf("a short load reported for a table that holds the entities:\n%s", log.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].Ops != 50 || rep.Results[0].Errors != 0 {
		t.Errorf("get on the existing table: %+v, want 50 operations without errors", rep.Results)
	}
}
