package wire

import (
	"bytes"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// referenceAppendEntity is AppendEntity as it was before its full-metadata
// strings were appended piece by piece (it built them with + and
// EntityPath first): the oracle the current encoder must match byte for
// byte.
func referenceAppendEntity(b []byte, e *partita.Entity, o *EntityOptions) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) { b = appendKey(b, &first, k) }
	if o.Metadata != NoMetadata {
		if o.Element {
			key("odata.metadata")
			b = appendString(b, o.Base+"/$metadata#"+o.Table+"/@Element")
		}
		if o.Metadata == FullMetadata {
			key("odata.type")
			b = appendString(b, o.Account+"."+o.Table)
			key("odata.id")
			b = appendString(b, o.Base+"/"+EntityPath(o.Table, e.PartitionKey, e.RowKey))
		}
		key("odata.etag")
		b = partita.AppendJSONETag(b, e.Timestamp)
		if o.Metadata == FullMetadata {
			key("odata.editLink")
			b = appendString(b, EntityPath(o.Table, e.PartitionKey, e.RowKey))
		}
	}
	writeSys := func(name string) {
		switch name {
		case partita.PropPartitionKey:
			key(name)
			b = appendString(b, e.PartitionKey)
		case partita.PropRowKey:
			key(name)
			b = appendString(b, e.RowKey)
		case partita.PropTimestamp:
			if o.Metadata == FullMetadata {
				key("Timestamp@odata.type")
				b = appendString(b, "Edm.DateTime")
			}
			key(name)
			b = append(b, '"')
			b = edm.AppendDateTime(b, e.Timestamp)
			b = append(b, '"')
		}
	}
	if o.Select == nil {
		writeSys(partita.PropPartitionKey)
		writeSys(partita.PropRowKey)
		writeSys(partita.PropTimestamp)
		for i := range e.Properties {
			p := &e.Properties[i]
			b = appendProp(b, &first, p.Name, p.Value, o.Metadata)
		}
	} else {
		for _, s := range []string{partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp} {
			for _, n := range o.Select {
				if n == s {
					writeSys(s)
					break
				}
			}
		}
		for _, n := range o.Select {
			switch n {
			case partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp:
				continue
			}
			v, ok := e.Get(n)
			if !ok && (strings.Contains(n, "@") || strings.HasPrefix(n, "odata.")) {
				continue // not a property name: not echoed
			}
			if !ok {
				key(n)
				b = append(b, "null"...)
				continue
			}
			b = appendProp(b, &first, n, v, o.Metadata)
		}
	}
	return append(b, '}')
}

// randKeyString mixes what needs no escaping with every kind that does:
// quotes (OData and JSON), percent-encoded bytes, control bytes, non-ASCII
// and invalid UTF-8.
func randKeyString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "09", "-_.~", "'", "''", "\"", "\\", "/", "?", "#", "%", " ", "\x00", "\x1f", "\t", "\n", "é", "€", "\U0001F600", "\xff", "\xc3", "\u2028", "p0007", "r000000001234"}
	var sb strings.Builder
	for n := r.Intn(6); n > 0; n-- {
		sb.WriteString(pieces[r.Intn(len(pieces))])
	}
	return sb.String()
}

// randEntity has a property of every EDM type (and the edge values of
// each) in random order and number.
func randEntity(r *rand.Rand) *partita.Entity {
	e := &partita.Entity{PartitionKey: randKeyString(r), RowKey: randKeyString(r), Timestamp: r.Int63n(3155378975999999999)}
	gen := []func() edm.Value{
		func() edm.Value { return edm.StringValue(randKeyString(r)) },
		func() edm.Value { return edm.StringValue(strings.Repeat("abcdefgh", r.Intn(200))) },
		func() edm.Value { return edm.Int32Value(int32(r.Uint32())) },
		func() edm.Value { return edm.Int64Value(int64(r.Uint64())) },
		func() edm.Value {
			return edm.DoubleValue([]float64{0, -0.0, 1.5, -3.25e300, 1e-320, math.NaN(), math.Inf(1), math.Inf(-1), r.NormFloat64() * 1e6}[r.Intn(9)])
		},
		func() edm.Value { return edm.BoolValue(r.Intn(2) == 0) },
		func() edm.Value { return edm.DateTimeValue(r.Int63n(3155378975999999999)) },
		func() edm.Value {
			v, _ := edm.GuidValue("c9da6455-213d-42c9-9a79-3e9149a57833")
			return v
		},
		func() edm.Value {
			b := make([]byte, r.Intn(40))
			r.Read(b)
			return edm.BinaryValue(b)
		},
	}
	for n := r.Intn(12); n > 0; n-- {
		name := []string{"Name", "Age", "Score", "When", "Flag", "Blob", "Id", "Payload", "Seq", "x"}[r.Intn(10)] + string(rune('A'+len(e.Properties)))
		e.Properties = append(e.Properties, partita.Property{Name: name, Value: gen[r.Intn(len(gen))]()})
	}
	return e
}

func randOptions(r *rand.Rand, e *partita.Entity) *EntityOptions {
	o := &EntityOptions{
		Metadata: []Metadata{MinimalMetadata, NoMetadata, FullMetadata}[r.Intn(3)],
		Base:     []string{"http://127.0.0.1:10002/devstoreaccount1", "https://acct.table.core.windows.net", "http://h/\"q\\" + randKeyString(r)}[r.Intn(3)],
		Account:  []string{"devstoreaccount1", "a\"b", randKeyString(r)}[r.Intn(3)],
		Table:    []string{"t", "Table123", randKeyString(r)}[r.Intn(3)],
		Element:  r.Intn(4) == 0,
	}
	if r.Intn(3) == 0 {
		o.Select = []string{}
		for _, n := range []string{"PartitionKey", "RowKey", "Timestamp", "Missing", "odata.etag", "Missing@odata.type", "odata.metadata"} {
			if r.Intn(2) == 0 {
				o.Select = append(o.Select, n)
			}
		}
		for _, p := range e.Properties {
			if r.Intn(2) == 0 {
				o.Select = append(o.Select, p.Name)
			}
		}
	}
	return o
}

// TestAppendEntityMatchesReference: random entities with every EDM type,
// every metadata level, with and without $select and @Element, keys and
// names that need OData quoting, percent-encoding and JSON escaping.
func TestAppendEntityMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(19))
	for i := 0; i < 20000; i++ {
		e := randEntity(r)
		o := randOptions(r, e)
		prefix := []byte("[x,")
		got := AppendEntity(bytes.Clone(prefix), e, o)
		want := referenceAppendEntity(bytes.Clone(prefix), e, o)
		if !bytes.Equal(got, want) {
			t.Fatalf("entity %+v options %+v:\n got %s\nwant %s", e, o, got, want)
		}
	}
}

// FuzzAppendEntityFullMetadata: the piecewise full-metadata strings equal
// the old concatenated ones for any keys, table, account and base.
func FuzzAppendEntityFullMetadata(f *testing.F) {
	f.Add("p0007", "r000000001234", "t", "devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1", int64(638000000001234567), []byte("abc"))
	f.Add("a'b", "c/d?e#f%g h", "T\"", "a\\b", "http://x/\x00", int64(0), []byte{0xff, 0})
	f.Add("é\xff\u2028", "''", "", "", "", int64(3155378975999999999), []byte(nil))
	f.Fuzz(func(t *testing.T, pk, rk, table, account, base string, ts int64, bin []byte) {
		if ts < 0 {
			ts = -ts
		}
		e := &partita.Entity{PartitionKey: pk, RowKey: rk, Timestamp: ts % 3155378975999999999, Properties: []partita.Property{
			{Name: pk, Value: edm.StringValue(rk)},
			{Name: "B", Value: edm.BinaryValue(bin)},
		}}
		for _, m := range []Metadata{MinimalMetadata, NoMetadata, FullMetadata} {
			o := &EntityOptions{Metadata: m, Base: base, Account: account, Table: table}
			got := AppendEntity(nil, e, o)
			want := referenceAppendEntity(nil, e, o)
			if !bytes.Equal(got, want) {
				t.Fatalf("%v:\n got %s\nwant %s", m, got, want)
			}
		}
		if got, want := string(appendKeyLiteral(nil, pk)), escapeData(strings.ReplaceAll(pk, "'", "''")); got != want {
			t.Fatalf("appendKeyLiteral(%q) = %q, want %q", pk, got, want)
		}
	})
}

// fullMetadataEntity is the bench tool's entity as partita copy reads it.
func fullMetadataEntity() (*partita.Entity, *EntityOptions) {
	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 16)
	e := &partita.Entity{PartitionKey: "p0007", RowKey: "r000000001234", Timestamp: 638000000001234567, Properties: []partita.Property{
		{Name: "Seq", Value: edm.Int64Value(1234)},
		{Name: "Bucket", Value: edm.Int32Value(234)},
		{Name: "Payload", Value: edm.StringValue(payload)},
	}}
	return e, &EntityOptions{Metadata: FullMetadata, Base: "http://127.0.0.1:10002/devstoreaccount1", Account: "devstoreaccount1", Table: "src"}
}

// TestAppendEntityFullMetadataNoAllocs: a full-metadata entity (what
// partita copy asks for) is encoded without building strings.
func TestAppendEntityFullMetadataNoAllocs(t *testing.T) {
	e, o := fullMetadataEntity()
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendEntity(buf[:0], e, o) }); n != 0 {
		t.Fatalf("AppendEntity at full metadata: %v allocations per entity, want 0", n)
	}
}

func BenchmarkAppendEntity1KFull(b *testing.B) {
	e, o := fullMetadataEntity()
	buf := make([]byte, 0, 4096)
	b.SetBytes(1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendEntity(buf[:0], e, o)
	}
}
