package httpapi

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/settings"
	"github.com/partita/partita/internal/tablestore"
)

// TestCORSCacheFollowsClock: the CORS cache's expiry is measured on the
// server's clock (Options.Now): rules stored behind the cache's back are
// served from memory until that clock passes the TTL, then read anew.
func TestCORSCacheFollowsClock(t *testing.T) {
	ctx := context.Background()
	store, err := tablestore.Open(ctx, memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	now := time.Now().Add(-time.Hour) // well before the real clock
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
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
	mu.Lock()
	now = now.Add(2 * corsCacheTTL)
	mu.Unlock()
	if got := origin(); got != "http://b" {
		t.Fatalf("after the TTL on the server's clock: %s, want http://b", got)
	}
}
