package tablestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/odata"
)

// TestView_MatchesDecode: the lazy view returns what a full decode does
// for every property, the system properties and a missing one.
func TestView_MatchesDecode(t *testing.T) {
	e := sampleEntity()
	e.PartitionKey, e.RowKey = "p'k", "\U0001F600"
	key := entityKey(nil, 3, e.PartitionKey, e.RowKey)
	val := appendEntity(nil, e)
	var v view
	v.reset(key, val)
	names := []string{"PartitionKey", "RowKey", "Timestamp", "Missing"}
	for _, p := range e.Properties {
		names = append(names, p.Name)
	}
	for _, n := range names {
		got, gok := v.get(n)
		want, wok := e.Get(n)
		if gok != wok || (gok && !got.Equal(want)) {
			t.Errorf("view.get(%q) = %+v, %v; want %+v, %v", n, got, gok, want, wok)
		}
	}
	if v.bad {
		t.Error("view marked a valid value bad")
	}
	v.reset(key, []byte{1, 5, 1, 3, 'A'})
	if _, ok := v.get("B"); ok || !v.bad {
		t.Error("truncated value not reported bad")
	}
}

// BenchmarkTableScan measures entities examined per second by a filtered
// table scan that matches few entities (Pebble, 100k entities of ~1 KiB).
func BenchmarkTableScan(b *testing.B) {
	ctx := context.Background()
	db, err := pebblekv.Open(b.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, _ := Open(ctx, db, Options{})
	s.CreateTable(ctx, "a", "scan")
	const n = 100_000
	pad := edm.StringValue(string(make([]byte, 900)))
	for i := 0; i < n; i += 100 {
		var ops []partita.Op
		for j := i; j < i+100; j++ {
			ops = append(ops, partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{
				PartitionKey: fmt.Sprintf("p%02d", j%50), RowKey: fmt.Sprintf("%08d", j),
				Properties: []partita.Property{{Name: "Pad", Value: pad}, {Name: "N", Value: edm.Int32Value(int32(j))}, {Name: "Kind", Value: edm.StringValue("k")}},
			}})
		}
		for pk := 0; pk < 50; pk++ { // one batch per partition
			var part []partita.Op
			for _, op := range ops {
				if op.Entity.PartitionKey == fmt.Sprintf("p%02d", pk) {
					part = append(part, op)
				}
			}
			if len(part) > 0 {
				if _, err := s.WriteBatch(ctx, "a", "scan", part); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	f, _ := odata.Parse("N lt 10")
	b.ResetTimer()
	examined := 0
	for i := 0; i < b.N; i++ {
		q := partita.Query{Filter: f}
		for {
			info, err := s.QueryEntities(ctx, "a", "scan", q, func(*partita.Entity) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			examined += info.Examined
			if info.Next == nil {
				break
			}
			q.Next = info.Next
		}
	}
	b.ReportMetric(float64(examined)/b.Elapsed().Seconds(), "entities/s")
}
