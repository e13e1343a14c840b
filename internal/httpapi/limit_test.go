package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBudget_ClaimsAndCapacity(t *testing.T) {
	b := newBudget(4)
	a := claim{key: "a", limit: 2}
	o := claim{key: "o", limit: 2}
	if !b.take(1, 0, a) || !b.take(1, 0, a) {
		t.Fatal("a could not take its share")
	}
	if b.take(1, 0, a) {
		t.Error("a took more than its limit")
	}
	if !b.take(2, 0, o) {
		t.Error("o could not take its share while a held its own")
	}
	if b.take(1, 0) {
		t.Error("an unclaimed request went over the capacity")
	}
	b.give(1, a)
	if !b.take(1, 0, a) {
		t.Error("a could not take back what it gave")
	}
	b.give(2, a)
	b.give(2, o)
	if len(b.held) != 0 || b.used != 0 {
		t.Errorf("after giving everything back: used %d, held %v", b.used, b.held)
	}
}

func TestBudget_LoneRequestOverCapacityFits(t *testing.T) {
	b := newBudget(10)
	c := claim{key: "a", limit: 5}
	if !b.take(20, 0, c) {
		t.Fatal("a lone request larger than the budget and its claim was refused")
	}
	if b.take(1, 0) {
		t.Error("a second request fit beside one larger than the budget")
	}
	b.give(20, c)
	if !b.take(10, 0, c) {
		t.Error("budget not free after give")
	}
}

func TestBudget_WaiterWakesOnGive(t *testing.T) {
	b := newBudget(1)
	if !b.take(1, 0) {
		t.Fatal("first take")
	}
	got := make(chan bool)
	go func() { got <- b.take(1, time.Minute) }()
	time.Sleep(10 * time.Millisecond) // usually lets the waiter block first; either order passes
	b.give(1)
	if !<-got {
		t.Error("a waiter did not get the unit given back")
	}
}

func TestBudget_TakeCtxGivesUpWithTheContext(t *testing.T) {
	b := newBudget(1)
	if err := b.takeCtx(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.takeCtx(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("takeCtx on a full budget: %v, want context.DeadlineExceeded", err)
	}
	b.mu.Lock()
	waiters := b.waiters
	b.mu.Unlock()
	if waiters != 0 {
		t.Errorf("%d waiters left after the deadline", waiters)
	}
	got := make(chan error)
	go func() { got <- b.takeCtx(context.Background(), 1) }()
	b.give(1)
	if err := <-got; err != nil {
		t.Errorf("a waiter did not get the unit given back: %v", err)
	}
}
