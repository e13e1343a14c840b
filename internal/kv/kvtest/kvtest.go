// Package kvtest is the conformance suite every kv.DB engine must pass,
// including a model-based random test against a sorted map.
package kvtest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/partita/partita/internal/kv"
)

var seedFlag = flag.Uint64("kvtest.seed", 0, "seed for the kvtest random model test (0: time-based)")

// Run runs the suite. open returns a fresh, empty store; the suite closes it.
func Run(t *testing.T, open func(t *testing.T) kv.DB) {
	ctx := context.Background()
	t.Run("GetSetDelete", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("a"), []byte("1")) })
		if got := mustGet(t, db, "a"); got != "1" {
			t.Fatalf("Get(a) = %q, want 1", got)
		}
		err := db.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("b")); return err })
		if !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get(b) err = %v, want ErrNotFound", err)
		}
		mustUpdate(t, db, func(tx kv.Txn) error { return tx.Delete([]byte("a")) })
		err = db.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("a")); return err })
		if !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get(a) after delete err = %v, want ErrNotFound", err)
		}
	})
	t.Run("ReadYourWrites", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("k1"), []byte("old")) })
		mustUpdate(t, db, func(tx kv.Txn) error {
			tx.Set([]byte("k1"), []byte("new"))
			tx.Set([]byte("k2"), []byte("v2"))
			tx.Delete([]byte("k3"))
			v, err := tx.Get([]byte("k1"))
			if err != nil || string(v) != "new" {
				return fmt.Errorf("in-txn Get(k1) = %q, %v", v, err)
			}
			it, err := tx.NewIter(kv.IterOptions{LowerBound: []byte("k"), UpperBound: []byte("l")})
			if err != nil {
				return err
			}
			defer it.Close()
			var keys []string
			for ok := it.First(); ok; ok = it.Next() {
				keys = append(keys, string(it.Key()))
			}
			if fmt.Sprint(keys) != "[k1 k2]" {
				return fmt.Errorf("in-txn iteration = %v, want [k1 k2]", keys)
			}
			return nil
		})
	})
	t.Run("GetValueStableUntilTxnEnds", func(t *testing.T) {
		// Engines may return their own memory from Get (kv.Reader); it
		// must not change while the transaction lasts, whatever else it
		// and other transactions do meanwhile.
		db := open(t)
		defer db.Close()
		first := bytes.Repeat([]byte("first-"), 200)
		mustUpdate(t, db, func(tx kv.Txn) error {
			tx.Set([]byte("a"), first)
			return tx.Set([]byte("b"), []byte("bee"))
		})
		err := db.View(ctx, func(r kv.Reader) error {
			va, err := r.Get([]byte("a"))
			if err != nil {
				return err
			}
			// Another transaction overwrites a; this one reads on.
			mustUpdate(t, db, func(tx kv.Txn) error { return tx.Set([]byte("a"), bytes.Repeat([]byte("other-"), 200)) })
			for i := 0; i < 100; i++ {
				if _, err := r.Get([]byte("b")); err != nil {
					return err
				}
			}
			if !bytes.Equal(va, first) {
				return fmt.Errorf("View: value of a changed under the reader: %.20q", va)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		mustUpdate(t, db, func(tx kv.Txn) error {
			v1, err := tx.Get([]byte("b"))
			if err != nil {
				return err
			}
			tx.Set([]byte("b"), []byte("second"))
			v2, err := tx.Get([]byte("b"))
			if err != nil {
				return err
			}
			for i := 0; i < 200; i++ { // grow the transaction's buffers
				tx.Set([]byte("b"), bytes.Repeat([]byte{byte(i)}, 1000))
				tx.Set([]byte(fmt.Sprintf("c%03d", i)), bytes.Repeat([]byte{byte(i)}, 1000))
			}
			if string(v1) != "bee" || string(v2) != "second" {
				return fmt.Errorf("Update: values read earlier changed: %q, %q", v1, v2)
			}
			return nil
		})
	})
	t.Run("Rollback", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		boom := errors.New("boom")
		err := db.Update(ctx, func(tx kv.Txn) error {
			tx.Set([]byte("x"), []byte("1"))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update err = %v, want boom", err)
		}
		err = db.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("x")); return err })
		if !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("rolled-back key visible: %v", err)
		}
	})
	t.Run("IterBoundsAndSeek", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		mustUpdate(t, db, func(tx kv.Txn) error {
			for _, k := range []string{"a", "b", "ba", "c", "d\x00", "d\xff"} {
				tx.Set([]byte(k), []byte("v"+k))
			}
			return nil
		})
		got := scan(t, db, kv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d\xff")}, nil)
		if fmt.Sprintf("%q", got) != `["b" "ba" "c" "d\x00"]` {
			t.Fatalf("scan = %q", got)
		}
		got = scan(t, db, kv.IterOptions{}, []byte("bb"))
		if fmt.Sprintf("%q", got) != `["c" "d\x00" "d\xff"]` {
			t.Fatalf("seek scan = %q", got)
		}
	})
	t.Run("SeekAfterPositioning", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		mustUpdate(t, db, func(tx kv.Txn) error {
			for i := 0; i < 1200; i++ { // more than one chunk of a chunked engine
				tx.Set([]byte(fmt.Sprintf("k%05d", i*2)), []byte("v"))
			}
			return nil
		})
		err := db.View(context.Background(), func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{LowerBound: []byte("k00100"), UpperBound: []byte("k02000")})
			if err != nil {
				return err
			}
			defer it.Close()
			for _, step := range []struct{ seek, want string }{
				{"", "k00100"}, {"k00101", "k00102"}, {"k00500", "k00500"}, {"k00001", "k00100"},
				{"k01777", "k01778"}, {"k01500", "k01500"}, {"k01999", ""}, {"k00300", "k00300"},
			} {
				var ok bool
				if step.seek == "" {
					ok = it.First()
				} else {
					ok = it.SeekGE([]byte(step.seek))
				}
				got := ""
				if ok {
					got = string(it.Key())
				}
				if got != step.want {
					return fmt.Errorf("seek %q: got %q, want %q", step.seek, got, step.want)
				}
			}
			if !it.Next() || string(it.Key()) != "k00302" {
				return fmt.Errorf("Next after seek: %q", it.Key())
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("DeleteRange", func(t *testing.T) {
		db := open(t)
		defer db.Close()
		mustUpdate(t, db, func(tx kv.Txn) error {
			for _, k := range []string{"a", "b1", "b2", "c"} {
				tx.Set([]byte(k), []byte("v"))
			}
			return nil
		})
		if err := db.DeleteRange(ctx, []byte("b"), []byte("c")); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(scan(t, db, kv.IterOptions{}, nil)); got != "[a c]" {
			t.Fatalf("after DeleteRange: %v", got)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		db := open(t)
		db.Close()
		if err := db.Update(ctx, func(kv.Txn) error { return nil }); !errors.Is(err, kv.ErrClosed) {
			t.Fatalf("Update after Close = %v, want ErrClosed", err)
		}
	})
	t.Run("RandomModel", func(t *testing.T) {
		seed := *seedFlag
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())
		}
		t.Logf("seed %d (rerun with -kvtest.seed=%d)", seed, seed)
		rng := rand.New(rand.NewPCG(seed, seed))
		db := open(t)
		defer db.Close()
		model := map[string]string{}
		key := func() []byte {
			n := 1 + rng.IntN(3)
			b := make([]byte, n)
			for i := range b {
				b[i] = "ab\x00\xff"[rng.IntN(4)]
			}
			return b
		}
		for step := 0; step < 400; step++ {
			ops := 1 + rng.IntN(5)
			fail := rng.IntN(8) == 0
			pending := map[string]*string{}
			err := db.Update(ctx, func(tx kv.Txn) error {
				for i := 0; i < ops; i++ {
					k := key()
					if rng.IntN(3) == 0 {
						tx.Delete(k)
						pending[string(k)] = nil
					} else {
						v := fmt.Sprint(step, i)
						tx.Set(k, []byte(v))
						pending[string(k)] = &v
					}
				}
				if fail {
					return errors.New("abort")
				}
				return nil
			})
			if fail != (err != nil) {
				t.Fatalf("step %d: Update err = %v, fail = %v", step, err, fail)
			}
			if !fail {
				for k, v := range pending {
					if v == nil {
						delete(model, k)
					} else {
						model[k] = *v
					}
				}
			}
			if step%20 == 0 || step == 399 {
				checkModel(t, db, model)
			}
		}
	})
	runOptional(t, open)
}

func checkModel(t *testing.T, db kv.DB, model map[string]string) {
	t.Helper()
	var want []string
	for k := range model {
		want = append(want, k)
	}
	sort.Strings(want)
	var got []string
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		var prev []byte
		for ok := it.First(); ok; ok = it.Next() {
			if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
				return fmt.Errorf("keys out of order: %q then %q", prev, it.Key())
			}
			prev = bytes.Clone(it.Key())
			got = append(got, string(it.Key()))
			if string(it.Value()) != model[string(it.Key())] {
				return fmt.Errorf("value of %q = %q, want %q", it.Key(), it.Value(), model[string(it.Key())])
			}
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("keys = %q, want %q", got, want)
	}
}

func mustUpdate(t *testing.T, db kv.DB, fn func(kv.Txn) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, db kv.DB, k string) string {
	t.Helper()
	var out string
	err := db.View(context.Background(), func(r kv.Reader) error {
		v, err := r.Get([]byte(k))
		out = string(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scan(t *testing.T, db kv.DB, o kv.IterOptions, seek []byte) []string {
	t.Helper()
	var out []string
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(o)
		if err != nil {
			return err
		}
		defer it.Close()
		ok := it.First()
		if seek != nil {
			ok = it.SeekGE(seek)
		}
		for ; ok; ok = it.Next() {
			out = append(out, string(it.Key()))
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Count counts db's keys in [lower, upper) (nil bounds are open).
func Count(t testing.TB, db kv.DB, lower, upper []byte) int {
	t.Helper()
	n := 0
	err := db.View(context.Background(), func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
