package tablestore_test

import (
	"testing"

	"github.com/partita/partita"
)

// TestStore_TableNamesFoldOnlyASCII: table names are case-insensitive in
// ASCII, the only letters a name can hold. A name with other letters names
// no table, even one whose Unicode lower case is a table's name: the
// catalog was keyed by strings.ToLower, which maps the Kelvin sign K
// (U+212A) to "k" and İ (U+0130) to "i", so a request naming "Kay" read
// table "kay" and Delete Table of "İtems" dropped table "items".
func TestStore_TableNamesFoldOnlyASCII(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		for _, name := range []string{"kay", "items"} {
			if _, err := s.CreateTable(ctx, "acct", name); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(ctx, "acct", name, partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}}); err != nil {
				t.Fatal(err)
			}
		}
		key := partita.Key{PartitionKey: "p", RowKey: "r"}
		for _, alias := range []string{"\u212Aay", "\u0130tems", "\u212AAY"} {
			if _, err := s.GetTable(ctx, "acct", alias); partita.ErrorCode(err) != partita.CodeResourceNotFound {
				t.Errorf("GetTable(%q): %v, want ResourceNotFound", alias, err)
			}
			if _, err := s.GetEntity(ctx, "acct", alias, key); partita.ErrorCode(err) != partita.CodeTableNotFound {
				t.Errorf("GetEntity(%q): %v, want TableNotFound", alias, err)
			}
			if _, err := s.QueryEntities(ctx, "acct", alias, partita.Query{}, func(*partita.Entity) error { return nil }); partita.ErrorCode(err) != partita.CodeTableNotFound {
				t.Errorf("QueryEntities(%q): %v, want TableNotFound", alias, err)
			}
			if _, err := s.Write(ctx, "acct", alias, partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}}); partita.ErrorCode(err) != partita.CodeTableNotFound {
				t.Errorf("Write(%q): %v, want TableNotFound", alias, err)
			}
			if _, err := s.WriteBatch(ctx, "acct", alias, []partita.Op{{Kind: partita.OpDelete, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r"}}}); partita.ErrorCode(err) != partita.CodeTableNotFound {
				t.Errorf("WriteBatch(%q): %v, want TableNotFound", alias, err)
			}
			if err := s.DeleteTable(ctx, "acct", alias); partita.ErrorCode(err) != partita.CodeResourceNotFound {
				t.Errorf("DeleteTable(%q): %v, want ResourceNotFound", alias, err)
			}
		}
		// ASCII case still folds, and both tables and their entities are
		// still there.
		for _, name := range []string{"KAY", "Items"} {
			if _, err := s.GetEntity(ctx, "acct", name, key); err != nil {
				t.Errorf("GetEntity(%q): %v", name, err)
			}
		}
	})
}
