package tablestore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
	"github.com/partita/partita/odata"
)

// TestUnreadableValues: when stored values cannot be read back (a blob
// block's checksum fails, the disk returns EIO), the store says so and
// changes nothing. A query reports the read error, not "malformed entity
// value"; a batch whose current values cannot all be read fails instead
// of taking the unreadable entity for absent, which turned an
// insert-or-merge into a replace that dropped its other properties
// (Pebble's iterator forgot the error at its next seek).
func TestUnreadableValues(t *testing.T) {
	ctx := t.Context()
	mem := vfs.NewMem()
	blobReads := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, ".blob") {
			return errorfs.ErrInjected
		}
		return nil
	})}
	open := func() (*tablestore.Store, func()) {
		db, err := pebblekv.Open("db", &pebblekv.Options{FS: errorfs.Wrap(mem, blobReads), MemTableSize: 1 << 20, MinFreeBytes: -1, NoSync: true, SeparateValues: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := tablestore.Open(ctx, db, tablestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { s.Close(); db.Close() }
	}
	s, closeStore := open()
	if _, err := s.CreateTable(ctx, "a", "tab"); err != nil {
		t.Fatal(err)
	}
	payload := edm.StringValue(strings.Repeat("x", 1000))
	for i := 0; i < 4000; i++ {
		e := &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("r%05d", i), Properties: []partita.Property{{Name: "Payload", Value: payload}}}
		if _, err := s.Write(ctx, "a", "tab", partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
			t.Fatal(err)
		}
	}
	closeStore()
	s, closeStore = open()
	defer closeStore()
	// A key written now sits in the memtable, readable whatever the blob
	// files do.
	last := &partita.Entity{PartitionKey: "p", RowKey: "z", Properties: []partita.Property{{Name: "Payload", Value: payload}}}
	if _, err := s.Write(ctx, "a", "tab", partita.Op{Kind: partita.OpInsert, Entity: last}); err != nil {
		t.Fatal(err)
	}

	blobReads.On()
	filter, err := odata.Parse("Payload eq 'y'")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.QueryEntities(ctx, "a", "tab", partita.Query{Filter: filter}, func(*partita.Entity) error { return nil })
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("query over unreadable values: %v, want the read error", err)
	}
	_, err = s.QueryEntities(ctx, "a", "tab", partita.Query{}, func(*partita.Entity) error { return nil })
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("query without a filter over unreadable values: %v, want the read error", err)
	}
	merge := []partita.Op{
		{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r00000", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}},
		{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "z", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}},
	}
	if _, err := s.WriteBatch(ctx, "a", "tab", merge); err == nil {
		t.Errorf("a batch merging into an unreadable entity succeeded")
	}
	single := partita.Op{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r00001", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}}
	if _, err := s.Write(ctx, "a", "tab", single); err == nil {
		t.Errorf("merging into an unreadable entity succeeded")
	}
	if _, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: "r00002"}); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("point read of an unreadable entity: %v, want the read error", err)
	}
	blobReads.Off()
	for _, rk := range []string{"r00001", "r00002"} {
		got, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: rk})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Properties) != 1 || got.Properties[0].Name != "Payload" {
			t.Errorf("%s has %v, want its Payload alone", rk, got.Properties)
		}
	}
	got, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: "r00000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Properties) != 1 || got.Properties[0].Name != "Payload" {
		t.Errorf("after the failed batch r00000 has %v, want its Payload alone", got.Properties)
	}
}
