package httpapi

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/settings"
)

// readCache keeps, per key, what one read of the store returned, for ttl
// on the server's clock. Requests consult it before they take a slot (an
// account's CORS rules, a table's stored access policies), so with a slow
// or stalled store each of them waiting for its own read would queue
// outside --max-inflight, and thousands of reads would stampede the store
// whenever an entry expired. So there is at most one read per key at a
// time: an entry past its TTL is still served while that read replaces it,
// and only a key's first read is waited for, by every caller at once (each
// until its own context ends). A read's error is handed to the callers
// waiting for it and not kept.
type readCache[V any] struct {
	ttl         time.Duration
	max         int           // entries kept; at the bound the map starts afresh
	loadTimeout time.Duration // of one read, which runs apart from its callers
	now         func() time.Time
	read        func(ctx context.Context, key string) (V, error)

	mu sync.RWMutex
	m  map[string]cachedRead[V]
	// loading holds the read in flight per key (at most max). A read is
	// kept in m only while it is still its key's entry here: forget
	// removes it, so what was read before a change is not kept after it.
	loading map[string]*pendingRead[V]
}

type cachedRead[V any] struct {
	v       V
	expires time.Time
}

// pendingRead is one read in flight; done is closed once v or err is set.
type pendingRead[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// get returns key's value: from the cache while fresh, the old value while
// a read replaces it, or, the first time, that of the read every caller
// waits for (until ctx is done).
func (c *readCache[V]) get(ctx context.Context, key string) (V, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.v, nil
	}
	c.mu.Lock()
	if e2, ok2 := c.m[key]; ok2 && now.Before(e2.expires) {
		c.mu.Unlock()
		return e2.v, nil // read by another caller meanwhile
	}
	l := c.loading[key]
	if l == nil {
		if len(c.loading) >= c.max {
			// As many reads in flight as the cache keeps entries: the old
			// value if there is one, else a read of the caller's own,
			// rather than grow the map.
			c.mu.Unlock()
			if ok {
				return e.v, nil
			}
			return c.read(ctx, key)
		}
		l = &pendingRead[V]{done: make(chan struct{})}
		if c.loading == nil {
			c.loading = make(map[string]*pendingRead[V])
		}
		c.loading[key] = l
		go c.load(key, l)
	}
	c.mu.Unlock()
	if ok {
		return e.v, nil
	}
	select {
	case <-l.done:
		return l.v, l.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// load reads key into l and, unless forget(key) was called meanwhile, into
// the cache.
func (c *readCache[V]) load(key string, l *pendingRead[V]) {
	ctx, cancel := context.WithTimeout(context.Background(), c.loadTimeout)
	defer cancel()
	v, err := c.read(ctx, key)
	c.mu.Lock()
	if err != nil {
		l.err = err
	} else {
		l.v = v
		if c.loading[key] == l {
			if c.m == nil || len(c.m) >= c.max {
				c.m = make(map[string]cachedRead[V])
			}
			c.m[key] = cachedRead[V]{v: v, expires: c.now().Add(c.ttl)}
		}
	}
	if c.loading[key] == l {
		delete(c.loading, key)
	}
	c.mu.Unlock()
	close(l.done)
}

// forget drops key's entry after what it was read from changed. A read
// in flight may have started before the change: callers from now on do
// not wait for it but start their own.
func (c *readCache[V]) forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	delete(c.loading, key)
	c.mu.Unlock()
}

// corsCacheTTL is how long an account's CORS rules are served from memory.
// Every authenticated request needs them (a response varies by Origin as
// soon as the account has a rule, even for a request without an Origin
// header), so reading and decoding the service properties per request
// would cost a store read each time. Set Service Properties on this front
// end forgets the entry at once; another front end on the same PostgreSQL
// database sees the change within the TTL.
const corsCacheTTL = time.Second

// maxCORSCacheEntries bounds the CORS cache. Entries are keyed by account
// name after authentication, so there are at most as many as configured
// accounts; the bound only guards against a very large keyring.
const maxCORSCacheEntries = 1024

// corsLoadTimeout bounds one read of an account's service properties for
// the cache.
const corsLoadTimeout = 30 * time.Second

// corsCache holds each account's CORS rules, as matching and answering
// use them: each rule's ExposedHeaders is already the
// Access-Control-Expose-Headers value it gives (its prefixes expanded,
// settings.CorsRule.ExposeHeaders), worked out once when the rules are
// read. Get Service Properties reads the rules as stored, not from here.
type corsCache struct{ readCache[[]settings.CorsRule] }

func (c *corsCache) init(s *Server) {
	c.ttl, c.max, c.loadTimeout, c.now = corsCacheTTL, maxCORSCacheEntries, corsLoadTimeout, s.now
	c.read = func(ctx context.Context, account string) ([]settings.CorsRule, error) {
		p, err := s.loadProperties(ctx, account)
		if err != nil {
			return nil, err
		}
		for i := range p.Cors {
			p.Cors[i].ExposedHeaders = p.Cors[i].ExposeHeaders(exposableHeaders)
		}
		return p.Cors, nil
	}
}

// rules returns the account's CORS rules.
func (c *corsCache) rules(ctx context.Context, account string) ([]settings.CorsRule, error) {
	return c.get(ctx, account)
}

// aclCacheTTL is how long a table's stored access policies are served from
// memory. A service SAS with si needs them before the request takes a slot;
// reading them per request would cost a store read each (a query, on
// PostgreSQL) outside --max-inflight. The service documents that a stored
// access policy may take up to 30 seconds to take effect; here Set Table
// ACL and Delete Table on this front end forget the table's entry at once,
// and other front ends see a change within the TTL.
const aclCacheTTL = time.Second

// maxACLCacheEntries bounds the stored-policy cache. Entries are keyed by
// the table a valid signature names (tn), so only holders of an account
// key choose them.
const maxACLCacheEntries = 4096

// tableACL is what the policy cache keeps of a table: its stored access
// policies, or that the table does not exist.
type tableACL struct {
	policies []auth.Policy
	missing  bool
}

// aclCache holds tables' stored access policies, keyed by aclCacheKey.
type aclCache struct{ readCache[tableACL] }

func (c *aclCache) init(s *Server) {
	c.ttl, c.max, c.loadTimeout, c.now = aclCacheTTL, maxACLCacheEntries, corsLoadTimeout, s.now
	c.read = func(ctx context.Context, key string) (tableACL, error) {
		account, table, _ := strings.Cut(key, "\x00")
		raw, err := s.store.GetTableACL(ctx, account, table)
		if err != nil {
			if partita.ErrorCode(err) == partita.CodeTableNotFound {
				return tableACL{missing: true}, nil
			}
			return tableACL{}, err
		}
		ids, err := settings.UnmarshalACL(raw)
		if err != nil {
			return tableACL{}, err
		}
		var acl tableACL
		for _, id := range ids {
			p := auth.Policy{ID: id.ID}
			if id.Policy != nil {
				p.Start, p.Expiry, p.Permission = id.Policy.Start, id.Policy.Expiry, id.Policy.Permission
			}
			acl.policies = append(acl.policies, p)
		}
		return acl, nil
	}
}

// aclCacheKey is the cache's key for a table (table names are
// case-insensitive).
func aclCacheKey(account, table string) string {
	return account + "\x00" + partita.FoldTableName(table)
}
