package transfer

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/changeset"
)

// hostile starts a fake Table endpoint whose answers h decides and returns
// its connection string. GET /Tables?$top=1 (Check) answers an empty list
// unless h handles it (h returns false to fall back).
func hostile(t *testing.T, h func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h(w, r) {
			return
		}
		if r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "1" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"value":[]}`))
			return
		}
		http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusNotImplemented)
	}))
	t.Cleanup(srv.Close)
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + DevKey + ";TableEndpoint=" + srv.URL + "/devstoreaccount1"
}

// runCopy runs a copy with a deadline, so that a hang fails the test.
func runCopy(t *testing.T, o Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	err := Run(ctx, o)
	if ctx.Err() != nil {
		t.Fatalf("the copy hung: %v", err)
	}
	return err
}

func jsonReply(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json;odata=fullmetadata")
	w.Write([]byte(body))
}

// TestTraversalTableNameFromList: a source listing a table named
// "../../escaped" fails the export naming it, and nothing is written
// outside the destination folder.
func TestTraversalTableNameFromList(t *testing.T) {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/devstoreaccount1/Tables" && r.URL.RawQuery == "":
			jsonReply(w, `{"value":[{"TableName":"../../escaped"}]}`)
		case strings.HasSuffix(r.URL.Path, "()"):
			jsonReply(w, `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`)
		default:
			return false
		}
		return true
	})
	root := t.TempDir()
	dst := filepath.Join(root, "a", "b", "out")
	err := runCopy(t, Options{From: src, To: dst})
	if err == nil || !strings.Contains(err.Error(), `"../../escaped"`) {
		t.Fatalf("err = %v, want one naming the table", err)
	}
	for _, p := range []string{filepath.Join(root, "a", "escaped.jsonl"), filepath.Join(root, "escaped.jsonl")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written outside the destination", p)
		}
	}
}

// TestTraversalTableNameFromFile: a JSONL line whose "table" is a path
// fails the import naming it (file and line), before it reaches a file
// name or a URL; so does a table SAS's tn and a literal --tables name.
func TestTraversalTableNameFromFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	line := `{"table":"../../escaped","PartitionKey":"p","RowKey":"r","props":[]}` + "\n"
	if err := os.WriteFile(src, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "x", "y", "out")
	err := runCopy(t, Options{From: src, To: dst})
	if err == nil || !strings.Contains(err.Error(), `"../../escaped"`) || !strings.Contains(err.Error(), "in.jsonl:1") {
		t.Fatalf("err = %v, want one naming the table and line", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "escaped.jsonl")); err == nil {
		t.Error("written outside the destination")
	}
	// The slow path (DecodeRecord) as well as the fast one.
	line = `{ "table":"a/b", "PartitionKey":"p","RowKey":"r","props":[]}` + "\n"
	os.WriteFile(src, []byte(line), 0o644)
	if err := runCopy(t, Options{From: src, To: dst}); err == nil || !strings.Contains(err.Error(), `"a/b"`) {
		t.Fatalf("err = %v, want one naming the table", err)
	}
	if _, err := ParseEndpoint("http://127.0.0.1:9/acct/x?tn=..%2Fx&sv=1&sig=x"); err == nil || !strings.Contains(err.Error(), `"../x"`) {
		t.Errorf("SAS with tn=../x: %v", err)
	}
	if err := runCopy(t, Options{From: src, To: dst, Tables: []string{"../x"}}); err == nil || !strings.Contains(err.Error(), `"../x"`) {
		t.Errorf("--tables ../x: %v", err)
	}
}

// loopSource lists table "loop", answers Check, and answers every query of
// it with page (a JSON body) and the continuation cont(query) returns.
func loopSource(t *testing.T, tables func(r *http.Request) (string, string), page string, cont func(r *http.Request) (string, string)) string {
	return hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "":
			body, next := tables(r)
			if next != "" {
				w.Header().Set("x-ms-continuation-NextTableName", next)
			}
			jsonReply(w, body)
		case r.URL.Path == "/devstoreaccount1/loop()":
			npk, nrk := cont(r)
			if npk != "" {
				w.Header().Set("x-ms-continuation-NextPartitionKey", npk)
			}
			if nrk != "" {
				w.Header().Set("x-ms-continuation-NextRowKey", nrk)
			}
			jsonReply(w, page)
		default:
			return false
		}
		return true
	})
}

func oneTable(*http.Request) (string, string) { return `{"value":[{"TableName":"loop"}]}`, "" }

// TestContinuationNoProgress: a source that answers a query's continuation
// with the same continuation fails the copy (each of the readers: a range,
// the partition listing, verify, the table listing) instead of looping.
func TestContinuationNoProgress(t *testing.T) {
	same := func(*http.Request) (string, string) { return "1!4!cA--", "1!4!cg--" }
	ent := `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`
	for _, c := range []struct {
		name string
		o    Options
		page string
	}{
		{"range", Options{Parallel: 1}, ent},
		{"range, empty pages", Options{Parallel: 1}, `{"value":[]}`},
		{"partitions", Options{Parallel: 2}, `{"value":[]}`},
		{"verify", Options{Parallel: 1, Verify: true}, ent},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.From = loopSource(t, oneTable, c.page, same)
			o.To = filepath.Join(t.TempDir(), "out")
			if o.Verify {
				o.To = o.From
			}
			err := runCopy(t, o)
			if err == nil || !strings.Contains(err.Error(), "no progress") {
				t.Fatalf("err = %v, want no progress", err)
			}
		})
	}
	t.Run("tables", func(t *testing.T) {
		src := loopSource(t, func(*http.Request) (string, string) { return `{"value":[{"TableName":"loop"}]}`, "loop2" }, ent, same)
		err := runCopy(t, Options{From: src, To: filepath.Join(t.TempDir(), "out")})
		if err == nil || !strings.Contains(err.Error(), "no progress") {
			t.Fatalf("err = %v, want no progress", err)
		}
	})
	t.Run("tables without end", func(t *testing.T) {
		// Each page names new tables and moves on: bounded by maxTables.
		n := 0
		src := loopSource(t, func(*http.Request) (string, string) {
			n++
			var b strings.Builder
			b.WriteString(`{"value":[`)
			for i := range 1000 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"TableName":"t%dx%d"}`, n, i)
			}
			b.WriteString("]}")
			return b.String(), fmt.Sprintf("t%d", n+1)
		}, ent, same)
		err := runCopy(t, Options{From: src, To: filepath.Join(t.TempDir(), "out")})
		if err == nil || !strings.Contains(err.Error(), "more than 10000 tables") {
			t.Fatalf("err = %v, want more than 10000 tables", err)
		}
		if n > maxTables/1000+1 {
			t.Errorf("%d pages of tables read", n)
		}
	})
}

// TestContinuationEmptyPagesAdvance: empty pages whose continuation moves
// on are followed (a scan budget ran out); the copy ends with the entity.
func TestContinuationEmptyPagesAdvance(t *testing.T) {
	for _, par := range []int{1, 2} {
		src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "":
				jsonReply(w, `{"value":[{"TableName":"adv"}]}`)
			case r.URL.Path == "/devstoreaccount1/adv()":
				// Three empty pages, then the entity.
				k := r.URL.Query().Get("NextPartitionKey")
				if len(k) < 3 {
					w.Header().Set("x-ms-continuation-NextPartitionKey", k+"k")
					jsonReply(w, `{"value":[]}`)
					return true
				}
				if r.URL.Query().Get("$filter") != "" {
					jsonReply(w, `{"value":[]}`) // no partition after p
					return true
				}
				jsonReply(w, `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`)
			default:
				return false
			}
			return true
		})
		dst := filepath.Join(t.TempDir(), "out")
		if err := runCopy(t, Options{From: src, To: dst, Parallel: par}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dst, "adv.jsonl"))
		if err != nil || !strings.Contains(string(b), `"RowKey":"r"`) {
			t.Fatalf("export %q, %v", b, err)
		}
	}
}

// testClient is a client of the fake endpoint src with short timeouts.
func testClient(t *testing.T, src string) *client {
	t.Helper()
	ep, err := ParseEndpoint(src)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(ep, "source", 1)
	c.setTimeouts(200*time.Millisecond, 300*time.Millisecond)
	return c
}

// TestSilentEndpointTimesOut: an endpoint that accepts and never sends
// headers, or sends half a body and then nothing, fails the request with
// the timeout named, after maxTimeouts tries (not 10 of 2 minutes each).
func TestSilentEndpointTimesOut(t *testing.T) {
	release := make(chan struct{})
	var tries atomic.Int32
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		tries.Add(1)
		switch r.URL.Path {
		case "/devstoreaccount1/Tables":
			<-release // no headers
		case "/devstoreaccount1/stall()":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"value":[`))
			w.(http.Flusher).Flush()
			<-release // no more body
		default:
			return false
		}
		return true
	})
	t.Cleanup(func() { close(release) }) // before the server closes
	c := testClient(t, src)
	start := time.Now()
	_, err := c.ListTables(context.Background())
	if err == nil || !strings.Contains(err.Error(), "response header timeout") {
		t.Fatalf("err = %v, want the response header timeout", err)
	}
	if n := tries.Load(); n != maxTimeouts {
		t.Errorf("%d tries, want %d", n, maxTimeouts)
	}
	tries.Store(0)
	_, err = c.queryPage(context.Background(), "stall", "", "", "", 0, "")
	if err == nil || !strings.Contains(err.Error(), "body idle timeout") {
		t.Fatalf("err = %v, want the body idle timeout", err)
	}
	if n := tries.Load(); n != maxTimeouts {
		t.Errorf("%d tries, want %d", n, maxTimeouts)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("took %s", el)
	}
}

// TestSlowBodyIsRead: a body that comes slowly but never pauses for the
// idle timeout is read whole, for longer than the idle timeout in all.
func TestSlowBodyIsRead(t *testing.T) {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/devstoreaccount1/slow()" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"value":[`))
		for i := range 10 {
			if i > 0 {
				w.Write([]byte(","))
			}
			fmt.Fprintf(w, `{"PartitionKey":"p","RowKey":"r%d"}`, i)
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
		w.Write([]byte(`]}`))
		return true
	})
	c := testClient(t, src)
	p, err := c.queryPage(context.Background(), "slow", "", "", "", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.entities) != 10 {
		t.Errorf("%d entities", len(p.entities))
	}
}

// batchDest is a destination answering every $batch with status and body.
func batchDest(t *testing.T, status int, body func() []byte) *client {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/devstoreaccount1/$batch" {
			return false
		}
		w.Header().Set("Content-Type", "multipart/mixed; boundary=batchresponse_x")
		w.WriteHeader(status)
		w.Write(body())
		return true
	})
	c := testClient(t, src)
	c.side = "destination"
	return c
}

func threeEntities() []prepared {
	return prepare([]*partita.Entity{{PartitionKey: "p", RowKey: "a"}, {PartitionKey: "p", RowKey: "b"}, {PartitionKey: "p", RowKey: "c"}})
}

func subResponses(statuses ...int) func() []byte {
	return func() []byte {
		var rs []changeset.Response
		for _, s := range statuses {
			r := changeset.Response{Status: s}
			if s >= 300 {
				r.Body = []byte(`{"odata.error":{"code":"PropertyValueTooLarge","message":{"lang":"en-US","value":"1:The property value is too large."}}}`)
			}
			rs = append(rs, r)
		}
		return changeset.AppendResponse(nil, "batchresponse_x", "changesetresponse_y", rs)
	}
}

// TestBatchResponseMustConfirmEachOperation: a 202 whose body does not
// answer each operation (empty; fewer sub-responses; a status that is no
// number) fails the write instead of counting as written; one 2xx per
// operation succeeds, and a changeset's one failure names its entity.
func TestBatchResponseMustConfirmEachOperation(t *testing.T) {
	ctx := context.Background()
	for name, body := range map[string]func() []byte{
		"empty":        func() []byte { return nil },
		"one of three": subResponses(204),
		"no number": func() []byte {
			return []byte(strings.ReplaceAll(string(subResponses(204, 204, 204)()), "HTTP/1.1 204", "HTTP/1.1 2x4"))
		},
		"four for three": subResponses(204, 204, 204, 204),
	} {
		c := batchDest(t, http.StatusAccepted, body)
		_, err := c.writeBatch(ctx, "tab", threeEntities())
		var ref *Refused
		if err == nil || errors.As(err, &ref) {
			t.Errorf("%s: err = %v, want a failed write", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	c := batchDest(t, http.StatusAccepted, subResponses(204, 204, 204))
	if _, err := c.writeBatch(ctx, "tab", threeEntities()); err != nil {
		t.Errorf("three 204: %v", err)
	}
	c = batchDest(t, http.StatusAccepted, subResponses(400))
	_, err := c.writeBatch(ctx, "tab", threeEntities())
	var ref *Refused
	if !errors.As(err, &ref) || ref.RowKey != "b" {
		t.Errorf("changeset failure: %v, want entity b refused", err)
	}
}

// TestBareServerErrorNamesTable: a $batch that fails with a bare 500 on
// every try is reported with the table it was writing (a $batch path names
// none) and without a dangling ": " where the service's message would be.
func TestBareServerErrorNamesTable(t *testing.T) {
	c := batchDest(t, http.StatusInternalServerError, func() []byte { return nil })
	c.maxAttempts = 2
	_, err := c.writeBatch(context.Background(), "tab", threeEntities())
	if err == nil || err.Error() != "destination: POST /$batch: 500 Internal Server Error (writing table tab)" {
		t.Errorf("err = %v", err)
	}
}

// TestDestinationWideErrorStopsSkip: with --on-refused skip, a $batch
// failure that refuses every write (a deleted table, an expired SAS, 413)
// stops the copy at once with that error instead of being reported as a
// refusal of each entity; an entity-level code is still skipped.
func TestDestinationWideErrorStopsSkip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 250 {
		fmt.Fprintf(&b, `{"table":"tab","PartitionKey":"p","RowKey":"r%03d","props":[]}`+"\n", i)
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	errBody := func(code string) []byte {
		return []byte(`{"odata.error":{"code":"` + code + `","message":{"lang":"en-US","value":"0:no"}}}`)
	}
	for _, c := range []struct {
		name    string
		status  int
		body    []byte
		code    string
		refused bool
	}{
		{"deleted table", 404, errBody("TableNotFound"), "TableNotFound", false},
		{"expired SAS", 403, errBody("AuthenticationFailed"), "AuthenticationFailed", false},
		{"unauthenticated", 401, errBody("AuthenticationFailed"), "AuthenticationFailed", false},
		{"no permission", 403, errBody("AuthorizationPermissionMismatch"), "AuthorizationPermissionMismatch", false},
		{"too large", 413, errBody("RequestBodyTooLarge"), "RequestBodyTooLarge", false},
		{"sub-response TableNotFound", 202, nil, "TableNotFound", false},
		{"sub-response PropertyValueTooLarge", 202, nil, "PropertyValueTooLarge", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var batches atomic.Int32
			dst := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
				switch {
				case r.Method == "POST" && r.URL.Path == "/devstoreaccount1/Tables":
					w.WriteHeader(http.StatusNoContent)
				case r.URL.Path == "/devstoreaccount1/$batch":
					batches.Add(1)
					if c.status != 202 {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(c.status)
						w.Write(c.body)
						return true
					}
					body, _ := io.ReadAll(r.Body)
					ops := strings.Count(string(body), "PUT ")
					w.Header().Set("Content-Type", "multipart/mixed; boundary=batchresponse_x")
					w.WriteHeader(http.StatusAccepted)
					resp := changeset.Response{Status: 400, Body: errBody(c.code)}
					if c.code == "TableNotFound" {
						resp.Status = 404
					}
					if ops < 100 && c.refused {
						// After the refused entity is dropped: all written.
						var rs []changeset.Response
						for range ops {
							rs = append(rs, changeset.Response{Status: 204})
						}
						w.Write(changeset.AppendResponse(nil, "batchresponse_x", "changesetresponse_y", rs))
						return true
					}
					w.Write(changeset.AppendResponse(nil, "batchresponse_x", "changesetresponse_y", []changeset.Response{resp}))
				default:
					return false
				}
				return true
			})
			var out strings.Builder
			err := runCopy(t, Options{From: src, To: dst, SkipRefused: true, Out: &out})
			lines := strings.Count(out.String(), "refused:")
			if c.refused {
				if !errors.Is(err, ErrRefused) || lines != 2 {
					t.Fatalf("err = %v, %d refusals, want 2 refused and the rest written", err, lines)
				}
				return
			}
			if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.code) {
				t.Fatalf("err = %v, want the destination's %s", err, c.code)
			}
			if lines > 0 || batches.Load() > 1 {
				t.Errorf("%d refusal lines, %d batches, want the copy stopped at the first", lines, batches.Load())
			}
		})
	}
}

// TestOversizedResponseNotRetried: a body larger than the bound, declared
// (Content-Length) or not (chunked), fails at the first try, saying why,
// instead of being downloaded again 10 times; and a page of more than
// 1,000 entities is refused.
func TestOversizedResponseNotRetried(t *testing.T) {
	var tries atomic.Int32
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/devstoreaccount1/declared()":
			tries.Add(1)
			w.Header().Set("Content-Length", strconv.Itoa(maxResponse+10))
			w.Write([]byte(`{"value":[`))
		case "/devstoreaccount1/chunked()":
			tries.Add(1)
			w.Write([]byte(`{"value":["`))
			w.(http.Flusher).Flush()
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 40 { // 2.5 MiB
				if _, err := w.Write(chunk); err != nil {
					break
				}
			}
		case "/devstoreaccount1/many()":
			var b strings.Builder
			b.WriteString(`{"value":[`)
			for i := range 1001 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"PartitionKey":"p","RowKey":"r%04d"}`, i)
			}
			b.WriteString("]}")
			jsonReply(w, b.String())
		default:
			return false
		}
		return true
	})
	c := testClient(t, src)
	ctx := context.Background()
	for _, table := range []string{"declared", "chunked"} {
		tries.Store(0)
		if table == "chunked" {
			c.maxBody = 1 << 20
		}
		_, err := c.queryPage(ctx, table, "", "", "", 0, "")
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: err = %v, want too large", table, err)
		}
		if n := tries.Load(); n != 1 {
			t.Errorf("%s: %d tries, want 1", table, n)
		}
	}
	c.maxBody = maxResponse
	if _, err := c.queryPage(ctx, "many", "", "", "", 0, ""); err == nil || !strings.Contains(err.Error(), "1001 entities") {
		t.Errorf("many: err = %v, want a page of 1001 entities refused", err)
	}
}

// TestRedirectRefused: a redirect (a Table service never sends one) fails
// the request instead of reading what another host answers.
func TestRedirectRefused(t *testing.T) {
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		jsonReply(w, `{"value":[{"TableName":"elsewhere"}]}`)
	}))
	defer elsewhere.Close()
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/devstoreaccount1/Tables" || r.URL.Query().Get("$top") != "" {
			return false
		}
		http.Redirect(w, r, elsewhere.URL+"/devstoreaccount1/Tables", http.StatusFound)
		return true
	})
	var tries atomic.Int32
	c := testClient(t, src)
	c.retries = func() { tries.Add(1) }
	names, err := c.ListTables(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("names %v, err = %v, want the redirect refused", names, err)
	}
	if tries.Load() != 0 {
		t.Errorf("retried %d times", tries.Load())
	}
	if other.Load() != 0 {
		t.Error("the other host was asked")
	}
}

// TestUncarriableEntityRefused: an entity of a source page that the copy
// would carry wrongly — an empty property name (exported, then refused by
// the import), no PartitionKey (exported as ""), a property "a@b" (dropped
// as an annotation) — fails the export, the copy and verify, naming the
// table and the keys; annotations and odata.* members are still fine.
func TestUncarriableEntityRefused(t *testing.T) {
	for _, c := range []struct{ ent, want string }{
		{`{"PartitionKey":"p","RowKey":"r","":"x"}`, `PartitionKey="p" RowKey="r": a property with an empty name`},
		{`{"RowKey":"r","x":"y"}`, `PartitionKey=(none) RowKey="r": no PartitionKey`},
		{`{"PartitionKey":"p","x":"y"}`, `PartitionKey="p" RowKey=(none): no RowKey`},
		{`{"PartitionKey":"p","RowKey":"r","a@b":"x"}`, `PartitionKey="p" RowKey="r": property "a@b"`},
		{`{"PartitionKey":"p","RowKey":"r","a@b":"x","c":1}`, `property "a@b"`},
		{`{"PartitionKey":"p","RowKey":"r","odata.etag":"W/\"x\"","n@odata.type":"Edm.Int64","n":"5"}`, ""},
	} {
		src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.Method == "POST" && r.URL.Path == "/devstoreaccount1/Tables":
				w.WriteHeader(http.StatusNoContent)
			case r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "":
				jsonReply(w, `{"value":[{"TableName":"tab"}]}`)
			case r.URL.Path == "/devstoreaccount1/tab()":
				jsonReply(w, `{"value":[`+c.ent+`]}`)
			case r.URL.Path == "/devstoreaccount1/$batch":
				w.Header().Set("Content-Type", "multipart/mixed; boundary=batchresponse_x")
				w.WriteHeader(http.StatusAccepted)
				w.Write(subResponses(204)())
			default:
				return false
			}
			return true
		})
		for _, o := range []Options{
			{From: src, To: filepath.Join(t.TempDir(), "out")},
			{From: src, To: src},
			{From: src, To: src, Verify: true},
		} {
			err := runCopy(t, o)
			if c.want == "" {
				if err != nil {
					t.Errorf("%s to %.20s (verify %v): %v", c.ent, o.To, o.Verify, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "query tab: entity ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s to %.20s (verify %v): err = %v, want %s", c.ent, o.To, o.Verify, err, c.want)
			}
		}
	}
}

// TestDeclaredLengthIsNotAllocated: a response that declares a body of
// nearly the limit and sends a few bytes costs a few bytes, not an
// allocation of the declared length (1 GiB before).
func TestDeclaredLengthIsNotAllocated(t *testing.T) {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/devstoreaccount1/liar()" {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(maxResponse-1))
		w.Write([]byte(`{"value":[`)) // and the connection ends
		return true
	})
	c := testClient(t, src)
	c.maxAttempts = 1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.queryPage(context.Background(), "liar", "", "", "", 0, ""); err == nil {
		t.Fatal("a body cut short of its declared length was read as a page")
	}
	runtime.ReadMemStats(&after)
	// The room made ahead, allocated up to twice over by bytes.Buffer's
	// growth (and the race detector's build), and the request's own: far
	// under the declared gigabyte.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*maxPregrow {
		t.Errorf("%d MiB allocated for a body that declared %d MiB and sent 10 bytes", grew>>20, maxResponse>>20)
	}
}

// TestContinuationCycle: a source whose continuations alternate (A leads
// to B, B back to A) makes no progress either, with entities on its pages
// (they come again) or without (the continuation comes back), for every
// reader; and a page whose entities are out of order or repeated fails
// before any of it is written.
func TestContinuationCycle(t *testing.T) {
	flip := func(r *http.Request) (string, string) {
		if r.URL.Query().Get("NextPartitionKey") == "1!4!QQ--" {
			return "1!4!Qg--", ""
		}
		return "1!4!QQ--", ""
	}
	ent := `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`
	for _, c := range []struct {
		name string
		o    Options
		page string
		want string
	}{
		{"range", Options{Parallel: 1}, ent, "the source returns entities again"},
		{"range, empty pages", Options{Parallel: 1}, `{"value":[]}`, "no progress"},
		{"partitions", Options{Parallel: 2}, `{"value":[]}`, "no progress"},
		{"verify", Options{Parallel: 1, Verify: true}, ent, "the source returns entities again"},
		{"a page out of order", Options{Parallel: 1}, `{"value":[{"PartitionKey":"p","RowKey":"s","x":1},{"PartitionKey":"p","RowKey":"r","x":1}]}`, "in one page"},
		{"an entity twice in a page", Options{Parallel: 1}, `{"value":[{"PartitionKey":"p","RowKey":"r","x":1},{"PartitionKey":"p","RowKey":"r","x":2}]}`, "in one page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.From = loopSource(t, oneTable, c.page, flip)
			dir := t.TempDir()
			o.To = filepath.Join(dir, "out")
			if o.Verify {
				o.To = o.From
			}
			err := runCopy(t, o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if !o.Verify {
				// The export holds at most the first page, once.
				b, _ := os.ReadFile(filepath.Join(o.To, "loop.jsonl"))
				if n := strings.Count(string(b), `"RowKey":"r"`); n > 1 {
					t.Errorf("the export holds the entity %d times", n)
				}
			}
		})
	}
}

// TestKeyOrderOracle checks keyCmp against UTF-8 byte order (Go's string
// comparison) and UTF-16 code unit order (utf16.Encode, compared unit by
// unit) over random keys drawn from the ranges where the two differ.
func TestKeyOrderOracle(t *testing.T) {
	cmp16 := func(a, b string) int {
		x, y := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		return slices.Compare(x, y)
	}
	alphabet := []rune{'a', 'b', 'é', 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() string {
		r := make([]rune, rnd.IntN(4))
		for i := range r {
			r[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		return string(r)
	}
	for range 200000 {
		a, b := key(), key()
		c8, c16 := keyCmp(a, b)
		if want := strings.Compare(a, b); c8 != want {
			t.Fatalf("keyCmp(%q, %q) byte order %d, want %d", a, b, c8, want)
		}
		if want := cmp16(a, b); c16 != want {
			t.Fatalf("keyCmp(%q, %q) UTF-16 order %d, want %d", a, b, c16, want)
		}
		if b8, b16 := keyCmp([]byte(a), []byte(b)); b8 != c8 || b16 != c16 {
			t.Fatalf("keyCmp on bytes differs from strings for %q, %q", a, b)
		}
	}
	// A source sorted in either order passes keyAfter; a repeat does not.
	if !keyAfter("p", "\U0001F600", "p", "\uE000") || !keyAfter("p", "\uE000", "p", "\U0001F600") {
		t.Error("keyAfter refuses a step that one of the orders takes")
	}
	if keyAfter("p", "r", "p", "r") || keyAfter("q", "", "p", "z") {
		t.Error("keyAfter takes a repeat or a step back")
	}
}

// TestThrottlingRetried: the statuses the Azure SDKs retry (429 from a
// proxy or a throttling gateway, 408, 502, 504, besides 500 and 503) are
// retried after the wait the answer asks for; a 400 is not.
func TestThrottlingRetried(t *testing.T) {
	for _, c := range []struct {
		status int
		header [2]string
		wait   time.Duration
	}{
		{http.StatusTooManyRequests, [2]string{"x-ms-retry-after-ms", "300"}, 300 * time.Millisecond},
		{http.StatusTooManyRequests, [2]string{"Retry-After", "1"}, time.Second},
		{http.StatusRequestTimeout, [2]string{}, 0},
		{http.StatusBadGateway, [2]string{"retry-after-ms", "200"}, 200 * time.Millisecond},
		{http.StatusGatewayTimeout, [2]string{}, 0},
		{http.StatusServiceUnavailable, [2]string{}, 0},
	} {
		var calls atomic.Int32
		src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
			if calls.Add(1) == 1 {
				if c.header[0] != "" {
					w.Header().Set(c.header[0], c.header[1])
				}
				w.WriteHeader(c.status)
				return true
			}
			jsonReply(w, `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`)
			return true
		})
		cl := testClient(t, src)
		start := time.Now()
		p, err := cl.queryPage(context.Background(), "t", "", "", "", 0, "")
		if err != nil {
			t.Fatalf("%d: %v", c.status, err)
		}
		if len(p.entities) != 1 || calls.Load() != 2 {
			t.Fatalf("%d: %d entities after %d requests, want 1 after 2", c.status, len(p.entities), calls.Load())
		}
		if d := time.Since(start); d < c.wait {
			t.Errorf("%d with %s: %s: retried after %v", c.status, c.header[0], c.header[1], d)
		}
	}
	var calls atomic.Int32
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		calls.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return true
	})
	if _, err := testClient(t, src).queryPage(context.Background(), "t", "", "", "", 0, ""); err == nil || calls.Load() != 1 {
		t.Fatalf("400: %v after %d requests, want an error after 1", err, calls.Load())
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"X-Ms-Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"20"}}, 20 * time.Millisecond},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {now.Add(5 * time.Second).Format(http.TimeFormat)}}, 5 * time.Second},
		{http.Header{"Retry-After": {now.Add(-5 * time.Second).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"3600"}}, 0},
		{http.Header{"X-Ms-Retry-After-Ms": {"-1"}}, 0},
		{http.Header{"X-Ms-Retry-After-Ms": {"99999999999999999999"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("retryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

// TestTablesListedInACycle: a source whose table list goes round in
// empty pages (a, b, a …, each continuation new to the page before it)
// fails the copy instead of looping, and so does one that lists a table
// twice (once per case), which would copy it twice.
func TestTablesListedInACycle(t *testing.T) {
	ent := `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`
	none := func(*http.Request) (string, string) { return "", "" }
	cycle := func(r *http.Request) (string, string) {
		if r.URL.Query().Get("NextTableName") == "a" {
			return `{"value":[]}`, "b"
		}
		return `{"value":[]}`, "a"
	}
	err := runCopy(t, Options{From: loopSource(t, cycle, ent, none), To: filepath.Join(t.TempDir(), "out")})
	if err == nil || !strings.Contains(err.Error(), "came back after other empty pages") {
		t.Errorf("tables in a cycle of empty pages: err = %v, want no progress", err)
	}
	twice := func(r *http.Request) (string, string) {
		if r.URL.Query().Get("NextTableName") == "" {
			return `{"value":[{"TableName":"loop"}]}`, "m"
		}
		return `{"value":[{"TableName":"LOOP"}]}`, ""
	}
	out := filepath.Join(t.TempDir(), "out")
	err = runCopy(t, Options{From: loopSource(t, twice, ent, none), To: out})
	if err == nil || !strings.Contains(err.Error(), `table "LOOP" is listed twice`) {
		t.Errorf("a table listed twice: err = %v, want it refused", err)
	}
}

// TestSourceIgnoresRange: a source that answers every range of a parallel
// copy with the whole table (it ignores the PartitionKey conditions of
// $filter) fails the copy, naming the key, instead of writing each
// entity once per range.
func TestSourceIgnoresRange(t *testing.T) {
	pks := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	var all strings.Builder
	all.WriteString(`{"value":[`)
	for i, pk := range pks {
		if i > 0 {
			all.WriteString(",")
		}
		fmt.Fprintf(&all, `{"PartitionKey":%q,"RowKey":"r","x":1}`, pk)
	}
	all.WriteString("]}")
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/devstoreaccount1/Tables" && q.Get("$top") == "":
			jsonReply(w, `{"value":[{"TableName":"tone"}]}`)
		case r.URL.Path == "/devstoreaccount1/tone()" && q.Get("$select") == "PartitionKey":
			// The partition listing is answered right: the next
			// PartitionKey after the one in "PartitionKey gt '…'".
			_, last, _ := strings.Cut(q.Get("$filter"), "PartitionKey gt '")
			last = strings.TrimSuffix(last, "'")
			next := ""
			for _, pk := range pks {
				if pk > last || (last == "" && q.Get("$filter") == "") {
					next = pk
					break
				}
			}
			if next == "" {
				jsonReply(w, `{"value":[]}`)
			} else {
				jsonReply(w, `{"value":[{"PartitionKey":"`+next+`"}]}`)
			}
		case r.URL.Path == "/devstoreaccount1/tone()":
			jsonReply(w, all.String())
		default:
			return false
		}
		return true
	})
	out := filepath.Join(t.TempDir(), "out")
	err := runCopy(t, Options{From: src, To: out, Parallel: 4})
	if err == nil || !strings.Contains(err.Error(), "does not apply the filter") {
		t.Fatalf("err = %v, want the source's answer outside the range refused", err)
	}
}

// TestEncodedResponseRefused: the copy asks for no compression, so a
// source's gzip body (a megabyte of it unpacked to the gigabyte bound,
// per request) is refused as it is, not unpacked.
func TestEncodedResponseRefused(t *testing.T) {
	var asked atomic.Value
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "" {
			asked.Store(r.Header.Get("Accept-Encoding"))
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			gz.Write([]byte(`{"value":[{"TableName":"zipped"}]}`))
			gz.Close()
			return true
		}
		return false
	})
	err := runCopy(t, Options{From: src, To: filepath.Join(t.TempDir(), "out")})
	if err == nil || !strings.Contains(err.Error(), "the response is encoded") {
		t.Errorf("err = %v, want the encoded response refused", err)
	}
	if a, _ := asked.Load().(string); a != "" {
		t.Errorf("the copy sent Accept-Encoding: %q", a)
	}
}

// TestLargeBodiesOneAtATime: past largeBody, a response body is read
// only while holding largeGate, so parallel readers do not each grow a
// buffer towards the gigabyte bound at once; a smaller body does not wait.
func TestLargeBodiesOneAtATime(t *testing.T) {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		size := 100
		if r.URL.Path == "/devstoreaccount1/big()" {
			size = 5000
		}
		jsonReply(w, `{"value":[{"PartitionKey":"p","RowKey":"r","x":"`+strings.Repeat("x", size)+`"}]}`)
		return true
	})
	c := testClient(t, src)
	c.largeBody = 1000
	ctx := context.Background()
	largeGate <- struct{}{} // as another reader would
	done := make(chan error, 1)
	go func() {
		_, err := c.queryPage(ctx, "big", "", "", "", 0, "")
		done <- err
	}()
	if _, err := c.queryPage(ctx, "small", "", "", "", 0, ""); err != nil {
		t.Fatalf("a small body while the gate is held: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("a large body was read while another held the gate (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	<-largeGate
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the large body once the gate was free: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the large body was not read once the gate was free")
	}
	if len(largeGate) != 0 {
		t.Error("the reader kept the gate")
	}
}
