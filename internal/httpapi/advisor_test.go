package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/changeset"
)

// findings reads the advisor's JSON as a client of /advisor does.
func findings(t *testing.T, a *advisor.Advisor) map[string]advisor.Finding {
	t.Helper()
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/advisor", nil))
	var r advisor.Report
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("/advisor: %v %s", err, w.Body)
	}
	m := map[string]advisor.Finding{}
	for _, f := range r.Findings {
		m[f.Kind+" "+f.Table] = f
	}
	return m
}

// TestAdvisor_FromRequests drives anti-patterns through the HTTP API (the
// hooks on the write, read, query and batch paths) next to a
// well-designed table, and checks that the findings name the right
// tables and only those.
func TestAdvisor_FromRequests(t *testing.T) {
	a := advisor.New(advisor.Options{MinWrites: 100, MinQueries: 10})
	s := obsServer(t, Options{Advisor: a})
	noContent := map[string]string{"Prefer": "return-no-content"}
	for _, tb := range []string{"good", "hot", "log", "scan", "big"} {
		wantStatus(t, do(t, s, "POST", "", "/Tables", noContent, []byte(`{"TableName":"`+tb+`"}`)), 204)
	}
	for i := 0; i < 150; i++ {
		// good: spread writes, point reads, range queries.
		pk := fmt.Sprintf("d%02d", (i*37)%50)
		rk := fmt.Sprintf("%04d", (i*7919)%10000)
		wantStatus(t, do(t, s, "POST", "", "/good", noContent, []byte(`{"PartitionKey":"`+pk+`","RowKey":"`+rk+`"}`)), 204)
		wantStatus(t, do(t, s, "GET", "", "/good(PartitionKey='"+pk+"',RowKey='"+rk+"')", nil, nil), 200)
		// hot: upserts into one partition.
		wantStatus(t, do(t, s, "PUT", "", fmt.Sprintf("/hot(PartitionKey='only',RowKey='%04d')", (i*7919)%10000), nil, []byte(`{"N":1}`)), 204)
		// log: PartitionKeys that only increase.
		wantStatus(t, do(t, s, "POST", "", "/log", noContent, []byte(fmt.Sprintf(`{"PartitionKey":"2026%06d","RowKey":"x"}`, i))), 204)
	}
	for i := 0; i < 20; i++ {
		wantStatus(t, do(t, s, "GET", "", "/good()?$filter="+url.QueryEscape(fmt.Sprintf("PartitionKey eq 'd%02d' and RowKey ge '0' and RowKey lt '5'", i)), nil, nil), 200)
	}
	// scan: a table scan for one entity among 150.
	for i := 0; i < 150; i++ {
		e := fmt.Sprintf(`{"PartitionKey":"p%02d","RowKey":"%03d","Email":"u%d@example.com"}`, i%10, (i*97)%1000, i)
		wantStatus(t, do(t, s, "POST", "", "/scan", noContent, []byte(e)), 204)
	}
	for i := 0; i < 10; i++ {
		wantStatus(t, do(t, s, "GET", "", "/scan()?$filter="+url.QueryEscape(fmt.Sprintf("Email eq 'u%d@example.com'", i)), nil, nil), 200)
	}
	// big: an entity near 1 MiB (strings count two bytes a character).
	// 16 properties of 30,000 characters: about 960,000 bytes.
	var big strings.Builder
	big.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&big, `,"B%02d":"%s"`, i, strings.Repeat("a", 30000))
	}
	big.WriteString("}")
	wantStatus(t, do(t, s, "POST", "", "/big", noContent, []byte(big.String())), 204)

	got := findings(t, a)
	for _, want := range []string{"hot-partition hot", "append-partition-key log", "table-scan scan", "large-entity big"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing finding %q", want)
		}
		delete(got, want)
	}
	// The log table's inserts also all go to the newest partition, and
	// the scan table's are spread: anything else is a false alarm.
	delete(got, "hot-partition log")
	for k, f := range got {
		t.Errorf("unexpected finding %s: %s", k, f.Summary)
	}
	if f := findings(t, a)["table-scan scan"]; f.Evidence["examined"] != 1500 || f.Evidence["returned"] != 10 {
		t.Errorf("table scan evidence: %v", f.Evidence)
	}
}

// TestAdvisor_BatchLargeEntity checks that an entity near the size limit
// is seen in a changeset too, where each operation's own body (not the
// batch's) decides whether its size is computed.
func TestAdvisor_BatchLargeEntity(t *testing.T) {
	a := advisor.New(advisor.Options{})
	s := obsServer(t, Options{Advisor: a})
	wantStatus(t, do(t, s, "POST", "", "/Tables", map[string]string{"Prefer": "return-no-content"}, []byte(`{"TableName":"big"}`)), 204)
	var big strings.Builder
	big.WriteString(`{"PartitionKey":"p","RowKey":"r1"`)
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&big, `,"B%02d":"%s"`, i, strings.Repeat("a", 30000))
	}
	big.WriteString("}")
	reqs := []changeset.Request{}
	for _, ent := range []string{big.String(), `{"PartitionKey":"p","RowKey":"r2"}`} {
		reqs = append(reqs, changeset.Request{
			Method: http.MethodPost,
			Target: "http://127.0.0.1:10002/devstoreaccount1/big",
			Header: http.Header{"Content-Type": {"application/json"}, "Prefer": {"return-no-content"}, "Content-Length": {strconv.Itoa(len(ent))}},
			Body:   []byte(ent),
		})
	}
	body := changeset.AppendRequest(nil, "batch_1", "changeset_1", &changeset.Batch{Requests: reqs, Changeset: true})
	w := do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": changeset.ContentType("batch_1")}, body)
	wantStatus(t, w, 202)
	if strings.Contains(w.Body.String(), "odata.error") {
		t.Fatalf("batch: %s", w.Body)
	}
	f, ok := findings(t, a)["large-entity big"]
	if !ok || f.PartitionKey != "p" || f.Evidence["entities"] != 1 {
		t.Fatalf("large-entity big: %v %+v", ok, f)
	}
}
