package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/partita/partita/internal/settings"
)

// corsCacheTTL is how long an account's CORS rules are served from memory.
// Every authenticated request needs them (a response varies by Origin as
// soon as the account has a rule, even for a request without an Origin
// header), so reading and decoding the service properties per request
// would cost a store read each time. Set Service Properties on this front
// end forgets the entry at once; another front end on the same PostgreSQL
// database sees the change within the TTL.
const corsCacheTTL = time.Second

// maxCORSCacheEntries bounds the cache. Entries are keyed by account name
// after authentication, so there are at most as many as configured
// accounts; the bound only guards against a very large keyring.
const maxCORSCacheEntries = 1024

// corsLoadTimeout bounds one read of an account's service properties for
// the cache (it runs apart from the requests waiting for it).
const corsLoadTimeout = 30 * time.Second

// corsCache holds each account's CORS rules for corsCacheTTL. An entry
// past its TTL is still served while one read of the store, shared by
// every request that finds it old, replaces it: requests read the rules
// before they take a slot, so with a slow or stalled store each of them
// waiting for its own read would queue outside --max-inflight (and
// thousands of reads would stampede the store when the entry expired).
// Only an account's first read is waited for, by everyone at once.
type corsCache struct {
	mu sync.RWMutex
	m  map[string]corsEntry
	// gen counts forget calls: rules read before a change is stored are
	// not cached after it.
	gen uint64
	// loading holds the read in flight per account (keyed after
	// authentication, so bounded by the configured accounts).
	loading map[string]*corsLoad
}

type corsEntry struct {
	rules   []settings.CorsRule
	expires time.Time
}

// corsLoad is one read of an account's rules; done is closed once rules
// or err is set.
type corsLoad struct {
	done  chan struct{}
	rules []settings.CorsRule
	err   error
}

// rules returns the account's CORS rules: from the cache while fresh, the
// old ones while a read replaces them, or, the first time, those of the
// read every request waits for (until ctx is done).
func (c *corsCache) rules(ctx context.Context, s *Server, account string) ([]settings.CorsRule, error) {
	now := s.now()
	c.mu.RLock()
	e, ok := c.m[account]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.rules, nil
	}
	c.mu.Lock()
	if e2, ok2 := c.m[account]; ok2 && now.Before(e2.expires) {
		c.mu.Unlock()
		return e2.rules, nil // read by another request meanwhile
	}
	l := c.loading[account]
	if l == nil {
		l = &corsLoad{done: make(chan struct{})}
		if c.loading == nil {
			c.loading = make(map[string]*corsLoad)
		}
		c.loading[account] = l
		go c.load(s, account, c.gen, l)
	}
	c.mu.Unlock()
	if ok {
		return e.rules, nil
	}
	select {
	case <-l.done:
		return l.rules, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads the account's rules into l and, unless forget was called
// meanwhile, into the cache.
func (c *corsCache) load(s *Server, account string, gen uint64, l *corsLoad) {
	ctx, cancel := context.WithTimeout(context.Background(), corsLoadTimeout)
	defer cancel()
	p, err := s.loadProperties(ctx, account)
	c.mu.Lock()
	if err != nil {
		l.err = err
	} else {
		l.rules = p.Cors
		if c.gen == gen {
			if c.m == nil || len(c.m) >= maxCORSCacheEntries {
				c.m = make(map[string]corsEntry)
			}
			c.m[account] = corsEntry{rules: p.Cors, expires: s.now().Add(corsCacheTTL)}
		}
	}
	delete(c.loading, account)
	c.mu.Unlock()
	close(l.done)
}

// forget drops the account's entry, after its properties changed.
func (c *corsCache) forget(account string) {
	c.mu.Lock()
	delete(c.m, account)
	c.gen++
	c.mu.Unlock()
}
