package tablestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pebblekv"
)

// TestCheck fills a store through the Store, checks it, then corrupts it
// through pebblekv directly, one way at a time, and sees Check report
// each corruption and nothing else.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	errACL := errors.New("bad ACL")
	opts := CheckOptions{
		DecodeACL: func(b []byte) error {
			if string(b) == "garbage" {
				return errACL
			}
			return nil
		},
		DecodeProperties: func(b []byte) error { return nil },
	}
	cases := []struct {
		name    string
		corrupt func(tx kv.Txn, id uint64) error
		want    string
	}{
		{"entity of a table not in the catalog", func(tx kv.Txn, id uint64) error {
			return tx.Set(entityKey(nil, id+7, "p", "r"), appendEntity(nil, &partita.Entity{}))
		}, "is not in the catalog"},
		{"garbage entity value", func(tx kv.Txn, id uint64) error {
			return tx.Set(entityKey(nil, id, "p", "garbage"), []byte{9, 9, 9})
		}, "malformed entity value"},
		{"truncated entity key", func(tx kv.Txn, id uint64) error {
			return tx.Set(tablePrefix(id), appendEntity(nil, &partita.Entity{}))
		}, "malformed entity key"},
		{"ACL of a table not in the catalog", func(tx kv.Txn, id uint64) error {
			return tx.Set(aclKey(id+7), []byte("<SignedIdentifiers/>"))
		}, "not in the catalog"},
		{"ACL that does not decode", func(tx kv.Txn, id uint64) error {
			return tx.Set(aclKey(id), []byte("garbage"))
		}, "bad ACL"},
		{"catalog entry that does not decode", func(tx kv.Txn, id uint64) error {
			return tx.Set(catalogKey("devstoreaccount1", "broken"), []byte{1})
		}, "malformed catalog entry"},
		{"two tables with one id", func(tx kv.Txn, id uint64) error {
			return tx.Set(catalogKey("devstoreaccount1", "twin"), encodeTableRecord(&tableRecord{id: id, name: "twin"}))
		}, "share the id"},
		{"table id past the next id", func(tx kv.Txn, id uint64) error {
			return tx.Set(catalogKey("devstoreaccount1", "future"), encodeTableRecord(&tableRecord{id: 1000, name: "future"}))
		}, "not below the next table id"},
		{"unknown namespace", func(tx kv.Txn, id uint64) error {
			return tx.Set([]byte{0x09, 'x'}, []byte("y"))
		}, "unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s, err := Open(ctx, db, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"alpha", "Beta"} {
				if _, err := s.CreateTable(ctx, "devstoreaccount1", name); err != nil {
					t.Fatal(err)
				}
				for i := range 5 {
					e := &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: []partita.Property{{Name: "n", Value: edm.Value{Type: edm.Int32, Int: int64(i)}}}}
					if _, err := s.Write(ctx, "devstoreaccount1", name, partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.SetTableACL(ctx, "devstoreaccount1", "alpha", []byte("<SignedIdentifiers/>")); err != nil {
				t.Fatal(err)
			}
			if err := s.SetServiceProperties(ctx, "devstoreaccount1", []byte("<StorageServiceProperties/>")); err != nil {
				t.Fatal(err)
			}
			if err := s.Probe(ctx); err != nil {
				t.Fatal(err)
			}
			s.Close()

			rep, err := Check(ctx, db, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Entities != 10 || len(rep.Tables) != 2 || rep.ACLs != 1 || rep.Properties != 1 {
				t.Fatalf("the intact store: %+v", rep)
			}
			for _, tb := range rep.Tables {
				if tb.Entities != 5 {
					t.Errorf("table %s: %d entities, want 5", tb.Name, tb.Entities)
				}
			}
			id := rep.Tables[0].ID
			if err := db.Update(ctx, func(tx kv.Txn) error { return c.corrupt(tx, id) }); err != nil {
				t.Fatal(err)
			}
			rep, err = Check(ctx, db, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Problems != 1 || len(rep.Details) != 1 || !strings.Contains(rep.Details[0], c.want) {
				t.Fatalf("after the corruption: %d problems %q, want one containing %q", rep.Problems, rep.Details, c.want)
			}
		})
	}
}
