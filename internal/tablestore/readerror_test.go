package tablestore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
	"github.com/partita/partita/odata"
)

// TestUnreadableValues: when stored values cannot be read back (a block
// fails its checksum, the disk returns EIO), the store says so and
// changes nothing. A query reports the read error, not "malformed entity
// value"; a batch whose current values cannot all be read fails instead
// of taking the unreadable entity for absent, which turned an
// insert-or-merge into a replace that dropped its other properties
// (Pebble's iterator forgot the error at its next seek). Today's stores
// keep values in their sstables; stores written before 2026-11-27 kept
// them in blob files, which Pebble reads apart from the keys.
func TestUnreadableValues(t *testing.T) {
	t.Run("values inline, sstable reads fail", func(t *testing.T) { unreadableValues(t, false, ".sst") })
	t.Run("values in blob files, blob reads fail", func(t *testing.T) { unreadableValues(t, true, ".blob") })
}

// unreadableValues writes 4,000 entities of 1 KiB into a store (separate:
// values in blob files), then fails every read of the files named
// *suffix. The entities it reads then are in the middle of the
// partition: the blocks of its first and last keys are in the block cache
// already (a write learns the partition's bounds), and are read from there.
func unreadableValues(t *testing.T, separate bool, suffix string) {
	ctx := t.Context()
	mem := vfs.NewMem()
	failReads := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, suffix) {
			return errorfs.ErrInjected
		}
		return nil
	})}
	var db *pebblekv.DB
	open := func() (*tablestore.Store, func()) {
		var err error
		db, err = pebblekv.Open("db", &pebblekv.Options{FS: errorfs.Wrap(mem, failReads), MemTableSize: 1 << 20, MinFreeBytes: -1, NoSync: true, SeparateValues: separate})
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
	// A key written now sits in the memtable, readable whatever the files
	// do.
	last := &partita.Entity{PartitionKey: "p", RowKey: "z", Properties: []partita.Property{{Name: "Payload", Value: payload}}}
	if _, err := s.Write(ctx, "a", "tab", partita.Op{Kind: partita.OpInsert, Entity: last}); err != nil {
		t.Fatal(err)
	}

	// A compaction that cannot read its input stops the store (a fatal
	// storage error): let them finish before reads fail.
	for quiet, deadline := 0, time.Now().Add(10*time.Second); quiet < 5; time.Sleep(10 * time.Millisecond) {
		if m := db.Metrics(); m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			t.Fatal("the store's compactions did not settle within 10 s")
		}
	}
	failReads.On()
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
		{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r02000", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}},
		{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "z", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}},
	}
	if _, err := s.WriteBatch(ctx, "a", "tab", merge); err == nil {
		t.Errorf("a batch merging into an unreadable entity succeeded")
	}
	single := partita.Op{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: "p", RowKey: "r02001", Properties: []partita.Property{{Name: "X", Value: edm.Int32Value(1)}}}}
	if _, err := s.Write(ctx, "a", "tab", single); err == nil {
		t.Errorf("merging into an unreadable entity succeeded")
	}
	if _, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: "r02002"}); !errors.Is(err, errorfs.ErrInjected) {
		t.Errorf("point read of an unreadable entity: %v, want the read error", err)
	}
	failReads.Off()
	for _, rk := range []string{"r02001", "r02002"} {
		got, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: rk})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Properties) != 1 || got.Properties[0].Name != "Payload" {
			t.Errorf("%s has %v, want its Payload alone", rk, got.Properties)
		}
	}
	got, err := s.GetEntity(ctx, "a", "tab", partita.Key{PartitionKey: "p", RowKey: "r02000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Properties) != 1 || got.Properties[0].Name != "Payload" {
		t.Errorf("after the failed batch r02000 has %v, want its Payload alone", got.Properties)
	}
}
