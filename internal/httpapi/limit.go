package httpapi

import (
	"context"
	"sync"
	"time"
)

// budget is a counting semaphore with per-principal ceilings: request
// slots (one unit per request) and request-body bytes are two budgets.
// A principal is an authenticated account or shared access signature, so
// one of them can hold at most its ceiling while the rest stays free for
// the others.
type budget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	// held counts units by principal. A principal has an entry only
	// while it holds something, so there are never more entries than
	// requests in flight, whatever keys clients send.
	held map[string]int64
	// wake is closed and replaced when units are given back while
	// waiters (the number of takes waiting) is not zero.
	wake    chan struct{}
	waiters int
}

// claim names a principal and the most it may hold of a budget.
type claim struct {
	key   string
	limit int64
}

func newBudget(capacity int64) *budget {
	return &budget{capacity: capacity, held: make(map[string]int64), wake: make(chan struct{})}
}

// fits reports whether n more units fit in the budget and under every
// claim's limit; b.mu is held. A request alone always fits, however
// large, so that no limit set below one request's size blocks it forever.
func (b *budget) fits(n int64, claims []claim) bool {
	if b.used > 0 && b.used+n > b.capacity {
		return false
	}
	for _, c := range claims {
		if h := b.held[c.key]; c.key != "" && h > 0 && h+n > c.limit {
			return false
		}
	}
	return true
}

// grab reserves n units for the claims' principals when they fit. When
// they do not and wait is set, it counts the caller as a waiter (which
// unwait undoes) and returns the channel that is closed when units are
// given back.
func (b *budget) grab(n int64, claims []claim, wait bool) (wake chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fits(n, claims) {
		b.used += n
		for _, c := range claims {
			if c.key != "" {
				b.held[c.key] += n
			}
		}
		return nil, true
	}
	if wait {
		b.waiters++
	}
	return b.wake, false
}

func (b *budget) unwait() {
	b.mu.Lock()
	b.waiters--
	b.mu.Unlock()
}

// take reserves n units for the claims' principals, waiting at most wait
// for them to free up. It reports whether it did.
func (b *budget) take(n int64, wait time.Duration, claims ...claim) bool {
	var timer *time.Timer
	for {
		wake, ok := b.grab(n, claims, timer != nil || wait > 0)
		if ok {
			if timer != nil {
				timer.Stop()
			}
			return true
		}
		if timer == nil && wait <= 0 {
			return false
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-wake:
			b.unwait()
		case <-timer.C:
			b.unwait()
			return false
		}
	}
}

// takeCtx is take that waits until ctx is done rather than for a fixed
// time; it returns ctx's error when it gives up.
func (b *budget) takeCtx(ctx context.Context, n int64, claims ...claim) error {
	for {
		wake, ok := b.grab(n, claims, true)
		if ok {
			return nil
		}
		select {
		case <-wake:
			b.unwait()
		case <-ctx.Done():
			b.unwait()
			return ctx.Err()
		}
	}
}

// give returns n units taken with the same claims.
func (b *budget) give(n int64, claims ...claim) {
	b.mu.Lock()
	b.used -= n
	for _, c := range claims {
		if c.key == "" {
			continue
		}
		if left := b.held[c.key] - n; left > 0 {
			b.held[c.key] = left
		} else {
			delete(b.held, c.key)
		}
	}
	if b.waiters > 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// share is pct percent of capacity, at least 1.
func share(capacity int64, pct int) int64 {
	n := capacity * int64(pct) / 100
	if n < 1 {
		n = 1
	}
	return n
}
