package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/changeset"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/metrics"
	"github.com/partita/partita/internal/tablestore"
	dto "github.com/prometheus/client_model/go"
)

// obsServer is a Server over the in-memory engine with metrics on.
func obsServer(t testing.TB, o Options) *Server {
	t.Helper()
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	o.Store, o.Accounts = ts, kr
	return New(o)
}

// do sends a SharedKeyLite-signed request (query strings allowed) and
// returns the response. account "" is devstoreaccount1.
func do(t testing.TB, s *Server, method, account, pathQuery string, hdr map[string]string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	if account == "" {
		account = "devstoreaccount1"
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:10002/"+account+pathQuery, bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	path, _, _ := strings.Cut(pathQuery, "?")
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("Accept", "application/json;odata=nometadata")
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	sig := auth.Sign(kr["devstoreaccount1"].Keys[0], auth.StringToSignLite(date, "/"+account+"/"+account+path)) // path style: the path holds the account too
	r.Header.Set("Authorization", "SharedKeyLite "+account+":"+sig)
	if len(body) > 0 {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func wantStatus(t testing.TB, w *httptest.ResponseRecorder, status int) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
}

// sample finds the series of family name whose labels include want.
func sample(t *testing.T, m *metrics.Metrics, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.Metric {
			have := map[string]string{}
			for _, l := range s.Label {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			return s
		}
	}
	return nil
}

func counter(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil {
		return 0
	}
	return s.GetCounter().GetValue()
}

func TestMetrics_KnownRequestMix(t *testing.T) {
	m := metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
	s := obsServer(t, Options{Metrics: m})
	noContent := map[string]string{"Prefer": "return-no-content"}

	wantStatus(t, do(t, s, "POST", "", "/Tables", noContent, []byte(`{"TableName":"mtab"}`)), 204)
	var inBytes int
	for _, e := range []string{
		`{"PartitionKey":"p1","RowKey":"r1","Color":"red"}`,
		`{"PartitionKey":"p1","RowKey":"r2","Color":"blue"}`,
		`{"PartitionKey":"p2","RowKey":"r1","Color":"blue"}`,
	} {
		wantStatus(t, do(t, s, "POST", "", "/mtab", noContent, []byte(e)), 204)
		inBytes += len(e)
	}
	dup := `{"PartitionKey":"p1","RowKey":"r1"}`
	wantStatus(t, do(t, s, "POST", "", "/mtab", noContent, []byte(dup)), 409)
	inBytes += len(dup)

	var outBytes int
	for i := 0; i < 2; i++ {
		w := do(t, s, "GET", "", "/mtab(PartitionKey='p1',RowKey='r1')", nil, nil)
		wantStatus(t, w, 200)
		outBytes += w.Body.Len()
	}
	w := do(t, s, "GET", "", "/mtab(PartitionKey='p9',RowKey='r1')", nil, nil)
	wantStatus(t, w, 404)
	outBytes += w.Body.Len()

	// A partition scan examining 2 and returning 2, a table scan
	// examining 3 and returning 1, a point query.
	wantStatus(t, do(t, s, "GET", "", "/mtab()?$filter="+url.QueryEscape("PartitionKey eq 'p1'"), nil, nil), 200)
	wantStatus(t, do(t, s, "GET", "", "/mtab()?$filter="+url.QueryEscape("Color eq 'red'"), nil, nil), 200)
	wantStatus(t, do(t, s, "GET", "", "/mtab()?$filter="+url.QueryEscape("PartitionKey eq 'p2' and RowKey eq 'r1'"), nil, nil), 200)

	// A change set of two inserts.
	reqs := []changeset.Request{}
	for i := 0; i < 2; i++ {
		ent := fmt.Sprintf(`{"PartitionKey":"p3","RowKey":"r%d"}`, i)
		reqs = append(reqs, changeset.Request{Method: "POST", Target: "http://127.0.0.1:10002/devstoreaccount1/mtab",
			Header: http.Header{"Content-Type": {"application/json"}, "Prefer": {"return-no-content"}, "Content-Length": {strconv.Itoa(len(ent))}},
			Body:   []byte(ent)})
	}
	body := changeset.AppendRequest(nil, "batch_x", "changeset_x", &changeset.Batch{Requests: reqs, Changeset: true})
	wantStatus(t, do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": changeset.ContentType("batch_x")}, body), 202)

	// An account that is not configured is labelled "other".
	wantStatus(t, do(t, s, "GET", "intruder", "/Tables", nil, nil), 403)

	const acct = "devstoreaccount1"
	for _, c := range []struct {
		op, status, code string
		want             float64
	}{
		{"CreateTable", "204", "", 1},
		{"InsertEntity", "204", "", 3},
		{"InsertEntity", "409", "EntityAlreadyExists", 1},
		{"GetEntity", "200", "", 2},
		{"GetEntity", "404", "ResourceNotFound", 1},
		{"QueryEntities", "200", "", 3},
		{"EntityGroupTransaction", "202", "", 1},
	} {
		got := counter(t, m, "partita_requests_total", map[string]string{"account": acct, "operation": c.op, "status": c.status, "code": c.code})
		if got != c.want {
			t.Errorf("requests{%s,%s,%q} = %v, want %v", c.op, c.status, c.code, got, c.want)
		}
	}
	if got := counter(t, m, "partita_requests_total", map[string]string{"account": "other", "operation": "Unknown", "status": "403", "code": "AuthenticationFailed"}); got != 1 {
		t.Errorf("requests of an unknown account = %v, want 1", got)
	}
	for op, want := range map[string]uint64{"GetEntity": 3, "InsertEntity": 4, "QueryEntities": 3, "CreateTable": 1} {
		s := sample(t, m, "partita_request_duration_seconds", map[string]string{"operation": op})
		if s == nil || s.GetHistogram().GetSampleCount() != want {
			t.Errorf("latency count of %s = %v, want %d", op, s.GetHistogram().GetSampleCount(), want)
		}
	}
	for _, c := range []struct {
		class                       string
		queries, examined, returned float64
	}{{"partition", 1, 2, 2}, {"table", 1, 3, 1}, {"point", 1, 1, 1}, {"range", 0, 0, 0}} {
		l := map[string]string{"class": c.class}
		q, e, r := counter(t, m, "partita_queries_total", l), counter(t, m, "partita_query_entities_examined_total", l), counter(t, m, "partita_query_entities_returned_total", l)
		if q != c.queries || e != c.examined || r != c.returned {
			t.Errorf("class %s: queries %v examined %v returned %v, want %v %v %v", c.class, q, e, r, c.queries, c.examined, c.returned)
		}
	}
	if b := sample(t, m, "partita_batch_operations", nil); b == nil || b.GetHistogram().GetSampleCount() != 1 || b.GetHistogram().GetSampleSum() != 2 {
		t.Errorf("batch sizes: %v", b)
	}
	if got := counter(t, m, "partita_request_bytes_total", map[string]string{"operation": "InsertEntity"}); got != float64(inBytes) {
		t.Errorf("bytes in of InsertEntity = %v, want %d", got, inBytes)
	}
	if got := counter(t, m, "partita_response_bytes_total", map[string]string{"operation": "GetEntity"}); got != float64(outBytes) {
		t.Errorf("bytes out of GetEntity = %v, want %d", got, outBytes)
	}
	// Every authenticated request took a slot and gave it back.
	if g := sample(t, m, "partita_requests_in_flight", nil); g == nil || g.GetGauge().GetValue() != 0 {
		t.Errorf("in flight after the requests: %v", g)
	}
	if q := sample(t, m, "partita_queue_wait_seconds", nil); q == nil || q.GetHistogram().GetSampleCount() != 12 {
		t.Errorf("queue waits: %v, want 12 (every authenticated request)", q)
	}
}

// TestMetrics_BusyCounted checks that a request refused for want of a
// slot is counted as a 503 of reason "slots".
func TestMetrics_BusyCounted(t *testing.T) {
	m := metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
	ts, _ := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	bs := &blockingStore{Store: ts, entered: make(chan struct{}, 1), release: make(chan struct{})}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: bs, Accounts: kr, MaxInFlight: 1, QueueWait: 20 * time.Millisecond, Metrics: m})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeHTTP(httptest.NewRecorder(), signedRequest(t, "GET", "/devstoreaccount1/Tables"))
	}()
	<-bs.entered
	if g := sample(t, m, "partita_requests_in_flight", nil); g.GetGauge().GetValue() != 1 {
		t.Errorf("in flight while one request holds the only slot: %v", g.GetGauge().GetValue())
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, signedRequest(t, "GET", "/devstoreaccount1/Tables"))
	close(bs.release)
	<-done
	wantStatus(t, w, 503)
	if got := counter(t, m, "partita_busy_total", map[string]string{"reason": "slots"}); got != 1 {
		t.Errorf("busy{slots} = %v, want 1", got)
	}
	if got := counter(t, m, "partita_requests_total", map[string]string{"operation": "Unknown", "status": "503", "code": "ServerBusy"}); got != 1 {
		t.Errorf("503 requests = %v, want 1", got)
	}
}

// TestMetrics_CardinalityBounded sends requests for 10,000 partitions,
// 10,000 table names and 10,000 account names: the number of series does
// not grow with them.
func TestMetrics_CardinalityBounded(t *testing.T) {
	m := metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
	s := obsServer(t, Options{Metrics: m})
	noContent := map[string]string{"Prefer": "return-no-content"}
	wantStatus(t, do(t, s, "POST", "", "/Tables", noContent, []byte(`{"TableName":"card"}`)), 204)
	round := func(i int) {
		e := fmt.Sprintf(`{"PartitionKey":"pk%d","RowKey":"rk%d"}`, i, i)
		wantStatus(t, do(t, s, "POST", "", "/card", noContent, []byte(e)), 204)
		wantStatus(t, do(t, s, "GET", "", fmt.Sprintf("/card(PartitionKey='pk%d',RowKey='rk%d')", i, i), nil, nil), 200)
		wantStatus(t, do(t, s, "GET", "", fmt.Sprintf("/t%d()?$filter=%s", i, url.QueryEscape(fmt.Sprintf("PartitionKey eq 'pk%d'", i))), nil, nil), 404)
		wantStatus(t, do(t, s, "GET", fmt.Sprintf("acct%d", i), "/Tables", nil, nil), 403)
		wantStatus(t, do(t, s, "BREW", "", fmt.Sprintf("/t%d", i), nil, nil), 405)
	}
	series := func() int {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fams {
			if strings.HasPrefix(f.GetName(), "partita_") {
				n += len(f.Metric)
			}
		}
		return n
	}
	for i := 0; i < 10; i++ {
		round(i)
	}
	before := series()
	for i := 10; i < 10000; i++ {
		round(i)
	}
	if after := series(); after != before {
		t.Errorf("series grew from %d to %d over 10,000 partitions, tables and accounts", before, after)
	}
	fams, _ := m.Registry().Gather()
	var out bytes.Buffer
	for _, f := range fams {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if strings.Contains(l.GetValue(), "pk5") || strings.Contains(l.GetValue(), "acct5") || strings.Contains(l.GetValue(), "t5") {
					fmt.Fprintf(&out, "%s %v\n", f.GetName(), s.Label)
				}
			}
		}
	}
	if out.Len() > 0 {
		t.Errorf("a client's names became labels:\n%s", out.String())
	}
	// The exposition itself stays small.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !bytes.Contains(body, []byte("partita_requests_total")) {
		t.Errorf("/metrics: %d %.300s", rec.Code, body)
	}
}
