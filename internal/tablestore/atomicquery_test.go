package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
	"github.com/partita/partita/odata"
)

// betweenRanges wraps an engine so that a query's move from one key range
// to the next (a second iterator, or the first one's new bounds) runs
// hook first, once: a write that commits exactly there.
type betweenRanges struct {
	kv.DB
	hook func()
}

func (b *betweenRanges) fire() {
	if h := b.hook; h != nil {
		b.hook = nil
		h()
	}
}

func (b *betweenRanges) View(c context.Context, fn func(kv.Reader) error) error {
	return b.DB.View(c, func(r kv.Reader) error { return fn(&rangesReader{Reader: r, b: b}) })
}

type rangesReader struct {
	kv.Reader
	b     *betweenRanges
	iters int
}

func (r *rangesReader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	if r.iters++; r.iters > 1 {
		r.b.fire()
	}
	it, err := r.Reader.NewIter(o)
	if err != nil {
		return nil, err
	}
	if _, ok := it.(kv.Rebounder); ok {
		return &reboundIter{Iterator: it, b: r.b}, nil
	}
	return it, nil
}

type reboundIter struct {
	kv.Iterator
	b *betweenRanges
}

func (it *reboundIter) SetBounds(lower, upper []byte) {
	it.b.fire()
	it.Iterator.(kv.Rebounder).SetBounds(lower, upper)
}

// TestQueryRangesSeeBatchWhole: a query whose filter plans into several
// key ranges, with a batch committed while it goes from one range to the
// next, returns the batch's entities all from before it or all from after
// it. With an iterator per range on Pebble, the first range came from
// before and the second from after: half of a batch in one page.
func TestQueryRangesSeeBatchWhole(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // before the directory goes
	wrapped := &betweenRanges{DB: db}
	s, err := tablestore.Open(ctx, wrapped, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "acct", "atomic"); err != nil {
		t.Fatal(err)
	}
	batch := func(v int32) {
		t.Helper()
		var ops []partita.Op
		for _, rk := range []string{"r000", "r050", "r099"} {
			e := &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: "V", Value: edm.Int32Value(v)}}}
			ops = append(ops, partita.Op{Kind: partita.OpInsertOrReplace, Entity: e})
		}
		if _, err := s.WriteBatch(ctx, "acct", "atomic", ops); err != nil {
			t.Fatal(err)
		}
	}
	batch(1)
	f, err := odata.Parse("PartitionKey eq 'p' and (RowKey eq 'r000' or RowKey eq 'r099')")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(odata.PlanQuery(f).Ranges); n != 2 {
		t.Fatalf("the filter plans into %d ranges, want 2", n)
	}
	wrapped.hook = func() { batch(2) }
	var got []string
	if _, err := s.QueryEntities(ctx, "acct", "atomic", partita.Query{Filter: f}, func(e *partita.Entity) error {
		v, _ := e.Get("V")
		got = append(got, fmt.Sprintf("%s=%d", e.RowKey, v.Int))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if wrapped.hook != nil {
		t.Fatal("the query went from range to range without the hook: the test does not test what it says")
	}
	if len(got) != 2 || got[0][len("r000="):] != got[1][len("r099="):] {
		t.Errorf("entities of one batch from two states: %v", got)
	}
}

// keyTooLargeAtCommit fails every commit as PostgreSQL does for a key its
// btree cannot index: after the transaction ran, without naming the key.
type keyTooLargeAtCommit struct{ kv.DB }

func (k keyTooLargeAtCommit) Update(c context.Context, fn func(kv.Txn) error) error {
	errCommit := fmt.Errorf("pgkv: commit: %w", kv.ErrKeyTooLarge)
	err := k.DB.Update(c, func(tx kv.Txn) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errCommit // rolls back: nothing of it is written
	})
	return err
}

// TestBatchKeyTooLargeNamesAnOperation: a batch whose commit the engine
// refuses for a key too long to index fails as a BatchError naming the
// operation with the longest keys (a changeset response with its index),
// not as a bare error.
func TestBatchKeyTooLargeNamesAnOperation(t *testing.T) {
	db := memkv.New()
	s, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, "acct", "keys"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = tablestore.Open(ctx, keyTooLargeAtCommit{db}, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("\u4e00", 400)
	var ops []partita.Op
	for _, rk := range []string{"a", long, "b"} {
		ops = append(ops, partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "p", RowKey: rk}})
	}
	_, err = s.WriteBatch(ctx, "acct", "keys", ops)
	var be *partita.BatchError
	if !errors.As(err, &be) || be.Index != 1 || partita.ErrorCode(be.Err) != partita.CodePropertyValueTooLarge {
		t.Fatalf("err = %#v, want a BatchError at index 1 with PropertyValueTooLarge", err)
	}
}
