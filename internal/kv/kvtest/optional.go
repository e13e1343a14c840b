package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
)

// runOptional checks the optional interfaces (kv.MultiGetter on readers,
// kv.CondWriter on the store) on every engine that implements them. An
// engine that lacks one does not run its checks: tablestore then never
// takes the path that needs it.
func runOptional(t *testing.T, open func(t *testing.T) kv.DB) {
	probe := open(t)
	_, cond := probe.(kv.CondWriter)
	multi := false
	if err := probe.View(context.Background(), func(r kv.Reader) error {
		_, multi = r.(kv.MultiGetter)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	probe.Close()
	if multi {
		t.Run("GetMany", func(t *testing.T) { testGetMany(t, open(t)) })
	}
	if cond {
		t.Run("CondWrite", func(t *testing.T) { testCondWrite(t, open(t)) })
		t.Run("CondWriteGuardRace", func(t *testing.T) { testCondWriteGuardRace(t, open(t)) })
	}
}

// testGetMany: GetMany returns each key's value in the order asked, nil
// for an absent key, an empty (non-nil) slice for an empty value, and a
// key asked twice twice.
func testGetMany(t *testing.T, db kv.DB) {
	defer db.Close()
	mustUpdate(t, db, func(tx kv.Txn) error {
		if err := tx.Set([]byte("a"), []byte("1")); err != nil {
			return err
		}
		if err := tx.Set([]byte("c"), []byte("3")); err != nil {
			return err
		}
		return tx.Set([]byte("e"), []byte{})
	})
	err := db.View(context.Background(), func(r kv.Reader) error {
		vals, err := r.(kv.MultiGetter).GetMany([][]byte{[]byte("c"), []byte("b"), []byte("a"), []byte("e"), []byte("c")})
		if err != nil {
			return err
		}
		if len(vals) != 5 {
			return fmt.Errorf("%d values for 5 keys", len(vals))
		}
		for i, want := range []string{"3", "", "1", "", "3"} {
			if absent := i == 1; (vals[i] == nil) != absent || string(vals[i]) != want {
				return fmt.Errorf("value %d = %q (nil %v), want %q (nil %v)", i, vals[i], vals[i] == nil, want, absent)
			}
		}
		none, err := r.(kv.MultiGetter).GetMany(nil)
		if err != nil || len(none) != 0 {
			return fmt.Errorf("GetMany(nil) = %q, %v", none, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testCondWrite: each form of the one-statement conditional write applies
// exactly when its conditions hold, and changes nothing otherwise.
func testCondWrite(t *testing.T, db kv.DB) {
	defer db.Close()
	ctx := context.Background()
	cw := db.(kv.CondWriter)
	get := func(k string) string {
		var out string
		err := db.View(ctx, func(r kv.Reader) error {
			v, err := r.Get([]byte(k))
			if errors.Is(err, kv.ErrNotFound) {
				out = "<absent>"
				return nil
			}
			out = string(v)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("guard"), []byte("g1")) })
	g := func(w kv.CondWrite) kv.CondWrite {
		if w.GuardKey == nil {
			w.GuardKey, w.GuardValue = []byte("guard"), []byte("g1")
		}
		return w
	}
	for _, c := range []struct {
		name  string
		w     kv.CondWrite
		apply bool
		after string // value of "k" afterwards
	}{
		{"insert", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v1-a"), Absent: true}), true, "v1-a"},
		{"insert existing", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Absent: true}), false, "v1-a"},
		{"update, prefix matches", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v2-b"), Prefix: []byte("v1")}), true, "v2-b"},
		{"update, prefix differs", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Prefix: []byte("v1")}), false, "v2-b"},
		{"update, prefix longer than value", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Prefix: []byte("v2-b-and-more")}), false, "v2-b"},
		{"update, prefix longer than value", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Prefix: []byte("v2-b-and-more")}), false, "v2-b"},
		{"update, guard changed", kv.CondWrite{GuardKey: []byte("guard"), GuardValue: []byte("g0"), Key: []byte("k"), Value: []byte("x")}, false, "v2-b"},
		{"update, guard absent", kv.CondWrite{GuardKey: []byte("nope"), GuardValue: []byte("g1"), Key: []byte("k"), Value: []byte("x")}, false, "v2-b"},
		{"update, must exist", g(kv.CondWrite{Key: []byte("other"), Value: []byte("x")}), false, "v2-b"},
		{"delete, prefix differs", g(kv.CondWrite{Key: []byte("k"), Prefix: []byte("v1")}), false, "v2-b"},
		{"delete, prefix matches", g(kv.CondWrite{Key: []byte("k"), Prefix: []byte("v2")}), true, "<absent>"},
		{"delete absent", g(kv.CondWrite{Key: []byte("k")}), false, "<absent>"},
		{"insert, guard changed", kv.CondWrite{GuardKey: []byte("guard"), GuardValue: []byte("g0"), Key: []byte("k"), Value: []byte("x"), Absent: true}, false, "<absent>"},
		{"insert again", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v3"), Absent: true}), true, "v3"},
		{"delete, must exist", g(kv.CondWrite{Key: []byte("k")}), true, "<absent>"},
	} {
		applied, err := cw.CondWrite(ctx, c.w)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if applied != c.apply {
			t.Errorf("%s: applied=%v, want %v", c.name, applied, c.apply)
		}
		if got := get("k"); got != c.after {
			t.Errorf("%s: k=%q afterwards, want %q", c.name, got, c.after)
		}
	}
	if get("other") != "<absent>" || get("guard") != "g1" {
		t.Error("a conditional write touched another key")
	}
}

// testCondWriteGuardRace: inserts guarded by a record race with
// transactions that change the record and then sweep the range the inserts
// write to (what Delete Table and its purge do). No insert may land after
// the sweep: every applied insert is swept, none survives.
func testCondWriteGuardRace(t *testing.T, db kv.DB) {
	defer db.Close()
	ctx := context.Background()
	cw := db.(kv.CondWriter)
	for round := 0; round < 20; round++ {
		guardV := []byte(fmt.Sprint("live", round))
		mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("guard"), guardV) })
		prefix := fmt.Sprintf("row/%02d/", round)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					ok, err := cw.CondWrite(ctx, kv.CondWrite{GuardKey: []byte("guard"), GuardValue: guardV,
						Key: []byte(fmt.Sprintf("%s%d-%04d", prefix, w, i)), Value: []byte("x"), Absent: true})
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return // the guard changed: this writer is done
					}
				}
			}(w)
		}
		time.Sleep(5 * time.Millisecond) // let the writers run; no assertion depends on it
		mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("guard"), []byte("gone")) })
		// The sweep, after the guard change committed.
		if err := db.DeleteRange(ctx, []byte(prefix), []byte(prefix+"\xff")); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{LowerBound: []byte(prefix), UpperBound: []byte(prefix + "\xff")})
			if err != nil {
				return err
			}
			defer it.Close()
			if it.First() {
				t.Errorf("round %d: %q was written after its guard changed and the range was swept", round, it.Key())
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// RangesOneState checks what a query scanning several key ranges needs
// of the engines a server runs on (pebblekv, pgkv; memkv, an engine for
// tests, does not keep it): a write that commits while the query goes
// from one range to the next is seen in neither. The next range is read
// as tablestore reads it: the same iterator with new bounds
// (kv.Rebounder), or else a new iterator of the same View.
func RangesOneState(t *testing.T, db kv.DB) {
	ctx := context.Background()
	defer db.Close()
	put := func(v string) {
		t.Helper()
		if err := db.Update(ctx, func(tx kv.Txn) error {
			for _, k := range []string{"a1", "b1"} {
				if err := tx.Set([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	first := func(it kv.Iterator) string {
		t.Helper()
		if !it.First() {
			t.Fatalf("no key: %v", it.Error())
		}
		return string(it.Value())
	}
	put("1")
	if err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte("a"), UpperBound: []byte("b")})
		if err != nil {
			return err
		}
		defer func() { it.Close() }()
		if v := first(it); v != "1" {
			t.Errorf("the first range: %q, want 1", v)
		}
		put("2") // between the ranges
		if rb, ok := it.(kv.Rebounder); ok {
			rb.SetBounds([]byte("b"), []byte("c"))
		} else {
			it.Close()
			if it, err = r.NewIter(kv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("c")}); err != nil {
				return err
			}
		}
		if v := first(it); v != "1" {
			t.Errorf("the next range sees a write committed after the first range was read: %q, want 1", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, db, "b1"); got != "2" {
		t.Errorf("after the View: %q, want 2", got)
	}
}
