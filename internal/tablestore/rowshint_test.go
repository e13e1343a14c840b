package tablestore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// hintDB records the Rows of every iterator made through it.
type hintDB struct {
	kv.DB
	mu   sync.Mutex
	rows []int
}

type hintReader struct {
	kv.Reader
	db *hintDB
}

func (r hintReader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	r.db.mu.Lock()
	r.db.rows = append(r.db.rows, o.Rows)
	r.db.mu.Unlock()
	return r.Reader.NewIter(o)
}

func (d *hintDB) View(ctx context.Context, fn func(kv.Reader) error) error {
	return d.DB.View(ctx, func(r kv.Reader) error { return fn(hintReader{r, d}) })
}

// TestQueryTellsTheEngineItsRows: a page of $top=n asks the engine for
// about n+1 rows (kv.IterOptions.Rows), so PostgreSQL's chunks stop
// there (a $top=10 page read 508 rows); a page of the full size says
// nothing, and fetches as before.
func TestQueryTellsTheEngineItsRows(t *testing.T) {
	db := &hintDB{DB: memkv.New()}
	s, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "a", "hint"); err != nil {
		t.Fatal(err)
	}
	var ops []partita.Op
	for i := 0; i < 50; i++ {
		ops = append(ops, partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i)}})
	}
	if _, err := s.WriteBatch(ctx, "a", "hint", ops); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ top, want int }{{10, 11}, {1, 2}, {0, 0}, {partita.MaxPageSize, 0}} {
		db.mu.Lock()
		db.rows = nil
		db.mu.Unlock()
		if _, err := s.QueryEntities(ctx, "a", "hint", partita.Query{Top: tc.top}, func(*partita.Entity) error { return nil }); err != nil {
			t.Fatal(err)
		}
		db.mu.Lock()
		got := db.rows
		db.mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != tc.want {
			t.Errorf("$top=%d: iterators made with Rows %v, want %d", tc.top, got, tc.want)
		}
	}
}
