package transfer

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/wire"
)

// generalRecord is the export's general path: DecodeEntity, then
// AppendRecord.
func generalRecord(table string, raw []byte) ([]byte, error) {
	e, _, _, err := wire.DecodeEntity(raw)
	if err != nil {
		return nil, err
	}
	return AppendRecord(nil, table, e), nil
}

// checkFastExport fails when the fast path accepts raw and writes anything
// but what the general path writes.
func checkFastExport(t *testing.T, table string, raw []byte) bool {
	t.Helper()
	var l liteEntity
	prefix := []byte("previous record\n")
	fast, pk, rk, ok := l.appendRecordFast(append([]byte(nil), prefix...), table, raw)
	if !bytes.HasPrefix(fast, prefix) {
		t.Fatalf("fast path overwrote what was before it: %q", fast)
	}
	if !ok {
		if !bytes.Equal(fast, prefix) {
			t.Fatalf("fast path left bytes behind when it gave up: %q", fast)
		}
		return false
	}
	slow, err := generalRecord(table, raw)
	if err != nil {
		t.Fatalf("fast path accepted an entity the general path refuses (%v): %s", err, raw)
	}
	if e, _, _, err := wire.DecodeEntity(raw); err != nil || string(pk) != e.PartitionKey || string(rk) != e.RowKey {
		t.Fatalf("fast path's keys %q, %q differ from the general path's (%v): %s", pk, rk, err, raw)
	}
	if !bytes.Equal(fast[len(prefix):], slow) {
		t.Fatalf("paths disagree on %s:\nfast %s\nslow %s", raw, fast[len(prefix):], slow)
	}
	return true
}

// checkFastRequest fails when the fast path accepts raw and gives any
// body or keys but what the general path (DecodeEntity, then
// appendRequestEntity) gives.
func checkFastRequest(t *testing.T, raw []byte) bool {
	t.Helper()
	var l liteEntity
	prefix := []byte("previous body")
	fast, pk, rk, ok := l.appendRequestFast(append([]byte(nil), prefix...), raw)
	if !bytes.HasPrefix(fast, prefix) {
		t.Fatalf("fast path overwrote what was before it: %q", fast)
	}
	if !ok {
		if !bytes.Equal(fast, prefix) {
			t.Fatalf("fast path left bytes behind when it gave up: %q", fast)
		}
		return false
	}
	e, _, _, err := wire.DecodeEntity(raw)
	if err != nil {
		t.Fatalf("fast path accepted an entity the general path refuses (%v): %s", err, raw)
	}
	if slow := appendRequestEntity(nil, e); !bytes.Equal(fast[len(prefix):], slow) || string(pk) != e.PartitionKey || string(rk) != e.RowKey {
		t.Fatalf("paths disagree on %s:\nfast %q %q %s\nslow %q %q %s", raw, pk, rk, fast[len(prefix):], e.PartitionKey, e.RowKey, slow)
	}
	return true
}

// randomEntity has random keys and properties of every EDM type, with
// edge values and, now and then, strings that need escapes.
func randomEntity(r *rand.Rand) *partita.Entity {
	str := func() string {
		const plain = "abcXYZ019 -_.~'/ü日😀"
		const odd = "\"\\\n\t\x01\u2028<>&"
		n := r.IntN(12)
		var b []rune
		for range n {
			if r.IntN(20) == 0 {
				b = append(b, []rune(odd)[r.IntN(len([]rune(odd)))])
			} else {
				b = append(b, []rune(plain)[r.IntN(len([]rune(plain)))])
			}
		}
		return string(b)
	}
	e := &partita.Entity{PartitionKey: str(), RowKey: str(), Timestamp: 638000000000000000 + r.Int64N(1e15)}
	n := r.IntN(12)
	for i := range n {
		var v edm.Value
		switch r.IntN(9) {
		case 0:
			v = edm.StringValue(str())
		case 1:
			v = edm.Int32Value([]int32{0, -1, 1, math.MinInt32, math.MaxInt32, r.Int32()}[r.IntN(6)])
		case 2:
			v = edm.Int64Value([]int64{0, -1, math.MinInt64, math.MaxInt64, r.Int64()}[r.IntN(5)])
		case 3:
			v = edm.DoubleValue([]float64{0, math.Copysign(0, -1), 0.1, 5, 1e21, 5e-324, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1), r.NormFloat64() * 1e10}[r.IntN(11)])
		case 4:
			v = edm.BoolValue(r.IntN(2) == 0)
		case 5:
			v = edm.DateTimeValue([]int64{edm.MinDateTime, edm.MaxDateTime, 638000000001234567, edm.MinDateTime + r.Int64N(edm.MaxDateTime-edm.MinDateTime)}[r.IntN(4)])
		case 6:
			g := make([]byte, 16)
			for k := range g {
				g[k] = byte(r.IntN(256))
			}
			v, _ = edm.GuidValue(fmt.Sprintf("%x-%x-%x-%x-%x", g[0:4], g[4:6], g[6:8], g[8:10], g[10:16]))
		case 7:
			b := make([]byte, r.IntN(20))
			for k := range b {
				b[k] = byte(r.IntN(256))
			}
			v = edm.BinaryValue(b)
		case 8:
			v = edm.StringValue(string(bytes.Repeat([]byte("x"), r.IntN(3000))))
		}
		name := fmt.Sprintf("P%d", i)
		if r.IntN(30) == 0 {
			name = "Ü\"n" + name
		}
		e.Properties = append(e.Properties, partita.Property{Name: name, Value: v})
	}
	return e
}

// TestFastExportOracle (and the request bodies of a copy): random entities with every EDM type, as partita
// writes them in each metadata level: the fast path gives the general
// path's record whenever it takes one, and takes nearly every entity
// whose strings need no escapes.
func TestFastExportOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	taken, total := 0, 0
	for i := range 20000 {
		e := randomEntity(r)
		m := []wire.Metadata{wire.FullMetadata, wire.MinimalMetadata, wire.NoMetadata}[i%3]
		raw := wire.AppendEntity(nil, e, &wire.EntityOptions{Metadata: m, Base: "http://127.0.0.1:10002/devstoreaccount1", Account: "devstoreaccount1", Table: "t"})
		if checkFastExport(t, "t", raw) {
			taken++
		}
		if checkFastRequest(t, raw) != checkFastExport(t, "t", raw) {
			t.Fatalf("the two fast paths disagree on taking %s", raw)
		}
		total++
	}
	t.Logf("fast path took %d of %d entities", taken, total)
	if taken < total/4 {
		t.Fatalf("fast path took only %d of %d entities", taken, total)
	}
	// The form of the bench's entities (and most tables): always taken.
	e := &partita.Entity{PartitionKey: "p0037", RowKey: "r1", Timestamp: 638000000000000000, Properties: []partita.Property{
		{Name: "Seq", Value: edm.Int64Value(3700)}, {Name: "Bucket", Value: edm.Int32Value(700)},
		{Name: "Payload", Value: edm.StringValue("ISjyQ44Z4ynP0M4GF_dqC2FF5-Fhu")},
	}}
	raw := wire.AppendEntity(nil, e, &wire.EntityOptions{Metadata: wire.FullMetadata, Base: "http://h/a", Account: "a", Table: "t"})
	if !checkFastExport(t, "t", raw) || !checkFastRequest(t, raw) {
		t.Fatalf("fast path did not take %s", raw)
	}
}

// FuzzFastExport: on any input, the fast paths (JSONL record and request
// body) give up or agree with the general path.
func FuzzFastExport(f *testing.F) {
	for _, m := range []wire.Metadata{wire.FullMetadata, wire.MinimalMetadata, wire.NoMetadata} {
		f.Add(wire.AppendEntity(nil, edgeEntity(), &wire.EntityOptions{Metadata: m, Base: "http://h/a", Account: "a", Table: "t"}))
	}
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","A":1,"B":-0,"C":2147483648,"D@odata.type":"Edm.Int64","D":"007","E@odata.type":"Edm.Double","E":1e999}`))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","Timestamp@odata.type":5,"X":true,"Y@odata.type":"Edm.Boolean","Y":"false"}`))
	f.Add([]byte(`{"PartitionKey":"p","PartitionKey@odata.type":"Edm.Int32","RowKey":"r"}`))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","B@odata.type":"Edm.Binary","B":"AAE","G@odata.type":"Edm.Guid","G":"01234567-89AB-cdef-0123-456789abcdef"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFastExport(t, "t", raw)
		checkFastRequest(t, raw)
	})
}

// BenchmarkExportRecord: one page of the bench's 1 KiB entities (as
// partita sends them) to JSONL, fast and general path.
func BenchmarkExportRecord(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, 1024)
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range payload {
		payload[i] = chars[r.IntN(len(chars))]
	}
	var raws [][]byte
	for i := range 1000 {
		e := &partita.Entity{PartitionKey: "p0037", RowKey: fmt.Sprintf("b0caf0a%012d", i), Timestamp: 638000000000000000, Properties: []partita.Property{
			{Name: "Seq", Value: edm.Int64Value(int64(i))}, {Name: "Bucket", Value: edm.Int32Value(int32(i % 1000))},
			{Name: "Payload", Value: edm.StringValue(string(payload))},
		}}
		raws = append(raws, wire.AppendEntity(nil, e, &wire.EntityOptions{Metadata: wire.FullMetadata, Base: "http://127.0.0.1:10002/devstoreaccount1", Account: "devstoreaccount1", Table: "src"}))
	}
	b.Run("fast", func(b *testing.B) {
		var l liteEntity
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, raw := range raws {
				var ok bool
				if buf, _, _, ok = l.appendRecordFast(buf, "src", raw); !ok {
					b.Fatal("not taken")
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/entity")
	})
	b.Run("general", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, raw := range raws {
				e, _, _, err := wire.DecodeEntity(raw)
				if err != nil {
					b.Fatal(err)
				}
				buf = AppendRecord(buf, "src", e)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/entity")
	})
}

// BenchmarkImportBatch: 100 JSONL lines of the bench's 1 KiB entities
// decoded and made into $batch bodies, as an import does per batch.
func BenchmarkImportBatch(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, 1024)
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range payload {
		payload[i] = chars[r.IntN(len(chars))]
	}
	var lines [][]byte
	for i := range 100 {
		e := &partita.Entity{PartitionKey: "p0037", RowKey: fmt.Sprintf("b0caf0a%012d", i), Properties: []partita.Property{
			{Name: "Seq", Value: edm.Int64Value(int64(i))}, {Name: "Bucket", Value: edm.Int32Value(int32(i % 1000))},
			{Name: "Payload", Value: edm.StringValue(string(payload))},
		}}
		lines = append(lines, bytes.TrimSuffix(AppendRecord(nil, "src", e), []byte("\n")))
	}
	for b.Loop() {
		es := make([]*partita.Entity, 0, len(lines))
		for _, l := range lines {
			rec, err := DecodeRecord(l)
			if err != nil {
				b.Fatal(err)
			}
			es = append(es, rec.Entity)
		}
		prepare(es)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/entity")
}

// checkFastImport fails when the import's fast path accepts a line that
// DecodeRecord refuses, or gives any table, keys or body but what
// DecodeRecord and appendRequestEntity give.
func checkFastImport(t *testing.T, line []byte) bool {
	t.Helper()
	prefix := []byte("previous body")
	fast, table, pk, rk, ok := appendImportFast(append([]byte(nil), prefix...), line)
	if !bytes.HasPrefix(fast, prefix) {
		t.Fatalf("fast path overwrote what was before it: %q", fast)
	}
	rec, err := DecodeRecord(line)
	if !ok {
		if !bytes.Equal(fast, prefix) {
			t.Fatalf("fast path left bytes behind when it gave up: %q", fast)
		}
		return false
	}
	if err != nil {
		t.Fatalf("fast path accepted a line DecodeRecord refuses (%v): %s", err, line)
	}
	slow := appendRequestEntity(nil, rec.Entity)
	if !bytes.Equal(fast[len(prefix):], slow) || string(table) != rec.Table || string(pk) != rec.Entity.PartitionKey || string(rk) != rec.Entity.RowKey {
		t.Fatalf("paths disagree on %s:\nfast %q %q %q %s\nslow %q %q %q %s", line, table, pk, rk, fast[len(prefix):], rec.Table, rec.Entity.PartitionKey, rec.Entity.RowKey, slow)
	}
	return true
}

// TestFastImportOracle: the records of random entities with every EDM
// type: the fast path gives the general path's body whenever it takes a
// line, and takes every line without escapes.
func TestFastImportOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	taken := 0
	for range 20000 {
		e := randomEntity(r)
		line := bytes.TrimSuffix(AppendRecord(nil, "t", e), []byte("\n"))
		if checkFastImport(t, line) {
			taken++
		} else if !bytes.Contains(line, []byte(`\`)) && len(e.Properties) <= 32 {
			t.Fatalf("fast path did not take %s", line)
		}
	}
	t.Logf("fast path took %d of 20000 lines", taken)
}

// FuzzFastImport: on any line, the import's fast path gives up or agrees
// with DecodeRecord and appendRequestEntity.
func FuzzFastImport(f *testing.F) {
	f.Add(bytes.TrimSuffix(AppendRecord(nil, "tab", edgeEntity()), []byte("\n")))
	f.Add([]byte(`{"table":"t","PartitionKey":"","RowKey":"","props":[]}`))
	f.Add([]byte(`{"table":"","PartitionKey":"p","RowKey":"r","props":[]}`))
	f.Add([]byte(`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Int32","01"],["A","Edm.String","x"]]}`))
	f.Add([]byte(`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["Timestamp","Edm.String","x"],["B","edm.string","x"],["C","Edm.Double","5"]]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastImport(t, line)
	})
}
