package tablestore_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
	"github.com/partita/partita/internal/tablestore"
	"github.com/partita/partita/odata"
)

var seedFlag = flag.Uint64("store.seed", 0, "seed of the randomized store tests (0: time-based)")

var ctx = context.Background()

type opener func(t *testing.T) (kv.DB, tablestore.Options)

func engines(t *testing.T, fn func(t *testing.T, open opener)) {
	t.Run("mem", func(t *testing.T) {
		fn(t, func(t *testing.T) (kv.DB, tablestore.Options) { return memkv.New(), tablestore.Options{} })
	})
	// The shared-store paths (conditional writes, one-round-trip point
	// reads) on memkv, so they run without PostgreSQL.
	t.Run("mem-shared", func(t *testing.T) {
		fn(t, func(t *testing.T) (kv.DB, tablestore.Options) { return memkv.New(), tablestore.Options{Shared: true} })
	})
	// A row cache small enough to evict all the time.
	t.Run("mem-rowcache", func(t *testing.T) {
		fn(t, func(t *testing.T) (kv.DB, tablestore.Options) {
			return memkv.New(), tablestore.Options{RowCacheBytes: 1 << 20}
		})
	})
	t.Run("pebble", func(t *testing.T) {
		fn(t, func(t *testing.T) (kv.DB, tablestore.Options) {
			db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			return db, tablestore.Options{RowCacheBytes: 32 << 20} // as partita serve
		})
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, func(t *testing.T) (kv.DB, tablestore.Options) {
			db, err := pgkv.Open(ctx, pgtest.NewDatabase(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			return db, tablestore.Options{Shared: true}
		})
	})
}

// queryAll runs q over table to the end, following continuations, and
// gives fn every entity.
func queryAll(t *testing.T, s *tablestore.Store, table string, q partita.Query, fn func(*partita.Entity)) {
	t.Helper()
	for pages := 0; ; pages++ {
		info, err := s.QueryEntities(ctx, "acct", table, q, func(e *partita.Entity) error {
			fn(e)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if info.Next == nil {
			return
		}
		q.Next = info.Next
		if pages > 100_000 {
			t.Fatalf("%v: continuation does not advance", q.Filter)
		}
	}
}

func mustOpen(t *testing.T, open opener) *tablestore.Store {
	t.Helper()
	db, o := open(t)
	s, err := tablestore.Open(ctx, db, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); db.Close() })
	return s
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -store.seed=%d)", s, s)
	return s
}

// TestStore_QueryOracle: random entities and random filters; every query,
// followed page by page through its continuations with a small $top, must
// return exactly the entities a full scan plus evaluation selects, in
// (PartitionKey, RowKey) UTF-16 order.
func TestStore_QueryOracle(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		rng := rand.New(rand.NewPCG(seed(t), 3))
		if _, err := s.CreateTable(ctx, "acct", "oracle"); err != nil {
			t.Fatal(err)
		}
		keys := []string{"", "a", "aa", "ab", "b", "b'c", "z", "\ue000", "\U0001F600", "é"}
		var all []*partita.Entity
		for i := 0; i < 150; i++ {
			e := &partita.Entity{PartitionKey: keys[rng.IntN(len(keys))], RowKey: keys[rng.IntN(len(keys))] + fmt.Sprint(rng.IntN(4)),
				Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(int32(rng.IntN(10)))}}}
			if rng.IntN(3) == 0 {
				e.Properties = append(e.Properties, partita.Property{Name: "S", Value: edm.StringValue(keys[rng.IntN(len(keys))])})
			}
			if _, err := s.Write(ctx, "acct", "oracle", partita.Op{Kind: partita.OpInsertOrReplace, Entity: e}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.QueryEntities(ctx, "acct", "oracle", partita.Query{}, func(e *partita.Entity) error {
			c := *e
			c.Properties = append([]partita.Property(nil), e.Properties...)
			all = append(all, &c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(all); i++ {
			a, b := all[i-1], all[i]
			if c := edm.CompareStrings(a.PartitionKey, b.PartitionKey); c > 0 || c == 0 && edm.CompareStrings(a.RowKey, b.RowKey) >= 0 {
				t.Fatalf("full scan out of order: %v then %v", a.Key(), b.Key())
			}
		}
		lit := func() string { return "'" + keyLit(keys[rng.IntN(len(keys))]) + "'" }
		atom := func() string {
			switch rng.IntN(6) {
			case 0:
				return "PartitionKey " + []string{"eq", "ne", "lt", "le", "gt", "ge"}[rng.IntN(6)] + " " + lit()
			case 1:
				return "RowKey " + []string{"eq", "ne", "lt", "le", "gt", "ge"}[rng.IntN(6)] + " " + lit()
			case 2:
				return fmt.Sprintf("N %s %d", []string{"eq", "lt", "ge"}[rng.IntN(3)], rng.IntN(10))
			case 3:
				return "S eq " + lit()
			case 4:
				return "PartitionKey eq " + lit() + " and RowKey ge " + lit()
			default:
				return "(PartitionKey eq " + lit() + " or PartitionKey eq " + lit() + ")"
			}
		}
		for iter := 0; iter < 200; iter++ {
			f := atom()
			for rng.IntN(2) == 0 {
				f = "(" + f + ") " + []string{"and", "or"}[rng.IntN(2)] + " " + atom()
			}
			if rng.IntN(5) == 0 {
				f = "not (" + f + ")"
			}
			expr, err := odata.Parse(f)
			if err != nil {
				t.Fatalf("parse %q: %v", f, err)
			}
			var want []partita.Key
			for _, e := range all {
				if odata.Eval(expr, e.Get) {
					want = append(want, e.Key())
				}
			}
			var got []partita.Key
			q := partita.Query{Filter: expr, Top: 1 + rng.IntN(7)}
			queryAll(t, s, "oracle", q, func(e *partita.Entity) { got = append(got, e.Key()) })
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("filter %q (top %d):\n got %v\nwant %v", f, q.Top, got, want)
			}
		}
	})
}

func keyLit(s string) string {
	out := ""
	for _, r := range s {
		if r == '\'' {
			out += "''"
		} else {
			out += string(r)
		}
	}
	return out
}

// TestStore_ConcurrentPartitions: writers on different partitions and
// tables run at once (run with -race); afterwards every partition holds
// exactly what its writer acknowledged.
func TestStore_ConcurrentPartitions(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		for _, tb := range []string{"tab1", "tab2"} {
			if _, err := s.CreateTable(ctx, "acct", tb); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		const writers, per = 8, 40
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				tb := []string{"tab1", "tab2"}[w%2]
				for i := 0; i < per; i++ {
					e := &partita.Entity{PartitionKey: fmt.Sprint("p", w), RowKey: fmt.Sprintf("%03d", i)}
					if i%10 == 9 {
						ops := []partita.Op{{Kind: partita.OpInsertOrMerge, Entity: e}, {Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey + "x"}}}
						if _, err := s.WriteBatch(ctx, "acct", tb, ops); err != nil {
							t.Error(err)
						}
						continue
					}
					if _, err := s.Write(ctx, "acct", tb, partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
						t.Error(err)
					}
				}
			}(w)
		}
		wg.Wait()
		for _, tb := range []string{"tab1", "tab2"} {
			counts := map[string]int{}
			if _, err := s.QueryEntities(ctx, "acct", tb, partita.Query{}, func(e *partita.Entity) error {
				counts[e.PartitionKey]++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// The page holds at most 1000; 4 partitions x 44 fit.
			var parts []string
			for p, n := range counts {
				parts = append(parts, p)
				if n != per+per/10 {
					t.Errorf("%s/%s: %d entities, want %d", tb, p, n, per+per/10)
				}
			}
			sort.Strings(parts)
			if len(parts) != writers/2 {
				t.Errorf("%s: partitions %v", tb, parts)
			}
		}
	})
}

// TestStore_DeleteTableIsolation: dropping a table while writers hit it
// leaves no entity behind once the name is re-created.
func TestStore_DeleteTableIsolation(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		if _, err := s.CreateTable(ctx, "acct", "drop"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					_, err := s.Write(ctx, "acct", "drop", partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: fmt.Sprint(w), RowKey: fmt.Sprint(i)}})
					if err != nil && partita.ErrorCode(err) != partita.CodeTableNotFound {
						t.Error(err)
						return
					}
				}
			}(w)
		}
		time.Sleep(50 * time.Millisecond)
		if err := s.DeleteTable(ctx, "acct", "drop"); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		for i := 0; ; i++ {
			_, err := s.CreateTable(ctx, "acct", "drop")
			if err == nil {
				break
			}
			if partita.ErrorCode(err) != partita.CodeTableBeingDeleted || i > 500 {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		n := 0
		if _, err := s.QueryEntities(ctx, "acct", "drop", partita.Query{}, func(*partita.Entity) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("re-created table holds %d entities of the dropped one", n)
		}
	})
}

// TestStore_ETagStrictlyIncreases: writes to one entity in a tight loop
// get strictly increasing Timestamps even within one clock tick.
func TestStore_ETagStrictlyIncreases(t *testing.T) {
	frozen := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := tablestore.Open(ctx, memkv.New(), tablestore.Options{Now: func() time.Time { return frozen }})
	if err != nil {
		t.Fatal(err)
	}
	s.CreateTable(ctx, "a", "etags")
	var last int64
	for i := 0; i < 100; i++ {
		r, err := s.Write(ctx, "a", "etags", partita.Op{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Timestamp <= last {
			t.Fatalf("write %d: Timestamp %d not after %d", i, r.Timestamp, last)
		}
		last = r.Timestamp
	}
}

// TestStore_PointReadAfterRecreate: point reads (one round trip on a
// shared store, keyed by the table id last seen) never return an entity of
// a dropped table after the name is re-created.
func TestStore_PointReadAfterRecreate(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		put := func(rk string, n int32) {
			e := &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(n)}}}
			if _, err := s.Write(ctx, "acct", "again", partita.Op{Kind: partita.OpInsertOrReplace, Entity: e}); err != nil {
				t.Fatal(err)
			}
		}
		get := func(rk string) (int32, partita.Code) {
			e, err := s.GetEntity(ctx, "acct", "again", partita.Key{PartitionKey: "p", RowKey: rk})
			if err != nil {
				return 0, partita.ErrorCode(err)
			}
			v, _ := e.Get("N")
			return int32(v.Int), ""
		}
		if _, err := s.CreateTable(ctx, "acct", "again"); err != nil {
			t.Fatal(err)
		}
		put("shared", 1)
		put("old", 1)
		for i := 0; i < 2; i++ { // the second read takes the one-round-trip path
			if n, code := get("shared"); n != 1 || code != "" {
				t.Fatalf("before drop: %d %s", n, code)
			}
		}
		if err := s.DeleteTable(ctx, "acct", "again"); err != nil {
			t.Fatal(err)
		}
		if _, code := get("shared"); code != partita.CodeTableNotFound {
			t.Fatalf("after drop: %s, want TableNotFound", code)
		}
		for i := 0; ; i++ {
			if _, err := s.CreateTable(ctx, "acct", "again"); err == nil {
				break
			} else if partita.ErrorCode(err) != partita.CodeTableBeingDeleted || i > 500 {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		put("shared", 2)
		for i := 0; i < 2; i++ {
			if n, code := get("shared"); n != 2 || code != "" {
				t.Fatalf("after re-create: %d %s, want the new entity", n, code)
			}
			if _, code := get("old"); code != partita.CodeResourceNotFound {
				t.Fatalf("entity of the dropped table: %s, want ResourceNotFound", code)
			}
		}
	})
}

// TestStore_SharedTimestampsIncrease: on a shared store two front ends
// (two Stores over one database) may have clocks an hour apart; every write
// kind, blind insert-or-replace included, still gives the entity a
// Timestamp after its current one, so ETags never repeat or go back.
func TestStore_SharedTimestampsIncrease(t *testing.T) {
	db := memkv.New()
	now := time.Now()
	ahead, err := tablestore.Open(ctx, db, tablestore.Options{Shared: true, Now: func() time.Time { return now.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	behind, err := tablestore.Open(ctx, db, tablestore.Options{Shared: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ahead.CreateTable(ctx, "a", "clocks"); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i, kind := range []partita.OpKind{partita.OpInsertOrReplace, partita.OpInsertOrReplace, partita.OpInsertOrMerge, partita.OpInsertOrReplace} {
		s := ahead
		if i%2 == 1 {
			s = behind
		}
		r, err := s.Write(ctx, "a", "clocks", partita.Op{Kind: kind, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Timestamp <= last {
			t.Fatalf("write %d (%v): Timestamp %d not after the current %d", i, kind, r.Timestamp, last)
		}
		last = r.Timestamp
	}
}

// condDB is an engine with one-statement conditional writes.
type condDB interface {
	kv.DB
	kv.CondWriter
}

// countingDB counts the transactions and one-statement conditional writes
// an engine is asked for.
type countingDB struct {
	condDB
	updates, conds int
	mu             sync.Mutex
}

func (c *countingDB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	return c.condDB.Update(ctx, fn)
}

func (c *countingDB) CondWrite(ctx context.Context, w kv.CondWrite) (bool, error) {
	c.mu.Lock()
	c.conds++
	c.mu.Unlock()
	return c.condDB.CondWrite(ctx, w)
}

func (c *countingDB) take() (updates, conds int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, k := c.updates, c.conds
	c.updates, c.conds = 0, 0
	return u, k
}

// TestStore_SharedConditionalWritesOneStatement: on a shared store (memkv,
// and PostgreSQL when available) an insert, a replace with an ETag and
// deletes are one statement each once the front end has seen the table,
// with the service's answers when a condition fails (from the transaction
// that then runs); and a front end whose knowledge of the table is stale
// (another front end dropped and re-created it) never writes into the old
// table.
func TestStore_SharedConditionalWritesOneStatement(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		db := memkv.New()
		testSharedConditionalWrites(t, func() condDB { return db })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		testSharedConditionalWrites(t, func() condDB {
			db, err := pgkv.Open(ctx, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		})
	})
}

// testSharedConditionalWrites runs TestStore_SharedConditionalWritesOneStatement
// with two front ends over the engines connect returns (one database).
func testSharedConditionalWrites(t *testing.T, connect func() condDB) {
	open := func() (*tablestore.Store, *countingDB) {
		c := &countingDB{condDB: connect()}
		s, err := tablestore.Open(ctx, c, tablestore.Options{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, c
	}
	a, c := open()
	b, _ := open()
	if _, err := a.CreateTable(ctx, "acct", "condw"); err != nil {
		t.Fatal(err)
	}
	ent := func(rk string, v int32) *partita.Entity {
		return &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: "V", Value: edm.Int32Value(v)}}}
	}
	write := func(s *tablestore.Store, op partita.Op) (partita.Result, error) {
		return s.Write(ctx, "acct", "condw", op)
	}
	// The first write learns the table (a transaction).
	r1, err := write(a, partita.Op{Kind: partita.OpInsert, Entity: ent("r1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.take()
	steps := []struct {
		name    string
		op      partita.Op
		code    partita.Code // "" for success
		updates int          // transactions expected
	}{
		{"insert", partita.Op{Kind: partita.OpInsert, Entity: ent("r2", 2)}, "", 0},
		{"insert existing", partita.Op{Kind: partita.OpInsert, Entity: ent("r1", 9)}, partita.CodeEntityAlreadyExists, 1},
		{"replace, right ETag", partita.Op{Kind: partita.OpReplace, Entity: ent("r1", 3), If: partita.Condition{Kind: partita.IfETag, Ticks: r1.Timestamp}}, "", 0},
		{"replace, stale ETag", partita.Op{Kind: partita.OpReplace, Entity: ent("r1", 4), If: partita.Condition{Kind: partita.IfETag, Ticks: r1.Timestamp}}, partita.CodeUpdateConditionNotSatisfied, 1},
		{"delete, stale ETag", partita.Op{Kind: partita.OpDelete, Entity: ent("r1", 0), If: partita.Condition{Kind: partita.IfETag, Ticks: r1.Timestamp}}, partita.CodeUpdateConditionNotSatisfied, 1},
		{"delete *", partita.Op{Kind: partita.OpDelete, Entity: ent("r2", 0), If: partita.Condition{Kind: partita.IfExists}}, "", 0},
		{"delete * absent", partita.Op{Kind: partita.OpDelete, Entity: ent("r2", 0), If: partita.Condition{Kind: partita.IfExists}}, partita.CodeResourceNotFound, 1},
		{"replace absent", partita.Op{Kind: partita.OpReplace, Entity: ent("r9", 0), If: partita.Condition{Kind: partita.IfETag, Ticks: r1.Timestamp}}, partita.CodeResourceNotFound, 1},
	}
	for _, st := range steps {
		_, err := write(a, st.op)
		if got := partita.ErrorCode(err); (err == nil) != (st.code == "") || (err != nil && got != st.code) {
			t.Fatalf("%s: %v, want code %q", st.name, err, st.code)
		}
		if u, k := c.take(); u != st.updates || k != 1 {
			t.Errorf("%s: %d transactions and %d conditional statements, want %d and 1", st.name, u, k, st.updates)
		}
	}
	got, err := a.GetEntity(ctx, "acct", "condw", partita.Key{PartitionKey: "p", RowKey: "r1"})
	if err != nil || got.Properties[0].Value.Int != 3 {
		t.Fatalf("r1 after the steps: %+v, %v (want V=3)", got, err)
	}

	// Front end b drops and re-creates the table; a still holds the old
	// record. a's insert must land in the new table, not the old one.
	if err := b.DeleteTable(ctx, "acct", "condw"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err = b.CreateTable(ctx, "acct", "condw"); err == nil {
			break
		}
		if partita.ErrorCode(err) != partita.CodeTableBeingDeleted || i > 500 {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := write(a, partita.Op{Kind: partita.OpInsert, Entity: ent("r1", 5)}); err != nil {
		t.Fatalf("insert after re-creation: %v", err)
	}
	got, err = b.GetEntity(ctx, "acct", "condw", partita.Key{PartitionKey: "p", RowKey: "r1"})
	if err != nil || got.Properties[0].Value.Int != 5 {
		t.Fatalf("b reads %+v, %v; want the entity a inserted into the new table", got, err)
	}
	if err := b.DeleteTable(ctx, "acct", "condw"); err != nil {
		t.Fatal(err)
	}
	if _, err := write(a, partita.Op{Kind: partita.OpInsert, Entity: ent("r3", 1)}); partita.ErrorCode(err) != partita.CodeTableNotFound && partita.ErrorCode(err) != partita.CodeTableBeingDeleted {
		t.Fatalf("insert into a dropped table: %v, want TableNotFound", err)
	}
}

// TestStore_MergeLimits: a merge whose result would exceed the property
// count or the entity size fails with the service's code and changes
// nothing; one that stays within them succeeds. Merge and insert-or-merge,
// on every engine.
func TestStore_MergeLimits(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		if _, err := s.CreateTable(ctx, "a", "limits"); err != nil {
			t.Fatal(err)
		}
		props := func(prefix string, n int, v func(int) edm.Value) []partita.Property {
			var ps []partita.Property
			for i := 0; i < n; i++ {
				ps = append(ps, partita.Property{Name: fmt.Sprintf("%s%03d", prefix, i), Value: v(i)})
			}
			return ps
		}
		small := func(i int) edm.Value { return edm.Int32Value(int32(i)) }
		big := func(int) edm.Value { return edm.StringValue(strings.Repeat("y", 32768)) }
		write := func(kind partita.OpKind, rk string, ps []partita.Property) error {
			_, err := s.Write(ctx, "a", "limits", partita.Op{Kind: kind, Entity: &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: ps}})
			return err
		}
		count := func(rk string) int {
			e, err := s.GetEntity(ctx, "a", "limits", partita.Key{PartitionKey: "p", RowKey: rk})
			if err != nil {
				t.Fatal(err)
			}
			return len(e.Properties)
		}
		for _, kind := range []partita.OpKind{partita.OpMerge, partita.OpInsertOrMerge} {
			rk := "many" + kind.String()
			if err := write(partita.OpInsert, rk, props("A", 200, small)); err != nil {
				t.Fatal(err)
			}
			// 200 + 53 new properties (and one replaced) is 253: too many.
			over := append(props("B", 53, small), partita.Property{Name: "A000", Value: edm.Int32Value(-1)})
			if err := write(kind, rk, over); partita.ErrorCode(err) != partita.CodeTooManyProperties {
				t.Errorf("%s to 253 properties: %v, want TooManyProperties", kind, err)
			}
			if n := count(rk); n != 200 {
				t.Errorf("%s: failed merge left %d properties, want 200", kind, n)
			}
			if err := write(kind, rk, over[1:]); err != nil {
				t.Errorf("%s to 252 properties: %v", kind, err)
			}

			rk = "big" + kind.String()
			// 15 strings of 32K UTF-16 units fit in 1 MiB; a 16th does not.
			if err := write(partita.OpInsert, rk, props("S", 15, big)); err != nil {
				t.Fatal(err)
			}
			if err := write(kind, rk, props("T", 1, big)); partita.ErrorCode(err) != partita.CodeEntityTooLarge {
				t.Errorf("%s past 1 MiB: %v, want EntityTooLarge", kind, err)
			}
			if n := count(rk); n != 15 {
				t.Errorf("%s: failed merge left %d properties, want 15", kind, n)
			}
			// Replacing a property of the same size keeps it within.
			if err := write(kind, rk, props("S", 1, big)); err != nil {
				t.Errorf("%s replacing a big property: %v", kind, err)
			}
		}
	})
}

// TestStore_WriteReportsTimestampInResult: a write's one way back is its
// Result. The Op's entity is left as it was (its Timestamp stays zero),
// and the Timestamp in the Result is the stored one, for every kind of
// write, alone and in a batch.
func TestStore_WriteReportsTimestampInResult(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		if _, err := s.CreateTable(ctx, "a", "ways"); err != nil {
			t.Fatal(err)
		}
		check := func(what string, e *partita.Entity, r partita.Result) {
			t.Helper()
			if e.Timestamp != 0 {
				t.Errorf("%s: the op's entity got Timestamp %d", what, e.Timestamp)
			}
			got, err := s.GetEntity(ctx, "a", "ways", e.Key())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if r.Timestamp == 0 || got.Timestamp != r.Timestamp || r.ETag() != got.ETag() {
				t.Errorf("%s: result Timestamp %d, stored %d", what, r.Timestamp, got.Timestamp)
			}
		}
		var last partita.Result
		for i, kind := range []partita.OpKind{partita.OpInsert, partita.OpInsertOrReplace, partita.OpInsertOrMerge,
			partita.OpReplace, partita.OpMerge, partita.OpReplace} {
			e := &partita.Entity{PartitionKey: "p", RowKey: "r", Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(int32(i))}}}
			op := partita.Op{Kind: kind, Entity: e}
			if i == 5 {
				op.If = partita.Condition{Kind: partita.IfETag, Ticks: last.Timestamp}
			}
			r, err := s.Write(ctx, "a", "ways", op)
			if err != nil {
				t.Fatalf("%v: %v", kind, err)
			}
			check(kind.String(), e, r)
			last = r
		}
		ops := []partita.Op{
			{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "q", RowKey: "1"}},
			{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "q", RowKey: "2"}},
		}
		rs, err := s.WriteBatch(ctx, "a", "ways", ops)
		if err != nil || len(rs) != len(ops) {
			t.Fatalf("batch: %v, %d results", err, len(rs))
		}
		for i, op := range ops {
			check("batch "+op.Kind.String(), op.Entity, rs[i])
		}
	})
}

// TestStore_ScanBudgetFollowsClock: the scan budget is measured on the
// store's clock (Options.Now), like every other time the store reads: with
// a clock that leaps an hour per reading, a page stops at its first budget
// check with a continuation, however fast the scan really is.
func TestStore_ScanBudgetFollowsClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	leaping := false // from the query on: the writes' Timestamps need a clock that stays put
	leap := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if leaping {
			now = now.Add(time.Hour)
		}
		return now
	}
	s, err := tablestore.Open(ctx, memkv.New(), tablestore.Options{Now: leap, ScanTimeBudget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "a", "budget"); err != nil {
		t.Fatal(err)
	}
	var ops []partita.Op
	for i := 0; i < 600; i++ {
		ops = append(ops, partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%04d", i)}})
	}
	for i := 0; i < len(ops); i += 100 {
		if _, err := s.WriteBatch(ctx, "a", "budget", ops[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	leaping = true
	mu.Unlock()
	n := 0
	info, err := s.QueryEntities(ctx, "a", "budget", partita.Query{}, func(*partita.Entity) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if info.Next == nil || n != 255 || info.Next.RowKey != "0255" {
		t.Fatalf("got %d entities, next %+v; want the page to end after 255 at the first budget check", n, info.Next)
	}
}
