package changeset

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestGoSDKSubmitTransaction runs the real aztables v1.4.1 client against a
// server that decodes its $batch with Decode and answers with
// AppendResponse. It checks that
//   - Decode reads what the SDK writes (empty DataServiceVersion and
//     x-ms-version, sorted headers, $format on insert and delete only),
//   - AppendRequest reproduces the SDK's body byte for byte,
//   - the SDK accepts the success response and reports the failure one.
func TestGoSDKSubmitTransaction(t *testing.T) {
	var (
		mu      sync.Mutex
		decoded *Batch
		reply   []Response
		problem string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		ct := r.Header.Get("Content-Type")
		b, err := Decode(ct, body, 100)
		if err != nil {
			problem = "Decode: " + err.Error()
			http.Error(w, "{}", http.StatusBadRequest)
			return
		}
		decoded = b
		// Take the SDK's random boundaries and re-encode.
		_, batchB, _ := strings.Cut(ct, "boundary=")
		_, rest, _ := strings.Cut(string(body), "boundary=")
		csB, _, _ := strings.Cut(rest, "\r\n")
		if enc := AppendRequest(nil, batchB, csB, b); string(enc) != string(body) {
			problem = "AppendRequest differs from the SDK body:\nSDK:  " + quote(body) + "\nmine: " + quote(enc)
		}
		bb, cb := NewBoundaries()
		w.Header().Set("Content-Type", ContentType(bb))
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(AppendResponse(nil, bb, cb, reply))
	}))
	defer srv.Close()

	client, err := aztables.NewClientWithNoCredential(srv.URL+"/devstoreaccount1/mytable", &aztables.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: srv.Client()},
	})
	if err != nil {
		t.Fatal(err)
	}
	etag := azcore.ETag(`W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`)
	key := "O'Brien, a/b é #?%"
	actions := []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"p1","RowKey":"r1","Age":23}`)},
		{ActionType: aztables.TransactionTypeDelete, Entity: []byte(`{"PartitionKey":"p1","RowKey":"r2"}`)},
		{ActionType: aztables.TransactionTypeUpdateMerge, Entity: []byte(`{"PartitionKey":"p1","RowKey":"r3","X":1}`), IfMatch: &etag},
		{ActionType: aztables.TransactionTypeInsertReplace, Entity: []byte(`{"PartitionKey":"p1","RowKey":` + mustJSON(key) + `}`)},
	}

	// Success.
	reply = []Response{
		{Status: 204, Header: []HeaderField{{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-cache"}, {"Preference-Applied", "return-no-content"}, {"DataServiceVersion", "3.0;"}, {"ETag", string(etag)}}},
		{Status: 204, Header: []HeaderField{{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-cache"}, {"DataServiceVersion", "1.0;"}}},
		{Status: 204, Header: []HeaderField{{"DataServiceVersion", "1.0;"}, {"ETag", string(etag)}}},
		{Status: 204, Header: []HeaderField{{"DataServiceVersion", "1.0;"}, {"ETag", string(etag)}}},
	}
	if _, err := client.SubmitTransaction(context.Background(), actions, nil); err != nil {
		t.Fatalf("SubmitTransaction (success response): %v", err)
	}
	mu.Lock()
	if problem != "" {
		t.Fatal(problem)
	}
	b := decoded
	mu.Unlock()

	base := srv.URL + "/devstoreaccount1/mytable"
	empty := []string{""}
	want := []struct {
		method, target string
		header         http.Header
		body           map[string]any
	}{
		{"POST", base + goFormatQS, http.Header{
			"Accept": {"application/json;odata=minimalmetadata"}, "Content-Length": {"44"},
			"Content-Type": {"application/json"}, "Dataserviceversion": empty,
			"Prefer": {"return-no-content"}, "X-Ms-Version": empty,
		}, map[string]any{"PartitionKey": "p1", "RowKey": "r1", "Age": 23.0}},
		{"DELETE", base + "(PartitionKey='p1',RowKey='r2')" + goFormatQS, http.Header{
			"Accept": {"application/json;odata=minimalmetadata"}, "Dataserviceversion": empty,
			"If-Match": {"*"}, "X-Ms-Version": empty,
		}, nil},
		{"PATCH", base + "(PartitionKey='p1',RowKey='r3')", http.Header{
			"Accept": {"application/json"}, "Content-Length": {"41"}, "Content-Type": {"application/json"},
			"Dataserviceversion": empty, "If-Match": {string(etag)}, "X-Ms-Version": empty,
		}, map[string]any{"PartitionKey": "p1", "RowKey": "r3", "X": 1.0}},
		// The batch writer does not double the quote (single-entity calls go
		// through prepareKey, transactional_batch.go does not): the target
		// holds a lone %27 inside the key literal.
		{"PUT", base + "(PartitionKey='p1',RowKey='O%27Brien%2C%20a%2Fb%20%C3%A9%20%23%3F%25')", http.Header{
			"Accept": {"application/json"}, "Content-Length": {"52"}, "Content-Type": {"application/json"},
			"Dataserviceversion": empty, "X-Ms-Version": empty,
		}, map[string]any{"PartitionKey": "p1", "RowKey": key}},
	}
	if !b.Changeset || len(b.Requests) != len(want) {
		t.Fatalf("decoded %+v", b)
	}
	for i, w := range want {
		r := b.Requests[i]
		if r.Method != w.method || r.Target != w.target || r.ContentID != "" {
			t.Errorf("request %d: %s %s (Content-ID %q), want %s %s", i, r.Method, r.Target, r.ContentID, w.method, w.target)
		}
		if !reflect.DeepEqual(r.Header, w.header) {
			t.Errorf("request %d: header %q, want %q", i, r.Header, w.header)
		}
		var got map[string]any
		if len(r.Body) > 0 {
			if err := json.Unmarshal(r.Body, &got); err != nil {
				t.Errorf("request %d: body %q: %v", i, r.Body, err)
			}
		}
		if !reflect.DeepEqual(got, w.body) {
			t.Errorf("request %d: body %v, want %v", i, got, w.body)
		}
	}

	// Failure: one 409 sub-response. aztables v1.4.1 returns the error built
	// from the outer 202 response.
	reply = failureResps
	_, err = client.SubmitTransaction(context.Background(), actions, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("SubmitTransaction (409 response): err = %v, want an *azcore.ResponseError", err)
	}
	if re.StatusCode != http.StatusAccepted {
		t.Errorf("ResponseError.StatusCode = %d, want 202", re.StatusCode)
	}
	mu.Lock()
	if problem != "" {
		t.Error(problem)
	}
	mu.Unlock()
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func quote(b []byte) string {
	s, _ := json.Marshal(string(b))
	return string(s)
}
