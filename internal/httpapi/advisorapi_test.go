package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/metrics"
	"github.com/partita/partita/internal/tablestore"
)

// otherKey is the key of the second account of advisorServer.
var otherKey = base64.StdEncoding.EncodeToString([]byte("the other account's key, 32 byte"))

const twoAccounts = "devstoreaccount1:" + testKey + ";other:"

// advisorServer is a Server over the in-memory engine with two accounts
// (devstoreaccount1 and other) and the given advisor (nil: off).
func advisorServer(t *testing.T, a *advisor.Advisor) (*Server, auth.Keyring) {
	t.Helper()
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kr, err := auth.ParseAccounts(twoAccounts + otherKey)
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Store: ts, Accounts: kr, Advisor: a}), kr
}

// signedAs sends a SharedKeyLite request for account, signed with its
// key; comp, when in the query, is part of the signed resource as the
// service wants. A nil keyring sends the request unsigned.
func signedAs(t *testing.T, s *Server, kr auth.Keyring, account, method, pathQuery string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:10002/"+account+pathQuery, bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	} else {
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Accept", "application/json;odata=nometadata")
	if kr != nil {
		path, rawQuery, _ := strings.Cut(pathQuery, "?")
		resource := "/" + account + "/" + account + path
		if c := r.URL.Query().Get("comp"); c != "" && rawQuery != "" {
			resource += "?comp=" + c
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		r.Header.Set("x-ms-date", date)
		sig := auth.Sign(kr[account].Keys[0], auth.StringToSignLite(date, resource))
		r.Header.Set("Authorization", "SharedKeyLite "+account+":"+sig)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// hotTraffic makes table "hot" of account hot in one partition, pk.
func hotTraffic(t *testing.T, s *Server, kr auth.Keyring, account, pk string, n int) {
	t.Helper()
	w := signedAs(t, s, kr, account, "POST", "/Tables", []byte(`{"TableName":"hot"}`))
	if w.Code != 201 {
		t.Fatalf("create table: %d %s", w.Code, w.Body)
	}
	for i := 0; i < n; i++ {
		wantStatus(t, signedAs(t, s, kr, account, "PUT", fmt.Sprintf("/hot(PartitionKey='%s',RowKey='%04d')", pk, i), []byte(`{"N":1}`)), 204)
	}
}

// wantError checks a refusal's status and error code.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status || w.Header().Get("x-ms-error-code") != code {
		t.Fatalf("got %d %q, want %d %s: %s", w.Code, w.Header().Get("x-ms-error-code"), status, code, w.Body)
	}
}

// TestAdvisorAPI_AccountScoped: comp=partita-heat and comp=partita-advisor
// on the public API show the signed-in account's tables and findings,
// never another account's, even for a table of the same name.
func TestAdvisorAPI_AccountScoped(t *testing.T) {
	s, kr := advisorServer(t, advisor.New(advisor.Options{MinWrites: 100}))
	hotTraffic(t, s, kr, "devstoreaccount1", "mine", 150)
	hotTraffic(t, s, kr, "other", "theirs", 120)

	for _, c := range []struct{ account, pk, notPK string }{
		{"devstoreaccount1", "mine", "theirs"},
		{"other", "theirs", "mine"},
	} {
		w := signedAs(t, s, kr, c.account, "GET", "/?restype=service&comp=partita-heat", nil)
		wantStatus(t, w, 200)
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s heat: Content-Type %q", c.account, ct)
		}
		var h advisor.Heat
		if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
			t.Fatalf("%s heat: %v %s", c.account, err, w.Body)
		}
		if len(h.Tables) != 1 || h.Tables[0].Account != c.account || h.Tables[0].Table != "hot" {
			t.Fatalf("%s heat: tables %+v", c.account, h.Tables)
		}
		ht := h.Tables[0]
		if len(ht.Partitions) != 1 || ht.Partitions[0].PartitionKey != c.pk {
			t.Fatalf("%s heat: partitions %+v", c.account, ht.Partitions)
		}
		if strings.Contains(w.Body.String(), c.notPK) {
			t.Errorf("%s heat shows the other account's partition: %s", c.account, w.Body)
		}

		w = signedAs(t, s, kr, c.account, "GET", "/?restype=service&comp=partita-advisor", nil)
		wantStatus(t, w, 200)
		var r advisor.Report
		if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
			t.Fatalf("%s advisor: %v %s", c.account, err, w.Body)
		}
		if r.Tables != 1 {
			t.Errorf("%s advisor: tables %d, want 1", c.account, r.Tables)
		}
		var hot []advisor.Finding
		for _, f := range r.Findings {
			if f.Account != c.account {
				t.Errorf("%s advisor: finding of account %q: %+v", c.account, f.Account, f)
			}
			if f.Kind == advisor.KindHotPartition {
				hot = append(hot, f)
			}
		}
		if len(hot) != 1 || hot[0].PartitionKey != c.pk || hot[0].Table != "hot" {
			t.Errorf("%s advisor: hot-partition findings %+v, want one for %q", c.account, hot, c.pk)
		}
	}
	// Both accounts' tables are in the advisor: only the reads are scoped.
	if n := s.advisor.Tables(); n != 2 {
		t.Errorf("advisor tracks %d tables, want 2", n)
	}
}

// TestAdvisorAPI_Refusals: the reads are authenticated like any request,
// are 501 NotImplemented with the advisor off, and take no other verb.
func TestAdvisorAPI_Refusals(t *testing.T) {
	s, kr := advisorServer(t, advisor.New(advisor.Options{}))
	for _, comp := range []string{"partita-heat", "partita-advisor"} {
		wantError(t, signedAs(t, s, nil, "devstoreaccount1", "GET", "/?restype=service&comp="+comp, nil), 403, "AuthenticationFailed")
		// Signed with the wrong account's key.
		bad := auth.Keyring{"devstoreaccount1": kr["other"]}
		wantError(t, signedAs(t, s, bad, "devstoreaccount1", "GET", "/?restype=service&comp="+comp, nil), 403, "AuthenticationFailed")
		wantError(t, signedAs(t, s, kr, "devstoreaccount1", "PUT", "/?restype=service&comp="+comp, []byte("{}")), 400, "InvalidQueryParameterValue")
	}
	off, kr := advisorServer(t, nil)
	for _, comp := range []string{"partita-heat", "partita-advisor"} {
		w := signedAs(t, off, kr, "devstoreaccount1", "GET", "/?restype=service&comp="+comp, nil)
		wantError(t, w, 501, "NotImplemented")
		if !strings.Contains(w.Body.String(), "<m:code>NotImplemented</m:code>") {
			t.Errorf("advisor off: body %s, want the service's XML error", w.Body)
		}
		wantError(t, signedAs(t, off, nil, "devstoreaccount1", "GET", "/?restype=service&comp="+comp, nil), 403, "AuthenticationFailed")
	}
}

// sasFor signs a SAS of devstoreaccount1 with its key.
func sasFor(t *testing.T, kr auth.Keyring, sas auth.SAS) string {
	t.Helper()
	sas.Version = "2019-02-02"
	sas.Expiry = time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05Z")
	sas.Signature = auth.Sign(kr["devstoreaccount1"].Keys[0], sas.StringToSign("devstoreaccount1"))
	return sas.Encode().Encode()
}

// TestAdvisorAPI_SAS: an account SAS for the Table service with resource
// types s and o and permission r may read the advisor; one without o
// (the heat map shows partition keys, which are entity data) or without
// r may not, nor may a table SAS.
func TestAdvisorAPI_SAS(t *testing.T) {
	s, kr := advisorServer(t, advisor.New(advisor.Options{}))
	hotTraffic(t, s, kr, "devstoreaccount1", "mine", 3)
	acct := func(srt, sp string) string {
		return sasFor(t, kr, auth.SAS{Kind: auth.AccountSAS, Services: "t", ResourceTypes: srt, Permissions: sp})
	}
	cases := []struct {
		name, sas string
		status    int
		code      string
	}{
		{"account sco rl", acct("sco", "rl"), 200, ""},
		{"account so r", acct("so", "r"), 200, ""},
		{"account s r", acct("s", "r"), 403, "AuthorizationResourceTypeMismatch"},
		{"account co r", acct("co", "r"), 403, "AuthorizationResourceTypeMismatch"},
		{"account sco l", acct("sco", "lw"), 403, "AuthorizationPermissionMismatch"},
		{"account blob", sasFor(t, kr, auth.SAS{Kind: auth.AccountSAS, Services: "b", ResourceTypes: "sco", Permissions: "r"}), 403, "AuthorizationServiceMismatch"},
		{"table", sasFor(t, kr, auth.SAS{Kind: auth.ServiceSAS, Table: "hot", Permissions: "r"}), 403, "AuthorizationFailure"},
	}
	for _, c := range cases {
		for _, comp := range []string{"partita-heat", "partita-advisor"} {
			w := signedAs(t, s, nil, "devstoreaccount1", "GET", "/?restype=service&comp="+comp+"&"+c.sas, nil)
			if c.status == 200 {
				wantStatus(t, w, 200)
				if comp == "partita-heat" && !strings.Contains(w.Body.String(), `"partitionKey":"mine"`) {
					t.Errorf("%s: heat %s", c.name, w.Body)
				}
				continue
			}
			wantError(t, w, c.status, c.code)
		}
	}
}

// TestAdvisorAPI_Metrics: the reads are operations of their own in the
// request metrics' fixed operation list, refusals included.
func TestAdvisorAPI_Metrics(t *testing.T) {
	m := metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
	s := obsServer(t, Options{Metrics: m, Advisor: advisor.New(advisor.Options{})})
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	wantStatus(t, signedAs(t, s, kr, "devstoreaccount1", "GET", "/?restype=service&comp=partita-heat", nil), 200)
	wantStatus(t, signedAs(t, s, kr, "devstoreaccount1", "GET", "/?restype=service&comp=partita-advisor", nil), 200)
	wantStatus(t, signedAs(t, s, kr, "devstoreaccount1", "GET", "/?restype=service&comp=partita-advisor", nil), 200)
	sas := sasFor(t, kr, auth.SAS{Kind: auth.AccountSAS, Services: "t", ResourceTypes: "s", Permissions: "r"})
	wantError(t, signedAs(t, s, nil, "devstoreaccount1", "GET", "/?restype=service&comp=partita-heat&"+sas, nil), 403, "AuthorizationResourceTypeMismatch")
	for _, c := range []struct {
		op, status, code string
		want             float64
	}{
		{"GetPartitaHeat", "200", "", 1},
		{"GetPartitaAdvisor", "200", "", 2},
		{"Unknown", "403", "AuthorizationResourceTypeMismatch", 1},
	} {
		got := counter(t, m, "partita_requests_total", map[string]string{"account": "devstoreaccount1", "operation": c.op, "status": c.status, "code": c.code})
		if got != c.want {
			t.Errorf("requests{operation=%s,status=%s}: %v, want %v", c.op, c.status, got, c.want)
		}
	}
}
