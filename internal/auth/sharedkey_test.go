package auth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/raceflag"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// Known-answer vectors for SharedKey and SharedKeyLite (HMAC-SHA256 over the dev key; docs/COMPATIBILITY.md §10).
func TestSign_Vectors(t *testing.T) {
	kr, err := ParseAccounts("devstoreaccount1:" + devKey)
	if err != nil {
		t.Fatal(err)
	}
	key := kr["devstoreaccount1"].Keys[0]
	for _, tt := range []struct{ toSign, want string }{
		{"Tue, 02 Jan 2024 03:04:05 GMT\n/devstoreaccount1/devstoreaccount1/Tables", "vqH9cAkS8xJlO5MTje1QvTgbpxIibsQNqN4+xo6qZpI="},
		{"Tue, 02 Jan 2024 03:04:05 GMT\n/devstoreaccount1/devstoreaccount1/mytable?comp=acl", "HsfwQzG1mQcsQIdHGa/8koyMB6ALW2DpEogNGpMxDO0="},
		{"Tue, 02 Jan 2024 03:04:05 GMT\n/devstoreaccount1/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')", "e7Fx+YA6DfPeka9HE3z8AhMLlTxt8pNxYe/gSr2CoUA="},
		{"POST\n\napplication/json\nTue, 02 Jan 2024 03:04:05 GMT\n/devstoreaccount1/devstoreaccount1/Tables", "UPIC0+I1tj8g2oL7YonkR2ohvZOmDozzdqiyafqC6Zo="},
	} {
		if got := Sign(key, tt.toSign); got != tt.want {
			t.Errorf("Sign(%q) = %s, want %s", tt.toSign, got, tt.want)
		}
	}
}

func TestVerify(t *testing.T) {
	kr, _ := ParseAccounts("devstoreaccount1:" + devKey + ":" + "a2V5Mg==")
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	date := "Tue, 02 Jan 2024 03:04:05 GMT"
	path := "/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')"
	res := "/devstoreaccount1" + path
	mk := func(auth, d string) Request {
		h := http.Header{}
		h.Set("x-ms-date", d)
		if auth != "" {
			h.Set("Authorization", auth)
		}
		return Request{Method: "GET", Header: h, RawPath: path, Query: url.Values{}}
	}
	key1 := kr["devstoreaccount1"].Keys[0]
	key2 := kr["devstoreaccount1"].Keys[1]
	for _, tt := range []struct {
		name string
		req  Request
		want error
	}{
		{"lite key1", mk("SharedKeyLite devstoreaccount1:"+Sign(key1, StringToSignLite(date, res)), date), nil},
		{"lite key2", mk("SharedKeyLite devstoreaccount1:"+Sign(key2, StringToSignLite(date, res)), date), nil},
		{"full", mk("SharedKey devstoreaccount1:"+Sign(key1, StringToSignFull("GET", "", "", date, res)), date), nil},
		{"comp", func() Request {
			r := mk("SharedKeyLite devstoreaccount1:"+Sign(key1, StringToSignLite(date, "/devstoreaccount1/devstoreaccount1/mytable?comp=acl")), date)
			r.RawPath, r.Query = "/devstoreaccount1/mytable", url.Values{"comp": {"acl"}}
			return r
		}(), nil},
		{"comp not signed", func() Request {
			r := mk("SharedKeyLite devstoreaccount1:"+Sign(key1, StringToSignLite(date, "/devstoreaccount1/devstoreaccount1/mytable")), date)
			r.RawPath, r.Query = "/devstoreaccount1/mytable", url.Values{"comp": {"acl"}}
			return r
		}(), ErrSignatureMismatch},
		{"wrong sig", mk("SharedKeyLite devstoreaccount1:"+Sign(key1, "x"), date), ErrSignatureMismatch},
		{"no header", mk("", date), ErrNoCredentials},
		{"malformed", mk("SharedKeyLite nocolon", date), ErrMalformed},
		{"unknown account", mk("SharedKeyLite other:abc=", date), ErrUnknownAccount},
		{"skew", mk("SharedKeyLite devstoreaccount1:"+Sign(key1, StringToSignLite("Tue, 02 Jan 2024 02:04:05 GMT", res)), "Tue, 02 Jan 2024 02:04:05 GMT"), ErrClockSkew},
	} {
		_, err := kr.Verify(tt.req, "devstoreaccount1", now)
		if err != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// FuzzVerify: any Authorization header and date is rejected cleanly or, if
// accepted, was really signed; canonicalization never panics.
func FuzzVerify(f *testing.F) {
	f.Add("SharedKeyLite devstoreaccount1:abc=", "Tue, 02 Jan 2024 03:04:05 GMT", "/devstoreaccount1/Tables", "comp=acl")
	f.Add("SharedKey x:", "", "", "")
	f.Add("Bearer token", "garbage", "/a%2Fb", "comp=&comp=x")
	kr, _ := ParseAccounts("devstoreaccount1:" + devKey)
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, authz, date, path, rawQuery string) {
		q, _ := url.ParseQuery(rawQuery)
		h := http.Header{}
		h.Set("Authorization", authz)
		h.Set("x-ms-date", date)
		res := CanonicalizedResource("devstoreaccount1", path, q)
		if !strings.HasPrefix(res, "/devstoreaccount1/") && !strings.HasPrefix(res, "/devstoreaccount1") {
			t.Fatalf("resource %q", res)
		}
		a, err := kr.Verify(Request{Method: "GET", Header: h, RawPath: path, Query: q}, "devstoreaccount1", now)
		if err == nil {
			// Accepted: the signature must be the real one.
			want := Sign(kr["devstoreaccount1"].Keys[0], StringToSignLite(date, res))
			wantFull := Sign(kr["devstoreaccount1"].Keys[0], StringToSignFull("GET", "", "", date, res))
			if a == nil || (!strings.HasSuffix(authz, ":"+want) && !strings.HasSuffix(authz, ":"+wantFull)) {
				t.Fatalf("accepted a forged header %q", authz)
			}
		}
	})
}

// FuzzParseHTTPDate: the fast date parser agrees with http.ParseTime
// (the oracle) on everything it accepts, and accepts every date in the
// form the SDKs send.
func FuzzParseHTTPDate(f *testing.F) {
	for _, s := range []string{
		"Tue, 02 Jan 2024 03:04:05 GMT", "Sun, 29 Feb 2004 23:59:59 GMT",
		"Mon, 31 Feb 2025 00:00:00 GMT", "Xyz, 02 Jan 2024 03:04:05 GMT",
		"Tue, 02 Jan 2024 24:04:05 GMT", "Tue, 02 Jan 2024 03:04:60 GMT",
		"Tue, 00 Jan 2024 03:04:05 GMT", "Tue, 02 Jan 0000 03:04:05 GMT",
		"Tue, 2 Jan 2024 03:04:05 GMT", "Tuesday, 02-Jan-24 03:04:05 GMT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseHTTPDate(s)
		want, err := time.Parse(http.TimeFormat, s)
		if ok {
			if err != nil {
				t.Fatalf("parseHTTPDate(%q) accepted what time.Parse rejects: %v", s, err)
			}
			if !got.Equal(want) || got.Location() != time.UTC {
				t.Fatalf("parseHTTPDate(%q) = %v, time.Parse = %v", s, got, want)
			}
		} else if err == nil && want.Year() >= 1000 && s == want.Format(http.TimeFormat) {
			t.Fatalf("parseHTTPDate(%q) rejected a canonical date", s)
		}
	})
}

func TestParseHTTPDateRoundTrip(t *testing.T) {
	for ts := time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC); ts.Year() < 2030; ts = ts.Add(37*time.Hour + 17*time.Minute + 13*time.Second) {
		s := ts.Format(http.TimeFormat)
		got, ok := parseHTTPDate(s)
		if !ok || !got.Equal(ts) {
			t.Fatalf("parseHTTPDate(%q) = %v, %v; want %v", s, got, ok, ts)
		}
	}
}

// liteRequest is a correctly signed SharedKeyLite point read and the
// clock it is valid at.
func liteRequest(tb testing.TB) (Keyring, Request, time.Time) {
	tb.Helper()
	kr, err := ParseAccounts("devstoreaccount1:" + devKey)
	if err != nil {
		tb.Fatal(err)
	}
	date := "Tue, 02 Jan 2024 03:04:05 GMT"
	path := "/devstoreaccount1/mytable(PartitionKey='p1',RowKey='r1')"
	h := http.Header{}
	h.Set("x-ms-date", date)
	h.Set("Authorization", "SharedKeyLite devstoreaccount1:"+Sign(kr["devstoreaccount1"].Keys[0], StringToSignLite(date, "/devstoreaccount1"+path)))
	return kr, Request{Method: "GET", Header: h, RawPath: path, Query: url.Values{}}, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
}

// TestVerifyAllocations: verifying a SharedKeyLite request allocates almost
// nothing once the pools are warm (it runs on every request).
func TestVerifyAllocations(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("the race detector's sync.Pool drops items at random; run without -race")
	}
	kr, r, now := liteRequest(t)
	if _, err := kr.Verify(r, "devstoreaccount1", now); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { kr.Verify(r, "devstoreaccount1", now) }); n > 1 {
		t.Errorf("Verify allocates %.0f times per request, want at most 1", n)
	}
}

func BenchmarkVerifyLite(b *testing.B) {
	kr, r, now := liteRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.Verify(r, "devstoreaccount1", now); err != nil {
			b.Fatal(err)
		}
	}
}
