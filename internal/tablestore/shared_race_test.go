package tablestore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
	"github.com/partita/partita/internal/tablestore"
)

// pausingDB holds a transaction between its reads and its commit: once fn
// has run (it has read the catalog record and the entities, and buffered
// its writes), the first transaction after arm is called reports on read
// and waits for release. It models a front end slowed between the two
// (a GC pause, a loaded machine, a slow network to the database). It has
// no conditional writes, so every write runs as a transaction.
type pausingDB struct {
	kv.DB
	pause
}

// pause is a one-shot gate: after arm, the first call to wait reports
// on read and blocks until release is closed; other calls pass.
type pause struct {
	mu      sync.Mutex
	read    chan struct{}
	release chan struct{}
}

func (p *pause) arm() (read, release chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read, p.release = make(chan struct{}), make(chan struct{})
	return p.read, p.release
}

func (p *pause) wait() {
	p.mu.Lock()
	read, release := p.read, p.release
	p.read = nil
	p.mu.Unlock()
	if read != nil {
		close(read)
		<-release
	}
}

func (p *pausingDB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return p.DB.Update(ctx, func(tx kv.Txn) error {
		err := fn(tx)
		p.wait()
		return err
	})
}

// openPG opens the engine on dsn, as one front end does, until the test
// ends; each call is another front end with a pool of its own.
func openPG(t *testing.T, dsn string) kv.DB {
	t.Helper()
	db, err := pgkv.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// frontEnds opens two front ends over the database at dsn: a through slow
// (an engine the test pauses), b through an engine of its own, whose purge
// of a dropped table retries quickly. Both close when the test ends.
func frontEnds(t *testing.T, slow kv.DB, dsn string) (a, b *tablestore.Store) {
	t.Helper()
	a, err := tablestore.Open(ctx, slow, tablestore.Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = tablestore.Open(ctx, openPG(t, dsn), tablestore.Options{Shared: true, PurgeRetry: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestStore_SharedDropRacingSlowWriter: two front ends over one PostgreSQL
// database. A write through one of them has read the table's catalog
// record (active) and is slow to commit; meanwhile the table is dropped
// through the other, whose purge sweeps the table's rows and removes its
// catalog record. The write must then fail (TableNotFound, when run again)
// or have landed before the sweep: no row may be left under the dropped
// table's id, where nothing ever reads or removes it again (partita check
// reports such rows). Before the purge's deletes ran SERIALIZABLE, a plain
// DELETE did not take part in PostgreSQL's serializable conflict checks,
// and the slow write committed its row after the sweep.
func TestStore_SharedDropRacingSlowWriter(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	raw := openPG(t, dsn)
	// PostgreSQL's serializable checks lock index pages, not only rows:
	// in a database of a few rows, the catalog record, the ACL key and the
	// entities share one page, and a read of one conflicts with writes of
	// any other, which hides the race. Filler rows (keys the store never
	// reads) put them on pages of their own, as in any real database.
	fill(t, raw, []byte{0x02, 'z'})        // between the catalog and the entities
	fill(t, raw, []byte{0x03, 0xff, 0xff}) // between the entities and the ACLs
	slow := &pausingDB{DB: openPG(t, dsn)}
	a, b := frontEnds(t, slow, dsn)

	ent := func(pk, rk string) *partita.Entity {
		return &partita.Entity{PartitionKey: pk, RowKey: rk, Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(1)}}}
	}
	cases := []struct {
		name  string
		write func(table string) error
	}{
		{"InsertOrReplaceNew", func(table string) error {
			_, err := a.Write(ctx, "acct", table, partita.Op{Kind: partita.OpInsertOrReplace, Entity: ent("p", "new")})
			return err
		}},
		{"InsertOrMergeNew", func(table string) error {
			_, err := a.Write(ctx, "acct", table, partita.Op{Kind: partita.OpInsertOrMerge, Entity: ent("p", "new")})
			return err
		}},
		{"MergeExisting", func(table string) error {
			_, err := a.Write(ctx, "acct", table, partita.Op{Kind: partita.OpMerge, If: partita.Condition{Kind: partita.IfExists}, Entity: ent("p", "old")})
			return err
		}},
		{"ReplaceExisting", func(table string) error {
			_, err := a.Write(ctx, "acct", table, partita.Op{Kind: partita.OpReplace, If: partita.Condition{Kind: partita.IfExists}, Entity: ent("p", "old")})
			return err
		}},
		{"Batch", func(table string) error {
			_, err := a.WriteBatch(ctx, "acct", table, []partita.Op{
				{Kind: partita.OpInsert, Entity: ent("p", "new1")},
				{Kind: partita.OpInsertOrReplace, Entity: ent("p", "old")},
				{Kind: partita.OpInsert, Entity: ent("p", "new2")},
			})
			return err
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := fmt.Sprintf("race%d", i)
			if _, err := b.CreateTable(ctx, "acct", table); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write(ctx, "acct", table, partita.Op{Kind: partita.OpInsert, Entity: ent("p", "old")}); err != nil {
				t.Fatal(err)
			}
			read, release := slow.arm()
			done := make(chan error, 1)
			go func() { done <- c.write(table) }()
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				t.Fatal("the write did not reach its commit")
			}
			if err := b.DeleteTable(ctx, "acct", table); err != nil {
				t.Fatal(err)
			}
			// The drop's purge runs to its end while the write waits: the
			// catalog record goes last.
			for deadline := time.Now().Add(10 * time.Second); catalogHas(t, raw, "acct", table); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the dropped table was not purged")
				}
			}
			close(release)
			err := <-done
			var be *partita.BatchError
			if errors.As(err, &be) {
				err = be.Err
			}
			if err != nil && partita.ErrorCode(err) != partita.CodeTableNotFound {
				t.Fatalf("the slow write: %v (want success or TableNotFound)", err)
			}
			if n := orphanRows(t, raw); n != 0 {
				t.Fatalf("the slow write (err %v) left %d rows under a dropped table's id", err, n)
			}
		})
	}
}

// fill writes 2,000 rows under prefix, of 200 bytes each.
func fill(t *testing.T, db kv.DB, prefix []byte) {
	t.Helper()
	err := db.Update(ctx, func(tx kv.Txn) error {
		for i := 0; i < 2000; i++ {
			if err := tx.Set(binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(i)), make([]byte, 200)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// catalogHas reports whether the catalog holds a record (live or dropped)
// for the table, read around any store (keys.go's layout).
func catalogHas(t *testing.T, db kv.DB, account, table string) bool {
	t.Helper()
	k := append([]byte{0x01}, account...)
	k = append(append(k, 0), partita.FoldTableName(table)...)
	err := db.View(ctx, func(r kv.Reader) error { _, err := r.Get(k); return err })
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// orphanRows counts the entity rows whose table id no catalog record holds
// (keys.go's layout: 0x01 account 0x00 name → 1 state id(8) name, and
// 0x03 id(8) … for entities).
func orphanRows(t *testing.T, db kv.DB) int {
	t.Helper()
	ids := map[uint64]bool{}
	n := 0
	err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{LowerBound: []byte{0x01}, UpperBound: []byte{0x04}})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k, v := it.Key(), it.Value()
			switch {
			case k[0] == 0x01 && len(v) >= 10:
				ids[binary.BigEndian.Uint64(v[2:10])] = true
			case k[0] == 0x03 && len(k) >= 9 && k[1] != 0xff && !ids[binary.BigEndian.Uint64(k[1:9])]:
				n++
				t.Logf("orphan row %q", bytes.Clone(k))
			}
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStore_SharedWriteRacingOneStatementDelete: a write that needs the
// entity (a merge, a replace with If-Match: *, a batch) has read it through
// one front end and is slow to commit; meanwhile the entity is deleted
// through another, with the one-statement conditional delete. The write
// must then fail (ResourceNotFound when run again), never bring the
// deleted entity back: two writes conditioned on the same version (the
// delete's ETag, the merge's existence) cannot both succeed. Before, the
// transaction's upsert found no row to conflict with, and PostgreSQL's
// serializable checks leave the delete (a READ COMMITTED statement) out,
// so the merge was acknowledged and the entity re-created.
func TestStore_SharedWriteRacingOneStatementDelete(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	slow := &pausingDB{DB: openPG(t, dsn)}
	a, b := frontEnds(t, slow, dsn)
	if _, err := b.CreateTable(ctx, "acct", "race"); err != nil {
		t.Fatal(err)
	}
	ent := func(rk string) *partita.Entity {
		return &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(1)}}}
	}
	cases := []struct {
		name  string
		write func(rk string, etag int64) error
	}{
		{"MergeETag", func(rk string, etag int64) error {
			_, err := a.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpMerge, If: partita.Condition{Kind: partita.IfETag, Ticks: etag}, Entity: ent(rk)})
			return err
		}},
		{"MergeAny", func(rk string, _ int64) error {
			_, err := a.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpMerge, If: partita.Condition{Kind: partita.IfExists}, Entity: ent(rk)})
			return err
		}},
		{"ReplaceAny", func(rk string, _ int64) error {
			_, err := a.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpReplace, If: partita.Condition{Kind: partita.IfExists}, Entity: ent(rk)})
			return err
		}},
		{"BatchMerge", func(rk string, etag int64) error {
			_, err := a.WriteBatch(ctx, "acct", "race", []partita.Op{
				{Kind: partita.OpMerge, If: partita.Condition{Kind: partita.IfETag, Ticks: etag}, Entity: ent(rk)},
				{Kind: partita.OpInsertOrReplace, Entity: ent(rk + "x")},
			})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rk := c.name
			res, err := b.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpInsert, Entity: ent(rk)})
			if err != nil {
				t.Fatal(err)
			}
			read, release := slow.arm()
			done := make(chan error, 1)
			go func() { done <- c.write(rk, res.Timestamp) }()
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				t.Fatal("the write did not reach its commit")
			}
			// Through the other front end, which has seen the table: one
			// statement, conditioned on the version the slow write read.
			if _, err := b.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpDelete, If: partita.Condition{Kind: partita.IfETag, Ticks: res.Timestamp}, Entity: &partita.Entity{PartitionKey: "p", RowKey: rk}}); err != nil {
				t.Fatal(err)
			}
			close(release)
			err = <-done
			var be *partita.BatchError
			if errors.As(err, &be) {
				err = be.Err
			}
			if partita.ErrorCode(err) != partita.CodeResourceNotFound {
				t.Errorf("the slow write after the entity's delete: %v (want ResourceNotFound)", err)
			}
			if e, err := b.GetEntity(ctx, "acct", "race", partita.Key{PartitionKey: "p", RowKey: rk}); err == nil {
				t.Errorf("the deleted entity is back: %+v", e)
			}
		})
	}
}

// pausingViewDB pauses the first View after arm just before it opens an
// iterator over entities (after its catalog read).
type pausingViewDB struct {
	kv.DB
	pause
}

func (p *pausingViewDB) View(ctx context.Context, fn func(kv.Reader) error) error {
	return p.DB.View(ctx, func(r kv.Reader) error { return fn(pausingReader{r, p}) })
}

type pausingReader struct {
	kv.Reader
	p *pausingViewDB
}

func (r pausingReader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	if len(o.LowerBound) > 0 && o.LowerBound[0] == 0x03 {
		r.p.wait()
	}
	return r.Reader.NewIter(o)
}

// TestStore_SharedQueryRacingDrop: a query through one front end has found
// its table and is slow to scan it; meanwhile the table is dropped through
// another and its rows purged. The query must answer as of one moment: the
// whole table (it began before the drop) or TableNotFound, never a table
// that never was (empty here; with a purge part-way through, part of the
// table). Before, the catalog record was read by a statement of its own
// and the scan's snapshot began after it.
func TestStore_SharedQueryRacingDrop(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	raw := openPG(t, dsn)
	slow := &pausingViewDB{DB: openPG(t, dsn)}
	a, b := frontEnds(t, slow, dsn)
	if _, err := b.CreateTable(ctx, "acct", "qtable"); err != nil {
		t.Fatal(err)
	}
	const rows = 3
	for i := 0; i < rows; i++ {
		if _, err := b.Write(ctx, "acct", "qtable", partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	read, release := slow.arm()
	type answer struct {
		n   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		n := 0
		_, err := a.QueryEntities(ctx, "acct", "qtable", partita.Query{}, func(*partita.Entity) error { n++; return nil })
		done <- answer{n, err}
	}()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the query did not reach its scan")
	}
	if err := b.DeleteTable(ctx, "acct", "qtable"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); catalogHas(t, raw, "acct", "qtable"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dropped table was not purged")
		}
	}
	close(release)
	got := <-done
	if !(got.err == nil && got.n == rows) && partita.ErrorCode(got.err) != partita.CodeTableNotFound {
		t.Fatalf("a query racing the table's drop: %d entities, %v (want %d, or TableNotFound)", got.n, got.err, rows)
	}
}
