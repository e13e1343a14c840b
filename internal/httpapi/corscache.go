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

// corsCache holds each account's CORS rules for corsCacheTTL.
type corsCache struct {
	mu sync.RWMutex
	m  map[string]corsEntry
	// gen counts forget calls: rules read before a change is stored are
	// not cached after it.
	gen uint64
}

type corsEntry struct {
	rules   []settings.CorsRule
	expires time.Time
}

// rules returns the account's CORS rules, from the cache while fresh.
func (c *corsCache) rules(ctx context.Context, s *Server, account string) ([]settings.CorsRule, error) {
	now := s.now()
	c.mu.RLock()
	e, ok := c.m[account]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.rules, nil
	}
	p, err := s.loadProperties(ctx, account)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil || len(c.m) >= maxCORSCacheEntries {
			c.m = make(map[string]corsEntry)
		}
		c.m[account] = corsEntry{rules: p.Cors, expires: now.Add(corsCacheTTL)}
	}
	c.mu.Unlock()
	return p.Cors, nil
}

// forget drops the account's entry, after its properties changed.
func (c *corsCache) forget(account string) {
	c.mu.Lock()
	delete(c.m, account)
	c.gen++
	c.mu.Unlock()
}
