package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/settings"
)

// corsTestServer returns a server whose account has the given CORS rules,
// with a table "tab" of two entities in one partition.
func corsTestServer(t *testing.T, rules ...settings.CorsRule) *Server {
	t.Helper()
	ctx := context.Background()
	store := memTableStore(t)
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: store, Accounts: kr})
	p := settings.DefaultServiceProperties()
	p.Cors = rules
	raw, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetServiceProperties(ctx, "devstoreaccount1", raw); err != nil {
		t.Fatal(err)
	}
	for _, tab := range []string{"tab", "tab2"} {
		if _, err := store.CreateTable(ctx, "devstoreaccount1", tab); err != nil {
			t.Fatal(err)
		}
	}
	for _, rk := range []string{"1", "2"} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, signedRequestQuery(t, "PUT", "/devstoreaccount1/tab(PartitionKey='p',RowKey='"+rk+"')", "", `{"V":1}`))
		if w.Code != http.StatusNoContent {
			t.Fatalf("upsert: %d %s", w.Code, w.Body)
		}
	}
	return s
}

// exposed is the set of names in an Access-Control-Expose-Headers value,
// lowercased, as a browser compares them.
func exposed(h http.Header) map[string]bool {
	m := map[string]bool{}
	for _, v := range h.Values("Access-Control-Expose-Headers") {
		for _, n := range strings.Split(v, ",") {
			m[strings.ToLower(strings.TrimSpace(n))] = true
		}
	}
	return m
}

// TestCORSExposeHeadersExpandsPrefixes: a rule's prefixed ExposedHeaders
// entry ("x-ms-*", the usual setting) reaches the browser as the names of
// the headers it matches. A browser reads the value as a list of header
// names (the Fetch standard), so "x-ms-*" sent as is exposes no header: a
// page's client could not read x-ms-continuation-NextPartitionKey, and its
// query stopped after the first page without a word. Literal entries are
// kept; no name ends in '*'.
func TestCORSExposeHeadersExpandsPrefixes(t *testing.T) {
	s := corsTestServer(t, settings.CorsRule{
		AllowedOrigins: "https://app.example", AllowedMethods: "GET", MaxAgeInSeconds: 60,
		ExposedHeaders: "x-ms-*,ETag,x-custom",
	})
	r := signedRequestQuery(t, "GET", "/devstoreaccount1/tab()", "$top=1", "")
	r.Header.Set("Origin", "https://app.example")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("query: %d %s", w.Code, w.Body)
	}
	h := w.Header()
	if h.Get("x-ms-continuation-NextPartitionKey") == "" {
		t.Fatalf("the query of two entities with $top=1 has no continuation: %v", h)
	}
	got := exposed(h)
	for _, name := range []string{"x-ms-continuation-nextpartitionkey", "x-ms-continuation-nextrowkey", "x-ms-request-id", "x-ms-version", "etag", "x-custom"} {
		if !got[name] {
			t.Errorf("Access-Control-Expose-Headers %q does not expose %s", h.Get("Access-Control-Expose-Headers"), name)
		}
	}
	for name := range got {
		if strings.HasSuffix(name, "*") {
			t.Errorf("Access-Control-Expose-Headers %q names %q, which a browser takes for one header's name", h.Get("Access-Control-Expose-Headers"), name)
		}
	}
	if got["x-partita-query-class"] || got["cache-control"] {
		t.Errorf("Access-Control-Expose-Headers %q exposes headers the rule does not name", h.Get("Access-Control-Expose-Headers"))
	}
}

// TestCORSExposeHeadersCoverResponses: under a rule exposing "*", every
// header of partita's responses is exposed by name (a request with
// credentials does not take "*" for a wildcard): exposableHeaders lists
// every header a response may carry, so a header added to responses later
// cannot be hidden from browser clients unnoticed.
func TestCORSExposeHeadersCoverResponses(t *testing.T) {
	s := corsTestServer(t, settings.CorsRule{
		AllowedOrigins: "https://app.example", AllowedMethods: "GET,PUT,POST,DELETE,MERGE", MaxAgeInSeconds: 60,
		ExposedHeaders: "*",
	})
	pref := signedRequestQuery(t, "POST", "/devstoreaccount1/tab", "", `{"PartitionKey":"p","RowKey":"5"}`)
	pref.Header.Set("Prefer", "return-no-content") // Preference-Applied, DataServiceId
	reqs := []struct {
		r    *http.Request
		code int
	}{
		{signedRequestQuery(t, "GET", "/devstoreaccount1/tab()", "$top=1", ""), 200},                             // continuation, query class
		{signedRequestQuery(t, "GET", "/devstoreaccount1/Tables", "$top=1", ""), 200},                            // NextTableName
		{signedRequestQuery(t, "GET", "/devstoreaccount1/tab(PartitionKey='p',RowKey='1')", "", ""), 200},        // ETag
		{signedRequestQuery(t, "POST", "/devstoreaccount1/tab", "", `{"PartitionKey":"p","RowKey":"3"}`), 201},   // Location
		{signedRequestQuery(t, "PUT", "/devstoreaccount1/tab(PartitionKey='p',RowKey='4')", "", `{"V":2}`), 204}, // ETag
		{signedRequestQuery(t, "GET", "/devstoreaccount1/nosuch(PartitionKey='p',RowKey='1')", "", ""), 404},     // error code
		{signedRequestQuery(t, "POST", "/devstoreaccount1/Tables", "", `{"TableName":"tab3"}`), 201},
		{pref, 204},
	}
	for _, tt := range reqs {
		r := tt.r
		r.Header.Set("Origin", "https://app.example")
		r.Header.Set("x-ms-client-request-id", "c1")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tt.code {
			t.Fatalf("%s %s: %d %s, want %d", r.Method, r.URL.Path, w.Code, w.Body, tt.code)
		}
		got := exposed(w.Header())
		for name := range w.Header() {
			l := strings.ToLower(name)
			if strings.HasPrefix(l, "access-control-") || l == "vary" || l == "connection" {
				continue
			}
			if !got[l] {
				t.Errorf("%s %s (%d): header %s is not in Access-Control-Expose-Headers %q", r.Method, r.URL.Path, w.Code, name, w.Header().Get("Access-Control-Expose-Headers"))
			}
		}
	}
}
