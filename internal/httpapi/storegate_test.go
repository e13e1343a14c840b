package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/metrics"
	"github.com/partita/partita/internal/tablestore"
)

// tablesRequestAs is a Query Tables request (path, with any query) by
// account, signed with key (SharedKeyLite).
func tablesRequestAs(t testing.TB, account, key, path string) *http.Request {
	t.Helper()
	r := httptest.NewRequest("GET", "http://127.0.0.1:10002"+path, nil)
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	kr, _ := auth.ParseAccounts(account + ":" + key)
	sig := auth.Sign(kr[account].Keys[0], auth.StringToSignLite(date, "/"+account+r.URL.Path))
	r.Header.Set("Authorization", "SharedKeyLite "+account+":"+sig)
	return r
}

// With StoreCalls, one account holds at most its share of the store calls:
// its further calls wait (until their deadline: 500 OperationTimedOut)
// while another account's call goes through at once.
func TestServer_StoreCallsShared(t *testing.T) {
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := &blockingStore{Store: ts, entered: make(chan struct{}, 16), release: make(chan struct{})}
	otherKey := base64.StdEncoding.EncodeToString([]byte("another account's key"))
	kr, err := auth.ParseAccounts("devstoreaccount1:" + testKey + ";other:" + otherKey)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New([]string{"devstoreaccount1", "other"}, ErrorCodes())
	s := New(Options{Store: bs, Accounts: kr, MaxInFlight: 64, StoreCalls: 4, Metrics: m})

	codes := make(chan int, 16)
	serve := func(r *http.Request) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		codes <- w.Code
	}
	for i := 0; i < 4; i++ {
		go serve(tablesRequestAs(t, "devstoreaccount1", testKey, "/devstoreaccount1/Tables"))
	}
	for i := 0; i < 2; i++ { // the account's share of 4
		select {
		case <-bs.entered:
		case c := <-codes:
			t.Fatalf("a request ended with %d before the store answered", c)
		case <-time.After(10 * time.Second):
			t.Fatal("the account's requests did not reach the store")
		}
	}
	select {
	case <-bs.entered:
		t.Fatal("one account made more store calls than its share")
	case <-time.After(100 * time.Millisecond):
	}
	go serve(tablesRequestAs(t, "other", otherKey, "/other/Tables"))
	select {
	case <-bs.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("another account's store call waited behind the first account's")
	}
	if s := sample(t, m, "partita_store_calls_in_flight", nil); s.GetGauge().GetValue() != 3 {
		t.Errorf("partita_store_calls_in_flight %v with three calls in the store, want 3", s.GetGauge().GetValue())
	}
	// The first account's next call waits for its share until its
	// deadline.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, tablesRequestAs(t, "devstoreaccount1", testKey, "/devstoreaccount1/Tables?timeout=1"))
	if w.Code != 500 || w.Header().Get("x-ms-error-code") != "OperationTimedOut" {
		t.Errorf("a call beyond the share at its deadline: %d %s, want 500 OperationTimedOut", w.Code, w.Header().Get("x-ms-error-code"))
	}
	gaveUp := sample(t, m, "partita_store_call_wait_seconds", map[string]string{"outcome": "gave_up"}).GetHistogram()
	if gaveUp.GetSampleCount() != 1 || gaveUp.GetSampleSum() < 0.5 {
		t.Errorf("waits that gave up: %d, %.3f s in all; want the one call's wait of about 1 s", gaveUp.GetSampleCount(), gaveUp.GetSampleSum())
	}
	close(bs.release)
	for i := 0; i < 5; i++ {
		if c := <-codes; c != 200 {
			t.Errorf("request %d: %d once the store answered", i, c)
		}
	}
	// The two calls that waited behind the account's share took their
	// units once the store answered.
	if n := sample(t, m, "partita_store_call_wait_seconds", map[string]string{"outcome": "taken"}).GetHistogram().GetSampleCount(); n != 2 {
		t.Errorf("waits that ended with the unit taken: %d, want 2", n)
	}
	if s := sample(t, m, "partita_store_calls_in_flight", nil); s.GetGauge().GetValue() != 0 {
		t.Errorf("partita_store_calls_in_flight %v at the end, want 0", s.GetGauge().GetValue())
	}
	if s.calls.used != 0 || len(s.calls.held) != 0 {
		t.Errorf("store calls still held at the end: %d, %v", s.calls.used, s.calls.held)
	}
}
