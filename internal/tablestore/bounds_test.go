package tablestore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// missingTableOps runs every per-table store operation against a table
// that does not exist, and checks each fails as the service says.
func missingTableOps(t *testing.T, s *tablestore.Store, name string) {
	t.Helper()
	e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
	want := func(op string, err error, code partita.Code) {
		t.Helper()
		if got := partita.ErrorCode(err); got != code {
			t.Fatalf("%s on missing table: code %q (%v), want %q", op, got, err, code)
		}
	}
	_, err := s.GetEntity(ctx, "acct", name, e.Key())
	want("GetEntity", err, partita.CodeTableNotFound)
	_, err = s.Write(ctx, "acct", name, partita.Op{Kind: partita.OpInsert, Entity: e})
	want("Write", err, partita.CodeTableNotFound)
	_, err = s.WriteBatch(ctx, "acct", name, []partita.Op{{Kind: partita.OpInsert, Entity: e}})
	want("WriteBatch", err, partita.CodeTableNotFound)
	_, err = s.QueryEntities(ctx, "acct", name, partita.Query{}, func(*partita.Entity) error { return nil })
	want("QueryEntities", err, partita.CodeTableNotFound)
	want("SetTableACL", s.SetTableACL(ctx, "acct", name, []byte("x")), partita.CodeTableNotFound)
	_, err = s.GetTableACL(ctx, "acct", name)
	want("GetTableACL", err, partita.CodeTableNotFound)
	want("DeleteTable", s.DeleteTable(ctx, "acct", name), partita.CodeResourceNotFound)
}

func wantEmptyMaps(t *testing.T, s *tablestore.Store, after string) {
	t.Helper()
	if locks, cache, hints := tablestore.MapSizes(s); locks+cache+hints != 0 {
		t.Fatalf("after %s: %d table locks, %d cache entries, %d hints; want none", after, locks, cache, hints)
	}
}

// TestStore_MapsBoundedByLiveTables: requests for tables that do not exist,
// under any number of distinct (long) names, leave nothing behind in the
// store's per-table maps, and a dropped table's entries go with it. Table
// names come from clients; a map keyed by them must not grow with them.
func TestStore_MapsBoundedByLiveTables(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			db := memkv.New()
			s, err := tablestore.Open(ctx, db, tablestore.Options{Shared: shared})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			long := strings.Repeat("x", 2000)
			for i := 0; i < 500; i++ {
				missingTableOps(t, s, fmt.Sprintf("t%d%s", i, long))
			}
			wantEmptyMaps(t, s, "requests for 500 missing tables")

			// A live table may have entries; once dropped, it has none.
			for i := 0; i < 20; i++ {
				name := fmt.Sprintf("live%d", i)
				if _, err := s.CreateTable(ctx, "acct", name); err != nil {
					t.Fatal(err)
				}
				e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
				if _, err := s.Write(ctx, "acct", name, partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.GetEntity(ctx, "acct", name, e.Key()); err != nil {
					t.Fatal(err)
				}
				if err := s.DeleteTable(ctx, "acct", name); err != nil {
					t.Fatal(err)
				}
			}
			wantEmptyMaps(t, s, "creating, using and dropping 20 tables")
		})
	}
}

// TestStore_SharedHintDroppedWithTable: on a shared store, a front end
// forgets its hint of a table that another front end dropped as soon as a
// request finds it missing.
func TestStore_SharedHintDroppedWithTable(t *testing.T) {
	a, b := twoFrontEnds(t)
	if _, err := a.CreateTable(ctx, "acct", "gone"); err != nil {
		t.Fatal(err)
	}
	e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
	if _, err := a.Write(ctx, "acct", "gone", partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
		t.Fatal(err)
	}
	if _, _, hints := tablestore.MapSizes(a); hints != 1 {
		t.Fatalf("front end a has %d hints after using a table, want 1", hints)
	}
	if err := b.DeleteTable(ctx, "acct", "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetEntity(ctx, "acct", "gone", e.Key()); partita.ErrorCode(err) != partita.CodeTableNotFound {
		t.Fatalf("GetEntity after another front end dropped the table: %v, want TableNotFound", err)
	}
	wantEmptyMaps(t, a, "a request found the table dropped")
}

// TestStore_WriteBatchEntityGroupRules: the store itself refuses a batch
// whose operations span two partitions or name one entity twice, with the
// service's batch error at the offending index, and writes nothing. Its
// partition lock and its read of current values rely on both rules.
func TestStore_WriteBatchEntityGroupRules(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		if _, err := s.CreateTable(ctx, "acct", "grp"); err != nil {
			t.Fatal(err)
		}
		ins := func(pk, rk string) partita.Op {
			return partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: pk, RowKey: rk}}
		}
		for _, tt := range []struct {
			name  string
			ops   []partita.Op
			index int
			code  partita.Code
		}{
			{"two partitions", []partita.Op{ins("p", "a"), ins("p", "b"), ins("q", "c")}, 2, partita.CodeCommandsInBatchActOnDifferentPartitions},
			{"same key twice", []partita.Op{ins("p", "a"), ins("p", "a")}, 1, partita.CodeInvalidDuplicateRow},
			{"same key, insert then delete", []partita.Op{ins("p", "a"), {Kind: partita.OpDelete, Entity: &partita.Entity{PartitionKey: "p", RowKey: "a"}, If: partita.Condition{Kind: partita.IfExists}}}, 1, partita.CodeInvalidDuplicateRow},
		} {
			_, err := s.WriteBatch(ctx, "acct", "grp", tt.ops)
			var be *partita.BatchError
			if !errors.As(err, &be) || be.Index != tt.index || partita.ErrorCode(be.Err) != tt.code {
				t.Fatalf("%s: WriteBatch = %v, want *BatchError at %d with %s", tt.name, err, tt.index, tt.code)
			}
		}
		n := 0
		if _, err := s.QueryEntities(ctx, "acct", "grp", partita.Query{}, func(*partita.Entity) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("refused batches wrote %d entities, want none", n)
		}
	})
}

// TestStore_SharedHintsBounded: tables another front end drops are never
// named again here, so nothing removes their hints one by one; the hints
// stay bounded all the same.
func TestStore_SharedHintsBounded(t *testing.T) {
	a, b := twoFrontEnds(t)
	e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
	for i := 0; i < tablestore.MaxHints+100; i++ {
		name := fmt.Sprintf("tbl%d", i)
		if _, err := a.CreateTable(ctx, "acct", name); err != nil {
			t.Fatal(err)
		}
		if _, err := a.GetEntity(ctx, "acct", name, e.Key()); partita.ErrorCode(err) != partita.CodeResourceNotFound {
			t.Fatalf("GetEntity: %v", err)
		}
		if err := b.DeleteTable(ctx, "acct", name); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, hints := tablestore.MapSizes(a); hints > tablestore.MaxHints {
		t.Fatalf("%d hints of tables dropped elsewhere, want at most %d", hints, tablestore.MaxHints)
	}
}

// twoFrontEnds opens two shared-mode Stores over one memkv database, as two
// front ends over one PostgreSQL database would be; both close at the end
// of the test.
func twoFrontEnds(t *testing.T) (a, b *tablestore.Store) {
	t.Helper()
	db := memkv.New()
	for _, s := range []**tablestore.Store{&a, &b} {
		st, err := tablestore.Open(ctx, db, tablestore.Options{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		*s = st
	}
	return a, b
}
