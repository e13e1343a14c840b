package auth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// Vectors from PROTOCOL §8.2 and §8.3 (HMAC-SHA256 over the dev key).
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
