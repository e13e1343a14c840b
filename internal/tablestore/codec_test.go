package tablestore

import (
	"math"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

func sampleEntity() *partita.Entity {
	return &partita.Entity{
		PartitionKey: "p", RowKey: "r", Timestamp: edm.MaxDateTime,
		Properties: []partita.Property{
			{Name: "S", Value: edm.StringValue("héllo")},
			{Name: "I", Value: edm.Int32Value(-7)},
			{Name: "L", Value: edm.Int64Value(math.MinInt64)},
			{Name: "D", Value: edm.DoubleValue(math.NaN())},
			{Name: "B", Value: edm.BoolValue(true)},
			{Name: "T", Value: edm.DateTimeValue(edm.MinDateTime)},
			{Name: "G", Value: edm.Value{Type: edm.Guid, Str: "4185404a-5818-48c3-b9be-f217df0dba6f"}},
			{Name: "X", Value: edm.BinaryValue([]byte{0, 255})},
		},
	}
}

func equalEntities(a, b *partita.Entity) bool {
	if a.Timestamp != b.Timestamp || len(a.Properties) != len(b.Properties) {
		return false
	}
	for i := range a.Properties {
		if a.Properties[i].Name != b.Properties[i].Name || !a.Properties[i].Value.Equal(b.Properties[i].Value) {
			return false
		}
	}
	return true
}

func TestCodec_RoundTrip(t *testing.T) {
	e := sampleEntity()
	var got partita.Entity
	b := appendEntity(nil, e)
	if err := decodeEntityCopy(b, &got); err != nil {
		t.Fatal(err)
	}
	for i := range b { // the decoded entity must not share b
		b[i] = 0xff
	}
	if !equalEntities(e, &got) {
		t.Fatalf("round trip = %+v, want %+v", got, e)
	}
	if n, size := len(appendEntity(nil, e)), encodedSize(e); n > size {
		t.Fatalf("encoding is %d bytes, encodedSize said at most %d", n, size)
	}
}

// FuzzDecodeEntity: no panic on any input; whatever decodes re-encodes to
// the same bytes.
func FuzzDecodeEntity(f *testing.F) {
	f.Add(appendEntity(nil, sampleEntity()))
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 5, 1, 1, 'A', 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e partita.Entity
		ticks, terr := decodeTicks(b)
		if err := decodeEntityCopy(b, &e); err != nil {
			return
		}
		// The Timestamp alone decodes wherever the whole entity does, to
		// the same value.
		if terr != nil || ticks != e.Timestamp {
			t.Fatalf("decodeTicks = %d, %v; the full decode's Timestamp is %d", ticks, terr, e.Timestamp)
		}
		again := appendEntity(nil, &e)
		if n := encodedSize(&e); len(again) > n {
			t.Fatalf("encoding is %d bytes, encodedSize said at most %d", len(again), n)
		}
		var e2 partita.Entity
		if err := decodeEntityCopy(again, &e2); err != nil || !equalEntities(&e, &e2) {
			t.Fatalf("re-decode failed: %v", err)
		}
		// A borrowed decode sees the same entity, and owns nothing: it
		// changes with the buffer it borrows.
		var e3 partita.Entity
		if err := decodeEntityInto(again, &e3, true); err != nil || !equalEntities(&e, &e3) {
			t.Fatalf("borrowed decode differs: %v", err)
		}
		if len(e.Properties) > 0 && e.Properties[0].Name != "" {
			for i := range again {
				again[i] = e.Properties[0].Name[0] ^ 1
			}
		}
		if len(e.Properties) > 0 && e.Properties[0].Name != "" && e3.Properties[0].Name == e.Properties[0].Name {
			t.Fatalf("borrowed name %q did not alias the buffer", e3.Properties[0].Name)
		}
	})
}

func BenchmarkDecodeEntity(b *testing.B) {
	v := appendEntity(nil, sampleEntity())
	var e partita.Entity
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := decodeEntityCopy(v, &e); err != nil {
			b.Fatal(err)
		}
	}
}
