package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// blockingStore holds QueryTables until release is closed, so a test can
// fill every request slot deterministically.
type blockingStore struct {
	partita.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) QueryTables(ctx context.Context, account string, q partita.TableQuery) (partita.TablePage, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.QueryTables(ctx, account, q)
}

const testKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func signedRequest(t testing.TB, method, path string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:10002"+path, nil)
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	sig := auth.Sign(kr["devstoreaccount1"].Keys[0], auth.StringToSignLite(date, "/devstoreaccount1"+path))
	r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+sig)
	return r
}

func TestServer_OverloadAnswersServerBusy(t *testing.T) {
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := &blockingStore{Store: ts, entered: make(chan struct{}, 1), release: make(chan struct{})}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: bs, Accounts: kr, MaxInFlight: 1, QueueWait: 20 * time.Millisecond})

	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, signedRequest(t, "GET", "/devstoreaccount1/Tables"))
		done <- w.Code
	}()
	<-bs.entered // the only slot is taken
	w := httptest.NewRecorder()
	s.ServeHTTP(w, signedRequest(t, "GET", "/devstoreaccount1/Tables"))
	if w.Code != 503 || w.Header().Get("x-ms-error-code") != "ServerBusy" || w.Header().Get("Retry-After") == "" {
		t.Errorf("overloaded request: %d %v %s", w.Code, w.Header(), w.Body)
	}
	close(bs.release)
	if code := <-done; code != 200 {
		t.Errorf("first request: %d", code)
	}
	// The slot is free again.
	w = httptest.NewRecorder()
	bs.entered = make(chan struct{}, 1)
	s.ServeHTTP(w, signedRequest(t, "GET", "/devstoreaccount1/Tables"))
	if w.Code != 200 {
		t.Errorf("after release: %d %s", w.Code, w.Body)
	}
}

func TestServer_CommonHeaders(t *testing.T) {
	ts, _ := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: ts, Accounts: kr})
	for _, tt := range []struct {
		name   string
		req    *http.Request
		status int
		code   string
	}{
		{"ok", signedRequest(t, "GET", "/devstoreaccount1/Tables"), 200, ""},
		{"unsigned", httptest.NewRequest("GET", "http://127.0.0.1:10002/devstoreaccount1/Tables", nil), 403, "AuthenticationFailed"},
		{"missing table", signedRequest(t, "GET", "/devstoreaccount1/nosuch()"), 404, "TableNotFound"},
		{"bad method", signedRequest(t, "PUT", "/devstoreaccount1/Tables"), 405, "MethodNotAllowed"},
	} {
		tt.req.Header.Set("x-ms-client-request-id", "cid-1")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, tt.req)
		h := w.Header()
		if w.Code != tt.status || h.Get("x-ms-error-code") != tt.code {
			t.Errorf("%s: %d %q, want %d %q: %s", tt.name, w.Code, h.Get("x-ms-error-code"), tt.status, tt.code, w.Body)
		}
		if _, err := http.ParseTime(h.Get("Date")); err != nil {
			t.Errorf("%s: Date %q not RFC 1123", tt.name, h.Get("Date"))
		}
		if h.Get("x-ms-request-id") == "" || h.Get("x-ms-version") != "2019-02-02" || h.Get("x-ms-client-request-id") != "cid-1" {
			t.Errorf("%s: headers %v", tt.name, h)
		}
		if tt.code != "" && (h.Get("Cache-Control") != "" || !containsAll(w.Body.String(), `"odata.error"`, `\nRequestId:`+h.Get("x-ms-request-id")+`\nTime:`)) {
			t.Errorf("%s: error body %s / headers %v", tt.name, w.Body, h)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestServer_RefusedSASTakesNoSlot: a request whose SAS cannot allow it is
// refused from its method and URL even when every slot is taken, instead
// of waiting for one and getting 503.
func TestServer_RefusedSASTakesNoSlot(t *testing.T) {
	ts, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := &blockingStore{Store: ts, entered: make(chan struct{}, 1), release: make(chan struct{})}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: bs, Accounts: kr, MaxInFlight: 1, QueueWait: 5 * time.Second})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeHTTP(httptest.NewRecorder(), signedRequest(t, "GET", "/devstoreaccount1/Tables"))
	}()
	<-bs.entered // the only slot is taken
	defer func() { close(bs.release); <-done }()

	sas := &auth.SAS{Kind: auth.ServiceSAS, Version: "2019-02-02", Permissions: "r", Expiry: "2099-01-01T00:00:00Z", Table: "t"}
	sas.Signature = auth.Sign(kr["devstoreaccount1"].Keys[0], sas.StringToSign("devstoreaccount1"))
	q := "?" + sas.Encode().Encode()
	for _, tt := range []struct {
		name, method, path, body, code string
	}{
		{"insert", "POST", "/devstoreaccount1/t", `{"PartitionKey":"p","RowKey":"r"}`, "AuthorizationPermissionMismatch"},
		{"delete", "DELETE", "/devstoreaccount1/t(PartitionKey='p',RowKey='r')", "", "AuthorizationPermissionMismatch"},
		{"upsert", "PUT", "/devstoreaccount1/t(PartitionKey='p',RowKey='r')", `{}`, "AuthorizationPermissionMismatch"},
		{"batch larger than a retrieve batch", "POST", "/devstoreaccount1/$batch", strings.Repeat("-", 70<<10), "AuthorizationPermissionMismatch"},
		{"other table", "GET", "/devstoreaccount1/u()", "", "AuthorizationFailure"},
		{"create table", "POST", "/devstoreaccount1/Tables", `{"TableName":"x"}`, "AuthorizationFailure"},
		{"set ACL", "PUT", "/devstoreaccount1/t?comp=acl", "<SignedIdentifiers/>", "AuthorizationFailure"},
	} {
		var body io.Reader
		if tt.body != "" {
			body = strings.NewReader(tt.body)
		}
		path := tt.path
		if strings.Contains(path, "?") {
			path += "&" + q[1:]
		} else {
			path += q
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(tt.method, "http://127.0.0.1:10002"+path, body))
		if w.Code != 403 || w.Header().Get("x-ms-error-code") != tt.code {
			t.Errorf("%s: %d %s, want 403 %s", tt.name, w.Code, w.Header().Get("x-ms-error-code"), tt.code)
		}
	}
}

// TestServer_SASShareIgnoresSignatureSpelling: the spellings of one
// token's signature that verify (CR and LF inside the base64, a space for
// '+') are one token for the share of request slots, not a client each
// with its own share.
func TestServer_SASShareIgnoresSignatureSpelling(t *testing.T) {
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: nil, Accounts: kr, MaxInFlight: 4})
	sas := &auth.SAS{Kind: auth.ServiceSAS, Version: "2019-02-02", Permissions: "r", Expiry: "2099-01-01T00:00:00Z", Table: "t"}
	sig := auth.Sign(kr["devstoreaccount1"].Keys[0], sas.StringToSign("devstoreaccount1"))
	var keys []string
	for _, spelling := range []string{sig, sig[:10] + "\n" + sig[10:], "\r\n" + sig + "\n\n", strings.ReplaceAll(sig, "+", " ")} {
		v := *sas
		v.Signature = spelling
		if !v.VerifySignature(kr["devstoreaccount1"]) {
			t.Fatalf("%q does not verify", spelling)
		}
		cs := s.claims(&reqCtx{account: "devstoreaccount1", sas: &v}, s.slots)
		keys = append(keys, cs[len(cs)-1].key)
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Errorf("claims %q and %q for one token", keys[0], k)
		}
	}
}

// ctxStore fails QueryTables with its context's error once that is done.
type ctxStore struct {
	partita.Store
	entered chan struct{}
}

func (c *ctxStore) QueryTables(ctx context.Context, account string, q partita.TableQuery) (partita.TablePage, error) {
	c.entered <- struct{}{}
	<-ctx.Done()
	return partita.TablePage{}, fmt.Errorf("pgkv: scan: %w", ctx.Err())
}

// TestServer_AbandonedRequestIsNotAnError: a request whose client went
// away fails with context.Canceled; that is logged at debug level, not as
// an error, so clients dropping connections on purpose cannot fill the log.
func TestServer_AbandonedRequestIsNotAnError(t *testing.T) {
	ts := memTableStore(t)
	var logged bytes.Buffer
	var mu sync.Mutex
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	st := &ctxStore{Store: ts, entered: make(chan struct{}, 1)}
	s := New(Options{Store: st, Accounts: kr, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	ctx, cancel := context.WithCancel(context.Background())
	r := signedRequest(t, "GET", "/devstoreaccount1/Tables").WithContext(ctx)
	done := make(chan struct{})
	go func() { s.ServeHTTP(httptest.NewRecorder(), r); close(done) }()
	<-st.entered
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "level=ERROR") {
		t.Errorf("an abandoned request was logged as an error:\n%s", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestServer_AtomAcceptOnlyRefusedForJSONOperations: an Accept asking for
// Atom (application/atom+xml or application/xml) is 415 on entity and
// table operations, which answer JSON; the XML operations answer XML
// whatever the Accept.
func TestServer_AtomAcceptOnlyRefusedForJSONOperations(t *testing.T) {
	ts := memTableStore(t)
	if _, err := ts.CreateTable(context.Background(), "devstoreaccount1", "atomt"); err != nil {
		t.Fatal(err)
	}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: ts, Accounts: kr})
	for _, tt := range []struct {
		path, accept string
		status       int
	}{
		{"/devstoreaccount1/atomt()", "application/xml", 415},
		{"/devstoreaccount1/atomt()", "application/atom+xml", 415},
		{"/devstoreaccount1/atomt?comp=acl", "application/xml", 200},
		{"/devstoreaccount1/atomt?comp=acl", "application/atom+xml,application/xml", 200},
	} {
		r := signedRequest(t, "GET", tt.path)
		r.Header.Set("Accept", tt.accept)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tt.status {
			t.Errorf("GET %s, Accept %s: %d %s, want %d", tt.path, tt.accept, w.Code, w.Header().Get("x-ms-error-code"), tt.status)
		}
	}
}

// TestServer_EmptyHostLocation: a request without a host (HTTP/1.0, or an
// empty Host header) gets Location and odata.metadata on the address it
// came to, not "http:///…".
func TestServer_EmptyHostLocation(t *testing.T) {
	ts := memTableStore(t)
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	s := New(Options{Store: ts, Accounts: kr})
	r := signedRequest(t, "POST", "/devstoreaccount1/Tables")
	body := `{"TableName":"hostless"}`
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
	r.Header.Set("Content-Type", "application/json")
	r.Host = ""
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10002}
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr)))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 201 {
		t.Fatalf("create table: %d %s", w.Code, w.Body)
	}
	if loc := w.Header().Get("Location"); loc != "http://127.0.0.1:10002/devstoreaccount1/Tables('hostless')" {
		t.Errorf("Location %q", loc)
	}
	if !strings.Contains(w.Body.String(), `"http://127.0.0.1:10002/devstoreaccount1/$metadata`) {
		t.Errorf("body %s", w.Body)
	}
}
