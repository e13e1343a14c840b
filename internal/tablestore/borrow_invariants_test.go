//go:build invariants

package tablestore_test

import (
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/invariants"
)

// TestBorrowPoisonedAfterCallback: in an invariants build, what a Borrow
// query lends its callback (property names, strings, binary values) is
// poisoned when the callback returns, so a caller that keeps it reads
// garbage and its tests fail; the keys stay the callback's to keep. Without
// Borrow nothing is poisoned.
func TestBorrowPoisonedAfterCallback(t *testing.T) {
	engines(t, func(t *testing.T, open opener) {
		s := mustOpen(t, open)
		if _, err := s.CreateTable(ctx, "a", "lent"); err != nil {
			t.Fatal(err)
		}
		e := &partita.Entity{PartitionKey: "p", RowKey: "r", Properties: []partita.Property{
			{Name: "Blob", Value: edm.Value{Type: edm.Binary, Bin: []byte("bytes")}},
			{Name: "Str", Value: edm.StringValue("kept too long")},
		}}
		if _, err := s.Write(ctx, "a", "lent", partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
			t.Fatal(err)
		}
		// kept returns what a callback kept of the one entity: its keys,
		// then each property's name and value, as strings read after the
		// query returned.
		kept := func(borrow bool) []string {
			var pk, rk string
			var props []partita.Property
			_, err := s.QueryEntities(ctx, "a", "lent", partita.Query{Borrow: borrow}, func(e *partita.Entity) error {
				pk, rk = e.PartitionKey, e.RowKey
				props = append(props[:0], e.Properties...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			out := []string{pk, rk}
			for _, p := range props {
				out = append(out, p.Name, p.Value.Str+string(p.Value.Bin))
			}
			return out
		}
		got := kept(true)
		if len(got) != 6 || got[0] != "p" || got[1] != "r" {
			t.Fatalf("keys kept from a Borrow query: %q; they are the callback's to keep", got)
		}
		poison := string([]byte{invariants.PoisonByte})
		for _, s := range got[2:] {
			if s == "" || s != strings.Repeat(poison, len(s)) {
				t.Errorf("kept past the callback of a Borrow query: %q, want it poisoned", s)
			}
		}
		if got := kept(false); strings.Join(got, ",") != "p,r,Blob,bytes,Str,kept too long" {
			t.Errorf("kept from a query without Borrow: %q", got)
		}
	})
}
