package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows how a workload is going on stderr: "bar" redraws one line
// in place (a terminal), "plain" prints a line every plainEvery and at the
// end, "none" prints nothing.
type progress struct {
	mode string
	w    io.Writer

	name       string
	limit      uint64
	countBound bool
	warmup     time.Duration
	duration   time.Duration
	start      time.Time
	done       atomic.Uint64
	errs       atomic.Uint64
	stop       chan struct{}
	wg         sync.WaitGroup
}

const (
	barEvery   = 200 * time.Millisecond
	plainEvery = 10 * time.Second
)

func (p *progress) begin(name string, limit uint64, countBound bool, warmup, duration time.Duration) {
	if p.mode == "none" {
		return
	}
	p.name, p.limit, p.countBound, p.warmup, p.duration = name, limit, countBound, warmup, duration
	p.start = time.Now()
	p.done.Store(0)
	p.errs.Store(0)
	p.stop = make(chan struct{})
	every := barEvery
	if p.mode == "plain" {
		every = plainEvery
		if countBound {
			fmt.Fprintf(p.w, "%s: %d ops, at most %s\n", name, limit, duration)
		} else {
			fmt.Fprintf(p.w, "%s: %s (+%s warmup), at most %d ops\n", name, duration, warmup, limit)
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		lastN, lastT := uint64(0), p.start
		rate := 0.0
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				n := p.done.Load()
				if dt := now.Sub(lastT).Seconds(); dt > 0 {
					inst := float64(n-lastN) / dt
					if rate == 0 {
						rate = inst
					} else {
						rate = 0.7*rate + 0.3*inst
					}
				}
				lastN, lastT = n, now
				p.draw(now, n, rate)
			}
		}
	}()
}

func (p *progress) draw(now time.Time, n uint64, rate float64) {
	el := now.Sub(p.start)
	var frac float64
	var what string
	if p.countBound {
		if p.limit > 0 {
			frac = float64(n) / float64(p.limit)
		}
		what = fmt.Sprintf("%d/%d", n, p.limit)
	} else {
		if total := p.warmup + p.duration; total > 0 {
			frac = el.Seconds() / total.Seconds()
		}
		what = fmt.Sprintf("%d ops", n)
		if el < p.warmup {
			what += " (warmup)"
		}
	}
	frac = min(max(frac, 0), 1)
	errs := p.errs.Load()
	if p.mode == "plain" {
		fmt.Fprintf(p.w, "  %s: %s, %.0f ops/s, %d errors, %s\n", p.name, what, rate, errs, el.Truncate(100*time.Millisecond))
		return
	}
	const width = 24
	fill := int(frac * width)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	fmt.Fprintf(p.w, "\r\033[K%-14s [%s] %s  %8.0f ops/s  %d err  %s", p.name, bar, what, rate, errs, el.Truncate(100*time.Millisecond))
}

func (p *progress) add(failed bool) {
	if p.mode == "none" {
		return
	}
	p.done.Add(1)
	if failed {
		p.errs.Add(1)
	}
}

func (p *progress) end() {
	if p.mode == "none" || p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.stop = nil
	el := time.Since(p.start).Truncate(10 * time.Millisecond)
	switch p.mode {
	case "bar":
		fmt.Fprintf(p.w, "\r\033[K%-14s done: %d ops, %d errors in %s\n", p.name, p.done.Load(), p.errs.Load(), el)
	case "plain":
		fmt.Fprintf(p.w, "  %s: done, %d ops, %d errors in %s\n", p.name, p.done.Load(), p.errs.Load(), el)
	}
}
