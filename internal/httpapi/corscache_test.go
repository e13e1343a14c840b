package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita"
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
		rules, err := s.corsCache.rules(ctx, s, "acct")
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
			if _, err := s.corsCache.rules(ctx, s, "acct"); err != nil {
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
			if _, err := s.corsCache.rules(waitCtx, s, "acct"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("50 callers took %v with the store stalled", d)
	}
	// The replacing read runs apart from the callers: wait for it to start,
	// then for any second one that would.
	for deadline := time.Now().Add(5 * time.Second); store.calls.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := store.calls.Load(); n != 2 {
		t.Errorf("%d reads of the store, want 2 (the first, and one to replace the old rules)", n)
	}
}
