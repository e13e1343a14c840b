package transfer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/wire"
)

// edgeEntity holds every EDM type at its edges.
func edgeEntity() *partita.Entity {
	g, _ := edm.GuidValue("01234567-89ab-cdef-0123-456789abcdef")
	return &partita.Entity{PartitionKey: "O'Brien \"quoted\" ü 日本", RowKey: "", Properties: []partita.Property{
		{Name: "S", Value: edm.StringValue("line\nbreak \"q\" \\ \u2028 😀")},
		{Name: "Empty", Value: edm.StringValue("")},
		{Name: "I32min", Value: edm.Int32Value(math.MinInt32)},
		{Name: "I32max", Value: edm.Int32Value(math.MaxInt32)},
		{Name: "I64min", Value: edm.Int64Value(math.MinInt64)},
		{Name: "I64max", Value: edm.Int64Value(math.MaxInt64)},
		{Name: "D", Value: edm.DoubleValue(0.1)},
		{Name: "DInt", Value: edm.DoubleValue(5)},
		{Name: "DNeg0", Value: edm.DoubleValue(math.Copysign(0, -1))},
		{Name: "DMax", Value: edm.DoubleValue(math.MaxFloat64)},
		{Name: "DTiny", Value: edm.DoubleValue(5e-324)},
		{Name: "NaN", Value: edm.DoubleValue(math.NaN())},
		{Name: "Inf", Value: edm.DoubleValue(math.Inf(1))},
		{Name: "NInf", Value: edm.DoubleValue(math.Inf(-1))},
		{Name: "T", Value: edm.BoolValue(true)},
		{Name: "F", Value: edm.BoolValue(false)},
		{Name: "DTmin", Value: edm.DateTimeValue(edm.MinDateTime)},
		{Name: "DTmax", Value: edm.DateTimeValue(edm.MaxDateTime)},
		{Name: "DT7", Value: edm.DateTimeValue(638000000001234567)},
		{Name: "G", Value: g},
		{Name: "Bin", Value: edm.BinaryValue([]byte{0, 1, 2, 0xff})},
		{Name: "BinEmpty", Value: edm.BinaryValue([]byte{})},
	}}
}

func sameEntity(a, b *partita.Entity) bool {
	if a.PartitionKey != b.PartitionKey || a.RowKey != b.RowKey || len(a.Properties) != len(b.Properties) {
		return false
	}
	for i := range a.Properties {
		if a.Properties[i].Name != b.Properties[i].Name || !a.Properties[i].Value.Equal(b.Properties[i].Value) {
			return false
		}
	}
	return true
}

func TestRecordRoundTrip(t *testing.T) {
	e := edgeEntity()
	line := AppendRecord(nil, "tab", e)
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	rec, err := DecodeRecord(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatalf("DecodeRecord: %v\n%s", err, line)
	}
	if rec.Table != "tab" || !sameEntity(rec.Entity, e) {
		t.Fatalf("round trip changed the entity:\n%s\n%+v", line, rec.Entity)
	}
	if got := AppendRecord(nil, rec.Table, rec.Entity); !bytes.Equal(got, line) {
		t.Fatalf("re-encoding differs:\n%s\n%s", line, got)
	}
	for _, want := range []string{`["I64max","Edm.Int64","9223372036854775807"]`, `["DInt","Edm.Double","5.0"]`, `["NaN","Edm.Double","NaN"]`, `["DTmax","Edm.DateTime","9999-12-31T23:59:59.9999999Z"]`, `["DT7","Edm.DateTime","2022-09-28T22:13:20.1234567Z"]`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s:\n%s", want, line)
		}
	}
}

// The request body the copy sends reads back, through partita's own request
// decoder, as the very same entity: every type exact.
func TestRequestEntityExact(t *testing.T) {
	e := edgeEntity()
	body := appendRequestEntity(nil, e)
	got, hasPK, hasRK, err := wire.DecodeEntity(body)
	if err != nil || !hasPK || !hasRK {
		t.Fatalf("DecodeEntity(%s): %v %v %v", body, hasPK, hasRK, err)
	}
	if !sameEntity(got, e) {
		t.Fatalf("request body changed the entity:\n%s\n%+v", body, got)
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`not json`, "not a JSON entity record"},
		{`{"PartitionKey":"p","RowKey":"r","props":[]}`, `missing "table"`},
		{`{"table":"t","RowKey":"r","props":[]}`, `missing "PartitionKey"`},
		{`{"table":"t","PartitionKey":"p","props":[]}`, `missing "RowKey"`},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","extra":1}`, `unknown member "extra"`},
		// One meaning per line: member names by their exact case, once
		// each, strings that are strings, UTF-8 without lone surrogates
		// (encoding/json read each of these, some as another record).
		{`{"TABLE":"t","PartitionKey":"p","RowKey":"r","props":[]}`, `unknown member "TABLE"`},
		{`{"table":"t","partitionkey":"p","RowKey":"r","props":[]}`, `unknown member "partitionkey"`},
		{`{"table":"t","PartitionKey":"p","RowKey":"a","RowKey":"b","props":[]}`, `member "RowKey" appears twice`},
		{`{"table":"t","table":"u","PartitionKey":"p","RowKey":"r","props":[]}`, `member "table" appears twice`},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[],"props":[]}`, `member "props" appears twice`},
		{`{"table":"t","PartitionKey":null,"RowKey":"r","props":[]}`, `"PartitionKey" is not a JSON string`},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.String",null]]}`, "is not [name, type, value]"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":null}`, `"props" is not a list`},
		{"{\"table\":\"t\",\"PartitionKey\":\"p\",\"RowKey\":\"k\xff\",\"props\":[]}", "not UTF-8"},
		{`{"table":"t","PartitionKey":"p","RowKey":"k\ud800","props":[]}`, `"RowKey" is not a JSON string`},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["S","Edm.String","\udc00x"]]}`, "is not [name, type, value]"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Int32","1"],["A","Edm.Int32","2"]]}`, "appears twice"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Int32","2147483648"]]}`, "not a canonical Edm.Int32"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Int64","01"]]}`, "not a canonical Edm.Int64"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Double","5"]]}`, "not a canonical Edm.Double"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.DateTime","2020-01-01T00:00:00Z"]]}`, "not a canonical Edm.DateTime"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.DateTime","1600-12-31T23:59:59.9999999Z"]]}`, "outside the range of Edm.DateTime"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.DateTime","1600-12-31T23:59:59Z"]]}`, "not a canonical Edm.DateTime"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Guid","NOT-A-GUID"]]}`, "not a canonical Edm.Guid"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Binary","@@"]]}`, "not a canonical Edm.Binary"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Decimal","1"]]}`, "unknown type"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["Timestamp","Edm.DateTime","2020-01-01T00:00:00.0000000Z"]]}`, "system property"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[]} {}`, "more than one JSON value"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.String"]]}`, "is not [name, type, value]"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.String","x","y"]]}`, "is not [name, type, value]"},
		// Names that an entity's JSON reads as annotations: written as they
		// are, "A@odata.type" would retype A at the destination.
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.String","5"],["A@odata.type","Edm.String","Edm.Int64"]]}`, "as an annotation"},
		{`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["odata.etag","Edm.String","x"]]}`, "as an annotation"},
	} {
		_, err := DecodeRecord([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeRecord(%s) = %v, want an error with %q", c.line, err, c.want)
		}
		// The import's fast path must leave every malformed line to
		// DecodeRecord, which says why.
		if _, _, _, _, ok := appendImportFast(nil, []byte(c.line)); ok {
			t.Errorf("appendImportFast took %s", c.line)
		}
	}
	// Past 32 properties repeated names are found with a set.
	var props []string
	for i := range 40 {
		props = append(props, fmt.Sprintf(`["P%d","Edm.Int32","1"]`, i))
	}
	props = append(props, `["P7","Edm.Int32","2"]`)
	line := `{"table":"t","PartitionKey":"p","RowKey":"r","props":[` + strings.Join(props, ",") + `]}`
	if _, err := DecodeRecord([]byte(line)); err == nil || !strings.Contains(err.Error(), `"P7" appears twice`) {
		t.Errorf("DecodeRecord with 41 properties, one repeated = %v", err)
	}
	if _, err := DecodeRecord([]byte(strings.Replace(line, `["P7","Edm.Int32","2"]`, `["P40","Edm.Int32","2"]`, 1))); err != nil {
		t.Errorf("DecodeRecord with 41 distinct properties: %v", err)
	}
}

// FuzzRecord: whatever DecodeRecord accepts re-encodes to a line that
// decodes to the same record and re-encodes to the same bytes, and its
// request body reads back through partita's decoder as the same entity.
func FuzzRecord(f *testing.F) {
	f.Add(bytes.TrimSuffix(AppendRecord(nil, "tab", edgeEntity()), []byte("\n")))
	f.Add([]byte(`{"table":"t","PartitionKey":"","RowKey":"","props":[]}`))
	f.Add([]byte(`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Double","1E+21"],["B","Edm.Boolean","true"]]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := DecodeRecord(line)
		if err != nil {
			return
		}
		enc := AppendRecord(nil, rec.Table, rec.Entity)
		rec2, err := DecodeRecord(bytes.TrimSuffix(enc, []byte("\n")))
		if err != nil {
			t.Fatalf("re-encoded line does not decode: %v\n%s", err, enc)
		}
		if rec2.Table != rec.Table || !sameEntity(rec.Entity, rec2.Entity) {
			t.Fatalf("round trip changed the record:\n%s\n%s", line, enc)
		}
		if enc2 := AppendRecord(nil, rec2.Table, rec2.Entity); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
		if !validForRequest(rec.Entity) {
			return
		}
		body := appendRequestEntity(nil, rec.Entity)
		got, _, _, err := wire.DecodeEntity(body)
		if err != nil {
			t.Fatalf("request body does not decode: %v\n%s", err, body)
		}
		if !sameEntity(got, rec.Entity) {
			t.Fatalf("request body changed the entity:\n%s", body)
		}
	})
}

// validForRequest: property names the service's decoder takes as plain
// properties (no '@', not odata.*), strings that stay themselves in JSON.
func validForRequest(e *partita.Entity) bool {
	for _, p := range e.Properties {
		if strings.ContainsRune(p.Name, '@') || strings.HasPrefix(p.Name, "odata.") {
			return false
		}
	}
	return true
}

// TestStrictRecordLayouts: a record laid out another JSON way (spaces,
// line-free whitespace, escapes, member order) reads as its canonical line.
func TestStrictRecordLayouts(t *testing.T) {
	want := `{"table":"t","PartitionKey":"pé","RowKey":"r😀","props":[["A","Edm.String","x\"y"],["B","Edm.Int32","7"]]}`
	for _, line := range []string{
		` { "props" : [ [ "A" , "Edm.String" , "x\"y" ] , ["B","Edm.Int32","7"] ] , "RowKey":"r\ud83d\ude00", "PartitionKey":"p\u00e9", "table":"t" } `,
		"{\"table\":\"t\",\t\"PartitionKey\":\"p\\u00e9\",\"RowKey\":\"r\\ud83d\\ude00\",\"props\":[[\"A\",\"Edm.String\",\"x\\\"y\"],[\"B\",\"Edm.Int32\",\"7\"]]}",
	} {
		got, err := DecodeRecord([]byte(line))
		if err != nil {
			t.Fatalf("DecodeRecord(%s): %v", line, err)
		}
		w, err := DecodeRecord([]byte(want))
		if err != nil {
			t.Fatal(err)
		}
		if got.Table != w.Table || !sameEntity(got.Entity, w.Entity) {
			t.Errorf("DecodeRecord(%s) = %+v, want %+v", line, got.Entity, w.Entity)
		}
	}
}

// FuzzStrictRecord: whatever the strict reader accepts, encoding/json reads
// the same way (the strict reader only refuses more).
func FuzzStrictRecord(f *testing.F) {
	f.Add([]byte(` { "props" : [ [ "A" , "Edm.String" , "x\"y" ] ] , "RowKey":"r\ud83d\ude00", "PartitionKey":"p", "table":"t" } `))
	f.Add([]byte(`{"table":"t","PartitionKey":"","RowKey":"","props":[]}`))
	f.Add([]byte(`{"table":"t","PartitionKey":"p","RowKey":"r"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if strict, err := strictRecord(line); err == nil {
			readsAsEncodingJSON(t, "strict reader", line, strict)
		}
	})
}

// readsAsEncodingJSON fails t unless encoding/json reads line (which the
// reader named got as got) the same way.
func readsAsEncodingJSON(t *testing.T, reader string, line []byte, got jsonRecord) {
	t.Helper()
	var slow jsonRecord
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&slow); err != nil || d.More() {
		t.Fatalf("%s accepted what encoding/json refuses (%v): %s", reader, err, line)
	}
	same := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	if !same(got.Table, slow.Table) || !same(got.PartitionKey, slow.PartitionKey) || !same(got.RowKey, slow.RowKey) || len(got.Props) != len(slow.Props) {
		t.Fatalf("%s and encoding/json disagree on %s", reader, line)
	}
	for i := range got.Props {
		if strings.Join(got.Props[i], "\x00") != strings.Join(slow.Props[i], "\x00") || len(slow.Props[i]) != 3 {
			t.Fatalf("%s and encoding/json disagree on property %d of %s", reader, i, line)
		}
	}
}

// FuzzFastRecord: whatever the fast line reader accepts, encoding/json
// reads the same way.
func FuzzFastRecord(f *testing.F) {
	f.Add(bytes.TrimSuffix(AppendRecord(nil, "tab", edgeEntity()), []byte("\n")))
	f.Add([]byte(`{"table":"t","PartitionKey":"","RowKey":"","props":[]}`))
	f.Add([]byte(`{"table":"t","PartitionKey":"p","RowKey":"r","props":[["A","Edm.Int32","1"],["B","Edm.String","\u00e9"]]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if fast, ok := fastRecord(line); ok {
			if fast.Table == nil || fast.PartitionKey == nil || fast.RowKey == nil {
				t.Fatalf("fast path accepted a line without its keys: %s", line)
			}
			readsAsEncodingJSON(t, "fast path", line, fast)
		}
	})
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		spec, base, account, table string
		endpoint                   bool
	}{
		{"UseDevelopmentStorage=true", "http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "", true},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + DevKey + ";EndpointSuffix=core.windows.net", "https://acct.table.core.windows.net", "acct", "", true},
		{"AccountName=devstoreaccount1;AccountKey=" + DevKey + ";TableEndpoint=http://127.0.0.1:9/devstoreaccount1/", "http://127.0.0.1:9/devstoreaccount1", "devstoreaccount1", "", true},
		{"TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=sv=2019-02-02&tn=tab1&sig=x", "https://acct.table.core.windows.net", "acct", "tab1", true},
		{"https://acct.table.core.windows.net/tab1?tn=tab1&sv=2019-02-02&sig=x", "https://acct.table.core.windows.net", "acct", "tab1", true},
		{"http://127.0.0.1:9/devstoreaccount1?sv=2019-02-02&ss=t&srt=sco&sp=rl&sig=x", "http://127.0.0.1:9/devstoreaccount1", "devstoreaccount1", "", true},
		{"AccountName=acct;AccountKey=" + DevKey, "https://acct.table.core.windows.net", "acct", "", true},
		{"export/tableendpoint=x.jsonl", "", "", "", false},
		{"backup", "", "", "", false},
	} {
		if got := IsEndpoint(c.spec); got != c.endpoint {
			t.Errorf("IsEndpoint(%q) = %v", c.spec, got)
			continue
		}
		if !c.endpoint {
			continue
		}
		ep, err := ParseEndpoint(c.spec)
		if err != nil {
			t.Errorf("ParseEndpoint(%q): %v", c.spec, err)
			continue
		}
		if ep.Base != c.base || ep.Account != c.account || ep.Table != c.table {
			t.Errorf("ParseEndpoint(%q) = %s %s %s", c.spec, ep.Base, ep.Account, ep.Table)
		}
	}
	for _, bad := range []string{"AccountName=a;AccountKey=!!", "AccountName=a", "TableEndpoint=ftp://x;AccountName=a;AccountKey=" + DevKey, "http://host/acct"} {
		if _, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) succeeded", bad)
		}
	}
}

// TestLineTooLong: a file with a line over maxLine (here: no newline at
// all) is refused as malformed, naming the file once and the line,
// instead of being read whole into memory.
func TestLineTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), maxLine+2), 0o644); err != nil {
		t.Fatal(err)
	}
	lr, err := openLines(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.close()
	_, err = lr.next()
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), ":1: a line longer than") {
		t.Fatalf("next: %v, want ErrMalformed for line 1", err)
	}
	if n := strings.Count(err.Error(), path); n != 1 {
		t.Errorf("next: %v names the file %d times, want once", err, n)
	}
	lr2, err := openLines(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lr2.close()
	if _, _, err := lr2.nextPrepared(); !errors.Is(err, ErrMalformed) || strings.Count(err.Error(), path) != 1 {
		t.Errorf("nextPrepared: %v, want ErrMalformed naming the file once", err)
	}
}

// TestRecordMistakesSaid: a record refused for a mistake users make is told
// as that mistake, not as a shape the reader did not expect.
func TestRecordMistakesSaid(t *testing.T) {
	_, err := DecodeRecord([]byte("\uFEFF" + `{"table":"t","PartitionKey":"p","RowKey":"r","props":[]}`))
	if err == nil || !strings.Contains(err.Error(), "byte order mark") {
		t.Errorf("a line after a BOM: %v, want it named", err)
	}
	for _, name := range []string{"tables", "Tables"} {
		if err := checkTable("source", name); err == nil || !strings.Contains(err.Error(), "is reserved") {
			t.Errorf("table %q: %v, want it called reserved", name, err)
		}
	}
	if err := checkTable("source", "1abc"); err == nil || !strings.Contains(err.Error(), "3 to 63 letters and digits") {
		t.Errorf("table 1abc: %v", err)
	}
}
