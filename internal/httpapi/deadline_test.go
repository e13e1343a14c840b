package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// TestRequestTimeout: `timeout` is a positive whole number of seconds,
// reduced to the maximum; anything else is 400 InvalidQueryParameterValue.
func TestRequestTimeout(t *testing.T) {
	const max = 30 * time.Second
	for _, c := range []struct {
		query string
		want  time.Duration
		given bool
		bad   bool
	}{
		{"", max, false, false},
		{"comp=list", max, false, false},
		{"timeout=1", time.Second, true, false},
		{"timeout=2", 2 * time.Second, true, false},
		{"timeout=007", 7 * time.Second, true, false},
		{"timeout=29", 29 * time.Second, true, false},
		{"timeout=30", max, true, false},
		{"timeout=31", max, true, false},
		{"timeout=90", max, true, false},
		{"timeout=99999999999999999999999", max, true, false},   // beyond int64, still a number
		{"timeout=2&timeout=abc", 2 * time.Second, true, false}, // the first value counts, as q.Get
		{"timeout=", 0, true, true},
		{"timeout=0", 0, true, true},
		{"timeout=000", 0, true, true},
		{"timeout=-1", 0, true, true},
		{"timeout=%2B5", 0, true, true}, // +5
		{"timeout=1.5", 0, true, true},
		{"timeout=abc", 0, true, true},
		{"timeout=%205", 0, true, true},
		{"timeout=5s", 0, true, true},
		{"timeout=0x10", 0, true, true},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		d, given, err := requestTimeout(q, max)
		if c.bad {
			code, msg := classify(err)
			if err == nil || code != partita.CodeInvalidQueryParameterValue || statusOf(code) != 400 || msg == "" {
				t.Errorf("%q: %v, %v, %v; want 400 InvalidQueryParameterValue", c.query, d, given, err)
			}
			continue
		}
		if err != nil || d != c.want || given != c.given {
			t.Errorf("%q: %v, %v, %v; want %v, %v", c.query, d, given, err, c.want, c.given)
		}
	}
	// A smaller maximum (--max-request-timeout) reduces every timeout.
	if d, _, _ := requestTimeout(url.Values{"timeout": {"5"}}, 1500*time.Millisecond); d != 1500*time.Millisecond {
		t.Errorf("timeout=5 under a 1.5s maximum: %v", d)
	}
}

// stuckStore's Write waits until its context is done, as a PostgreSQL
// commit waits for a lost synchronous standby, and reports the deadline
// it was given.
type stuckStore struct {
	partita.Store
	deadline chan time.Duration // time left when Write was entered; -1: none
}

func (s *stuckStore) Write(ctx context.Context, account, table string, op partita.Op) (partita.Result, error) {
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.deadline <- left
	select {
	case <-ctx.Done():
		return partita.Result{}, ctx.Err()
	case <-time.After(5 * time.Second): // fail rather than hang
		return partita.Result{}, errors.New("stuckStore: the context was not done within 5s")
	}
}

// signedRequestQuery is signedRequest with a query string, which
// SharedKeyLite does not sign for the Table service.
func signedRequestQuery(t testing.TB, method, path, query, body string) *http.Request {
	t.Helper()
	r := signedRequest(t, method, path)
	r2 := httptest.NewRequest(method, "http://127.0.0.1:10002"+path+"?"+query, strings.NewReader(body))
	r2.Header = r.Header
	if body != "" {
		r2.Header.Set("Content-Type", "application/json")
	}
	return r2
}

// TestServer_TimeoutAnswersOperationTimedOut: a write stuck in the store
// is abandoned at the request's deadline with 500 OperationTimedOut and
// the service's message; the deadline is the `timeout` given, reduced to
// MaxTimeout, or MaxTimeout when none is given and DeadlineByDefault is
// set; without it a request that gives none has no deadline. The request
// slot is free again after each timed-out request (MaxInFlight 1).
func TestServer_TimeoutAnswersOperationTimedOut(t *testing.T) {
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.CreateTable(context.Background(), "devstoreaccount1", "stuck"); err != nil {
		t.Fatal(err)
	}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	ss := &stuckStore{Store: ts, deadline: make(chan time.Duration, 1)}
	const body = `{"PartitionKey":"p","RowKey":"r"}`

	for _, c := range []struct {
		name      string
		byDefault bool
		max       time.Duration
		query     string
		want      time.Duration // the deadline the store sees
	}{
		{"timeout=1", false, 30 * time.Second, "timeout=1", time.Second},
		{"timeout=1 reduced", true, 300 * time.Millisecond, "timeout=1", 300 * time.Millisecond},
		{"default deadline", true, 300 * time.Millisecond, "", 300 * time.Millisecond},
	} {
		s := New(Options{Store: ss, Accounts: kr, MaxInFlight: 1, QueueWait: 20 * time.Millisecond,
			MaxTimeout: c.max, DeadlineByDefault: c.byDefault})
		for i := 0; i < 3; i++ { // one slot: each must be given back
			w := httptest.NewRecorder()
			start := time.Now()
			s.ServeHTTP(w, signedRequestQuery(t, "POST", "/devstoreaccount1/stuck", c.query, body))
			took := time.Since(start)
			left := <-ss.deadline
			if left > c.want || left < c.want-250*time.Millisecond {
				t.Errorf("%s: the store had %v left, want about %v", c.name, left, c.want)
			}
			if took < c.want-250*time.Millisecond || took > c.want+time.Second {
				t.Errorf("%s: answered after %v, want about %v", c.name, took, c.want)
			}
			var e struct {
				OdataError struct {
					Code    string `json:"code"`
					Message struct {
						Value string `json:"value"`
					} `json:"message"`
				} `json:"odata.error"`
			}
			json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != 500 || w.Header().Get("x-ms-error-code") != "OperationTimedOut" || e.OdataError.Code != "OperationTimedOut" ||
				!strings.HasPrefix(e.OdataError.Message.Value, "Operation could not be completed within the specified time.") {
				t.Errorf("%s: %d %s %s", c.name, w.Code, w.Header().Get("x-ms-error-code"), w.Body)
			}
		}
		// The slot is free: a read that does not wait succeeds at once.
		w := httptest.NewRecorder()
		s.ServeHTTP(w, signedRequest(t, "GET", "/devstoreaccount1/Tables"))
		if w.Code != 200 {
			t.Errorf("%s: a read after the timed-out writes: %d %s", c.name, w.Code, w.Body)
		}
	}

	// Without DeadlineByDefault and without `timeout`, no deadline.
	s := New(Options{Store: ss, Accounts: kr})
	done := make(chan int)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, signedRequestQuery(t, "POST", "/devstoreaccount1/stuck", "", body).WithContext(ctx))
		done <- w.Code
	}()
	if left := <-ss.deadline; left != -1 {
		t.Errorf("no timeout, no default deadline: the store had a deadline %v away", left)
	}
	cancel()
	<-done

	// A bad timeout is refused before the store is called.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, signedRequestQuery(t, "POST", "/devstoreaccount1/stuck", "timeout=-5", body))
	if w.Code != 400 || w.Header().Get("x-ms-error-code") != "InvalidQueryParameterValue" {
		t.Errorf("timeout=-5: %d %s", w.Code, w.Body)
	}
	select {
	case <-ss.deadline:
		t.Error("timeout=-5 reached the store")
	default:
	}
}
