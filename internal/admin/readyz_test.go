package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita/internal/admin"
)

// countingProber counts probes; each waits for release (when set) and
// answers fail's error.
type countingProber struct {
	n       atomic.Int64
	release chan struct{}
	mu      sync.Mutex
	fail    error
}

func (p *countingProber) Probe(ctx context.Context) error {
	p.n.Add(1)
	if p.release != nil {
		select {
		case <-p.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fail
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestReadyzSingleFlight: N concurrent /readyz calls cause one probe and
// all answer ready; a call within ReadyWindow of it causes none; a call
// after the window causes one more.
func TestReadyzSingleFlight(t *testing.T) {
	const n = 8
	p := &countingProber{release: make(chan struct{})}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	h := admin.New(admin.Options{Store: p, Now: clock.Now})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	codes := make(chan int, n)
	for range n {
		go func() {
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Error(err)
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Hold the probe until every other call has joined it (or has started
	// a probe of its own, which the count below catches).
	deadline := time.Now().Add(10 * time.Second)
	for admin.Joined(h)+int(p.n.Load()) < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(p.release)
	for range n {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("concurrent readyz: %d, want 200", code)
		}
	}
	if got := p.n.Load(); got != 1 {
		t.Fatalf("%d concurrent readyz calls made %d probes, want 1", n, got)
	}

	clock.Advance(admin.ReadyWindow * 9 / 10)
	if code, body := do(t, "GET", srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Errorf("readyz within the window: %d %s", code, body)
	}
	if got := p.n.Load(); got != 1 {
		t.Errorf("readyz within the window made a probe (%d in all, want 1)", got)
	}

	clock.Advance(admin.ReadyWindow)
	if code, body := do(t, "GET", srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Errorf("readyz after the window: %d %s", code, body)
	}
	if got := p.n.Load(); got != 2 {
		t.Errorf("readyz after the window: %d probes in all, want 2", got)
	}
}

// TestReadyzFailureWindow: a failed probe answers 503 for the calls of
// its window without probing again, and not beyond it: once the store
// recovers, the first call after the window is ready.
func TestReadyzFailureWindow(t *testing.T) {
	p := &countingProber{fail: errors.New("disk on fire")}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	srv := httptest.NewServer(admin.New(admin.Options{Store: p, Now: clock.Now}))
	t.Cleanup(srv.Close)

	for i := range 3 {
		if code, body := do(t, "GET", srv.URL+"/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk on fire") {
			t.Errorf("readyz %d on a failing store: %d %q, want 503 naming the reason", i, code, body)
		}
	}
	if got := p.n.Load(); got != 1 {
		t.Errorf("3 readyz calls within the window on a failing store made %d probes, want 1", got)
	}
	p.mu.Lock()
	p.fail = nil
	p.mu.Unlock()
	clock.Advance(admin.ReadyWindow)
	if code, body := do(t, "GET", srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Errorf("readyz after the window on a recovered store: %d %s", code, body)
	}
	if got := p.n.Load(); got != 2 {
		t.Errorf("%d probes in all, want 2", got)
	}
}
