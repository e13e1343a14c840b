package httpapi

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/settings"
	"github.com/partita/partita/internal/tablestore"
)

// memTableStore returns a tablestore on memory, closed when t ends.
func memTableStore(t *testing.T) *tablestore.Store {
	t.Helper()
	s, err := tablestore.Open(context.Background(), memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testClock returns a clock standing at start, and a way to move it.
func testClock(start time.Time) (now func() time.Time, advance func(time.Duration)) {
	var mu sync.Mutex
	t := start
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return t },
		func(d time.Duration) { mu.Lock(); t = t.Add(d); mu.Unlock() }
}

// TestCORSCacheFollowsClock: the CORS cache's expiry is measured on the
// server's clock (Options.Now): rules stored behind the cache's back are
// served from memory until that clock passes the TTL, then read anew.
func TestCORSCacheFollowsClock(t *testing.T) {
	ctx := context.Background()
	store := memTableStore(t)
	clock, advance := testClock(time.Now().Add(-time.Hour)) // well before the real clock
	s := New(Options{Store: store, Now: clock})
	set := func(origin string) {
		p := settings.DefaultServiceProperties()
		p.Cors = []settings.CorsRule{{AllowedOrigins: origin, AllowedMethods: "GET", MaxAgeInSeconds: 1}}
		raw, _ := p.MarshalBinary()
		if err := store.SetServiceProperties(ctx, "acct", raw); err != nil {
			t.Fatal(err)
		}
	}
	origin := func() string {
		rules, err := s.corsCache.rules(ctx, "acct")
		if err != nil || len(rules) != 1 {
			t.Fatalf("rules: %+v, %v", rules, err)
		}
		return rules[0].AllowedOrigins
	}
	set("http://a")
	if got := origin(); got != "http://a" {
		t.Fatalf("first read: %s", got)
	}
	set("http://b") // behind the cache's back
	if got := origin(); got != "http://a" {
		t.Fatalf("within the TTL: %s, want the cached http://a", got)
	}
	advance(2 * corsCacheTTL)
	// Past the TTL the old rules are served while one read replaces them.
	deadline := time.Now().Add(5 * time.Second)
	for got := origin(); got != "http://b"; got = origin() {
		if got != "http://a" || time.Now().After(deadline) {
			t.Fatalf("after the TTL on the server's clock: %s, want http://b (or http://a until it is read)", got)
		}
		time.Sleep(time.Millisecond)
	}
}

// stallingStore blocks GetServiceProperties until release is closed, and
// counts the calls.
type stallingStore struct {
	partita.Store
	calls   atomic.Int32
	release chan struct{}
}

func (s *stallingStore) GetServiceProperties(ctx context.Context, account string) ([]byte, error) {
	s.calls.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.GetServiceProperties(ctx, account)
}

// TestCORSCacheStoreStall: requests read the CORS rules before they take a
// slot, so a stalled store must not hold them there. Past the TTL they get
// the old rules at once while one read (not one each) replaces them; the
// first read of an account is one read that every request waits for.
func TestCORSCacheStoreStall(t *testing.T) {
	ctx := context.Background()
	store := &stallingStore{Store: memTableStore(t), release: make(chan struct{})}
	clock, advance := testClock(time.Now())
	s := New(Options{Store: store, Now: clock})

	// The first read: 20 callers, one read of the store.
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.corsCache.rules(ctx, "acct"); err != nil {
				t.Error(err)
			}
		}()
	}
	for store.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(store.release)
	wg.Wait()
	if n := store.calls.Load(); n != 1 {
		t.Errorf("%d reads of the store for 20 first callers, want 1", n)
	}

	// Past the TTL, with the store stalled: no caller waits.
	store.release = make(chan struct{})
	defer close(store.release)
	advance(2 * corsCacheTTL)
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Second) // a caller that waits fails, not hangs
	defer cancel()
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.corsCache.rules(waitCtx, "acct"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("50 callers took %v with the store stalled", d)
	}
	wantReads(t, &store.calls, 2, "reads of the store (the first, and one to replace the old rules)")
}

// wantReads checks that calls reaches want, and stays there: a cache's
// replacing read runs apart from its callers, so wait for it to start,
// then for any further one that would.
func wantReads(t *testing.T, calls *atomic.Int32, want int32, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < want && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != want {
		t.Errorf("%d %s, want %d", n, what, want)
	}
}

// aclCountingStore counts GetTableACL calls and, while stall is set,
// holds them until it is closed.
type aclCountingStore struct {
	partita.Store
	calls atomic.Int32
	stall atomic.Pointer[chan struct{}]
}

func (s *aclCountingStore) GetTableACL(ctx context.Context, account, table string) ([]byte, error) {
	s.calls.Add(1)
	if c := s.stall.Load(); c != nil {
		select {
		case <-*c:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.GetTableACL(ctx, account, table)
}

// TestServer_SASPolicyReadsAreShared: a SAS naming a stored access policy
// (si) needs the table's policies before the request takes a slot. They
// come from a cache, read once per table at a time: not a store read per
// request outside --max-inflight (a query each on PostgreSQL), nor a
// stampede when the entry expires, nor a wait on a stalled store once
// read. Set Table ACL and Delete Table on this front end take effect at
// once; a missing table is remembered like a table.
func TestServer_SASPolicyReadsAreShared(t *testing.T) {
	ctx := context.Background()
	store := &aclCountingStore{Store: memTableStore(t)}
	kr, _ := auth.ParseAccounts("devstoreaccount1:" + testKey)
	clock, advance := testClock(time.Now())
	s := New(Options{Store: store, Accounts: kr, Now: clock})
	if _, err := store.CreateTable(ctx, "devstoreaccount1", "tab"); err != nil {
		t.Fatal(err)
	}
	acl := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>reader</Id><AccessPolicy><Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	setACL := func(body string) {
		t.Helper()
		r := signedRequest(t, "PUT", "/devstoreaccount1/tab?comp=acl")
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 204 {
			t.Fatalf("set ACL: %d %s", w.Code, w.Body)
		}
	}
	setACL(acl)
	sasQuery := func(table string) string {
		sas := &auth.SAS{Kind: auth.ServiceSAS, Version: "2019-02-02", Identifier: "reader", Table: table}
		sas.Signature = auth.Sign(kr["devstoreaccount1"].Keys[0], sas.StringToSign("devstoreaccount1"))
		return "?" + sas.Encode().Encode()
	}
	get := func(table string) int {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:10002/devstoreaccount1/"+table+"()"+sasQuery(table), nil))
		return w.Code
	}
	parallel := func(n int, table string, want int) {
		t.Helper()
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code := get(table); code != want {
					t.Errorf("GET %s with the policy's SAS: %d, want %d", table, code, want)
				}
			}()
		}
		wg.Wait()
	}
	parallel(50, "tab", 200)
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("%d reads of the table's ACL for 50 requests, want 1", n)
	}

	// Past the TTL with the store stalled: the requests are served with
	// the policies read before, while one read replaces them.
	stall := make(chan struct{})
	store.stall.Store(&stall)
	advance(2 * aclCacheTTL)
	start := time.Now()
	parallel(50, "tab", 200)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("50 requests took %v with the store stalled", d)
	}
	wantReads(t, &store.calls, 2, "reads of the table's ACL (the first, and one to replace it)")
	store.stall.Store(nil)
	close(stall)

	// Revoking the policy on this front end takes effect at once.
	setACL(`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers/>`)
	if code := get("tab"); code != 403 {
		t.Errorf("after the policy was removed: %d, want 403", code)
	}
	setACL(acl)
	if code := get("tab"); code != 200 {
		t.Errorf("after the policy was stored again: %d, want 200", code)
	}
	r := signedRequest(t, "DELETE", "/devstoreaccount1/Tables('tab')")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 204 {
		t.Fatalf("delete table: %d %s", w.Code, w.Body)
	}
	if code := get("tab"); code != 403 {
		t.Errorf("after the table was deleted: %d, want 403", code)
	}

	// A table that does not exist is read once too.
	before := store.calls.Load()
	parallel(20, "nope", 403)
	if n := store.calls.Load() - before; n != 1 {
		t.Errorf("%d reads of a missing table's ACL for 20 requests, want 1", n)
	}
}

// TestReadCacheForgetDetachesReadInFlight: a read that started before a
// change (and forget) must not answer callers that come after it, even
// while it is still in flight: they start their own read.
func TestReadCacheForgetDetachesReadInFlight(t *testing.T) {
	var calls, value atomic.Int32
	release := make(chan struct{})
	c := &readCache[int32]{ttl: time.Minute, max: 4, loadTimeout: time.Minute, now: time.Now,
		read: func(ctx context.Context, key string) (int32, error) {
			v := value.Load()
			if calls.Add(1) == 1 {
				<-release
			}
			return v, nil
		}}
	ctx := context.Background()
	value.Store(1)
	first := make(chan int32)
	go func() { v, _ := c.get(ctx, "k"); first <- v }()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	value.Store(2)
	c.forget("k")
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if v, err := c.get(waitCtx, "k"); v != 2 || err != nil {
		t.Errorf("after forget, with the old read in flight: %d, %v; want 2", v, err)
	}
	close(release)
	if v := <-first; v != 1 {
		t.Errorf("the first caller got %d, want 1 (its own read)", v)
	}
	if v, _ := c.get(ctx, "k"); v != 2 {
		t.Errorf("once the old read ended: %d, want 2 (it must not be kept)", v)
	}
}

// TestReadCacheForgetIsPerKey: forgetting one key does not keep another
// key's read in flight out of the cache. (One counter of forgets for the
// whole cache did: a key holder setting one table's ACL over and over
// left every other table's policies uncached, a store read per request.)
func TestReadCacheForgetIsPerKey(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	c := &readCache[string]{ttl: time.Minute, max: 4, loadTimeout: time.Minute, now: time.Now,
		read: func(ctx context.Context, key string) (string, error) {
			if calls.Add(1) == 1 {
				<-release
			}
			return key + "-v", nil
		}}
	ctx := context.Background()
	done := make(chan struct{})
	go func() { c.get(ctx, "a"); close(done) }()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.forget("b") // another table's ACL changed meanwhile
	close(release)
	<-done
	if v, _ := c.get(ctx, "a"); v != "a-v" || calls.Load() != 1 {
		t.Errorf("a after its read and another key's forget: %q after %d reads; want it kept, 1 read", v, calls.Load())
	}
}

// TestReadCacheBoundsReadsInFlight: reads in flight are at most the
// cache's bound of entries. Past it, a caller gets the old value if there
// is one, else reads for itself, and nothing joins the map.
func TestReadCacheBoundsReadsInFlight(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	defer close(release)
	clock, advance := testClock(time.Now())
	c := &readCache[string]{ttl: time.Second, max: 1, loadTimeout: time.Minute, now: clock,
		read: func(ctx context.Context, key string) (string, error) {
			calls.Add(1)
			if key == "stall" {
				<-release
			}
			return key + "-v", nil
		}}
	ctx := context.Background()
	if v, _ := c.get(ctx, "b"); v != "b-v" {
		t.Fatalf("first read of b: %q", v)
	}
	go c.get(ctx, "stall") // the one read in flight the bound allows
	for calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	advance(2 * time.Second) // b is old now
	if v, _ := c.get(ctx, "b"); v != "b-v" || calls.Load() != 2 {
		t.Errorf("old b with the reads in flight at the bound: %q after %d reads; want the old value, no read", v, calls.Load())
	}
	if v, _ := c.get(ctx, "c"); v != "c-v" || calls.Load() != 3 {
		t.Errorf("new c with the reads in flight at the bound: %q after %d reads; want a read of its own", v, calls.Load())
	}
	c.mu.Lock()
	n := len(c.loading)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d reads in flight in the map, want 1", n)
	}
}
