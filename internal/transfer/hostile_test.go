package transfer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
