package tablestore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// readCountingDB counts the reads (Get, NewIter) of its transactions.
type readCountingDB struct {
	kv.DB
	reads int
}

func (d *readCountingDB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	return d.DB.Update(ctx, func(tx kv.Txn) error { return fn(readCountingTxn{tx, d}) })
}

type readCountingTxn struct {
	kv.Txn
	d *readCountingDB
}

func (t readCountingTxn) Get(k []byte) ([]byte, error) { t.d.reads++; return t.Txn.Get(k) }
func (t readCountingTxn) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	t.d.reads++
	return t.Txn.NewIter(o)
}

// TestWriteBatchReadsOnlyWhatItNeeds: a batch of blind insert-or-replace
// reads no entity (like a single one, it needs no current value), and a
// batch of inserts reads its keys with one iterator.
func TestWriteBatchReadsOnlyWhatItNeeds(t *testing.T) {
	db := &readCountingDB{DB: memkv.New()}
	s, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "acct", "reads"); err != nil {
		t.Fatal(err)
	}
	// The first write reads the catalog (then cached).
	if _, err := s.Write(ctx, "acct", "reads", partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "q", RowKey: "r"}}); err != nil {
		t.Fatal(err)
	}
	batch := func(kind partita.OpKind) []partita.Op {
		ops := make([]partita.Op, 100)
		for i := range ops {
			ops[i] = partita.Op{Kind: kind, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r" + strconv.Itoa(i),
				Properties: []partita.Property{{Name: "V", Value: edm.Int32Value(int32(i))}}}}
		}
		return ops
	}
	for _, tc := range []struct {
		kind  partita.OpKind
		reads int
	}{{partita.OpInsert, 1}, {partita.OpInsertOrReplace, 0}, {partita.OpInsertOrReplace, 0}} {
		db.reads = 0
		if _, err := s.WriteBatch(ctx, "acct", "reads", batch(tc.kind)); err != nil {
			t.Fatal(err)
		}
		if db.reads != tc.reads {
			t.Errorf("batch of %v: %d reads, want %d", tc.kind, db.reads, tc.reads)
		}
	}
}
