package tablestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
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

// TestView_GetsInAnyOrder: a view answers gets in any order, repeated and
// for missing names, as a full decode does, across entities of every
// width read through one view (its record of walked properties is
// reused), and never panics on a cut value.
func TestView_GetsInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	types := []edm.Value{edm.StringValue("s"), edm.Int32Value(3), edm.Int64Value(-4), edm.DoubleValue(2.5),
		edm.BoolValue(true), edm.DateTimeValue(7), {Type: edm.Guid, Str: "4185404a-5818-48c3-b9be-f217df0dba6f"}, edm.BinaryValue([]byte{1, 2})}
	var v view
	for round := 0; round < 300; round++ {
		e := &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprint(round), Timestamp: int64(round)}
		width := rng.IntN(4)
		if round%3 == 0 {
			width = rng.IntN(255)
		}
		for _, k := range rng.Perm(300)[:width] {
			// Names of 1 to 20 bytes, many sharing their first 8.
			name := fmt.Sprintf("n%d", k)
			if k%2 == 0 {
				name = fmt.Sprintf("longname%03d", k)
			}
			e.Properties = append(e.Properties, partita.Property{Name: name, Value: types[rng.IntN(len(types))]})
		}
		key := entityKey(nil, 3, e.PartitionKey, e.RowKey)
		val := appendEntity(nil, e)
		v.reset(key, val)
		for g := 0; g < 40; g++ {
			var name string
			switch k := rng.IntN(300); {
			case g%13 == 0:
				name = "Timestamp"
			case g%17 == 0:
				name = "RowKey"
			case k%2 == 0:
				name = fmt.Sprintf("longname%03d", k)
			default:
				name = fmt.Sprintf("n%d", k)
			}
			got, gok := v.get(name)
			want, wok := e.Get(name)
			if gok != wok || (gok && !got.Equal(want)) {
				t.Fatalf("round %d, get %d: view.get(%q) = %+v, %v; want %+v, %v", round, g, name, got, gok, want, wok)
			}
		}
		if v.bad {
			t.Fatalf("round %d: a valid value marked bad", round)
		}
		// A cut value: no panic, and what is answered is right or the
		// view is marked bad (the full decode then reports it).
		v.reset(key, val[:rng.IntN(len(val))])
		for g := 0; g < 10; g++ {
			name := fmt.Sprintf("n%d", rng.IntN(300))
			if got, ok := v.get(name); ok && !v.bad {
				if want, wok := e.Get(name); !wok || !got.Equal(want) {
					t.Fatalf("round %d: cut value answered %q = %+v", round, name, got)
				}
			}
		}
	}
}

// FuzzView: on any value and any sequence of reads (names drawn from the
// value's own properties, the system ones and a missing one), the view
// never panics, and where the full decode succeeds it answers what the
// decoded entity holds and is not marked bad.
func FuzzView(f *testing.F) {
	f.Add(appendEntity(nil, sampleEntity()), []byte{0, 3, 1, 3, 9, 2})
	f.Add([]byte{1, 0, 2, 1, 'A', 4, 1, 'A', 3, 2}, []byte{1, 1, 0})
	f.Add([]byte{1, 5, 1, 3, 'A'}, []byte{1, 1})
	f.Fuzz(func(t *testing.T, val, order []byte) {
		var e partita.Entity
		derr := decodeEntityCopy(val, &e)
		names := []string{"Timestamp", "RowKey", "Missing", "A"}
		for _, p := range e.Properties {
			names = append(names, p.Name)
		}
		key := entityKey(nil, 3, "p", "r")
		var v view
		v.reset(key, val)
		for _, o := range order {
			name := names[int(o)%len(names)]
			got, ok := v.get(name)
			if derr != nil {
				continue
			}
			e.PartitionKey, e.RowKey = "p", "r"
			want, wok := e.Get(name)
			if ok != wok || ok && !got.Equal(want) || v.bad {
				t.Fatalf("get(%q) = %+v, %v (bad %v); the decoded entity has %+v, %v", name, got, ok, v.bad, want, wok)
			}
		}
	})
}

// BenchmarkViewWide evaluates filters on a 250-property entity: one
// condition on the second property and on the 241st, and 15 conditions
// on properties 201 to 215.
func BenchmarkViewWide(b *testing.B) {
	e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
	for j := 0; j < 250; j++ {
		e.Properties = append(e.Properties, partita.Property{Name: fmt.Sprintf("p%03d", j), Value: edm.Int32Value(int32(j))})
	}
	key := entityKey(nil, 3, e.PartitionKey, e.RowKey)
	val := appendEntity(nil, e)
	var terms []string
	for j := 200; j < 215; j++ {
		terms = append(terms, fmt.Sprintf("p%03d eq -1", j))
	}
	for _, c := range []struct{ name, filter string }{
		{"first", "p001 eq -1"}, {"late", "p240 eq -1"}, {"15late", strings.Join(terms, " or ")},
	} {
		f, err := odata.Parse(c.filter)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			var v view
			for b.Loop() {
				v.reset(key, val)
				if odata.Eval(f, v.get) {
					b.Fatal("matched")
				}
			}
		})
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
