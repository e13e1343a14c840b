package wire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

func decode(t *testing.T, body string) *partita.Entity {
	t.Helper()
	e, _, _, err := DecodeEntity([]byte(body))
	if err != nil {
		t.Fatalf("DecodeEntity(%s): %v", body, err)
	}
	return e
}

func TestDecodeEntity_Inference(t *testing.T) {
	e := decode(t, `{"PartitionKey":"p","RowKey":"r","Timestamp":"x","odata.etag":"y","I":5,"D":5.0,"E":1e3,"Big":3000000000,"B":true,"S":"s","N":null,
		"L@odata.type":"Edm.Int64","L":"5000000000","T":"2020-01-01T00:00:00.123Z","T@odata.type":"Edm.DateTime",
		"G@odata.type":"Edm.Guid","G":"C9DA6455-213D-42C9-9A79-3E9149A57833","X@odata.type":"Edm.Binary","X":"AQI",
		"A@odata.type":"Edm.Double","A":"-Infinity","J@odata.type":"Edm.Int32","J":"7","Orphan@odata.type":"Edm.String"}`)
	got := map[string]string{}
	for _, p := range e.Properties {
		got[p.Name] = p.Value.Type.String()
	}
	want := map[string]string{"I": "Edm.Int32", "D": "Edm.Double", "E": "Edm.Double", "Big": "Edm.Double", "B": "Edm.Boolean",
		"S": "Edm.String", "L": "Edm.Int64", "T": "Edm.DateTime", "G": "Edm.Guid", "X": "Edm.Binary", "A": "Edm.Double", "J": "Edm.Int32"}
	if len(got) != len(want) {
		t.Fatalf("properties %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if g, _ := e.Get("G"); g.Str != "c9da6455-213d-42c9-9a79-3e9149a57833" {
		t.Errorf("Guid not canonical: %q", g.Str)
	}
}

// TestDecodeEntity_ManyAnnotations: past the first few, annotations are
// looked up in a map; each property gets its own annotation's type, wherever
// the annotation stands.
func TestDecodeEntity_ManyAnnotations(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
	const n = 60
	for i := range n {
		switch i % 3 {
		case 0: // annotation first
			fmt.Fprintf(&b, `,"I%d@odata.type":"Edm.Int64","I%d":"%d"`, i, i, i)
		case 1: // annotation after
			fmt.Fprintf(&b, `,"I%d":"%d","I%d@odata.type":"Edm.Int64"`, i, i, i)
		default: // none: inferred
			fmt.Fprintf(&b, `,"I%d":%d`, i, i)
		}
	}
	b.WriteString("}")
	e := decode(t, b.String())
	if len(e.Properties) != n {
		t.Fatalf("%d properties, want %d", len(e.Properties), n)
	}
	for i := range n {
		v, ok := e.Get(fmt.Sprintf("I%d", i))
		want := edm.Int64Value(int64(i))
		if i%3 == 2 {
			want = edm.Int32Value(int32(i))
		}
		if !ok || !v.Equal(want) {
			t.Errorf("I%d = %#v, want %#v", i, v, want)
		}
	}
}

// TestDecodeEntity_AnnotationsAreNotQuadratic: a 4 MiB body of ~127,000
// properties and as many annotations of other names took ~38 s of CPU to
// refuse when each property scanned every annotation; it must be refused
// (too many properties) in a small fraction of that.
func TestDecodeEntity_AnnotationsAreNotQuadratic(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
	for i := 0; b.Len() < 4<<20-64; i++ {
		fmt.Fprintf(&b, `,"a%d":1,"b%d@odata.type":""`, i, i)
	}
	b.WriteString("}")
	start := time.Now()
	e, _, _, err := DecodeEntity(b.Bytes())
	if err == nil {
		err = e.Validate()
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("decoding took %v", took)
	}
	if partita.ErrorCode(err) != partita.CodeTooManyProperties {
		t.Errorf("err = %v, want TooManyProperties", err)
	}
}

func TestDecodeEntity_Errors(t *testing.T) {
	for _, tt := range []struct{ body, code string }{
		{`{"PartitionKey":"p","RowKey":"r","A":{}}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A":[1]}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A":1,"A":2}`, "DuplicatePropertiesSpecified"},
		{`{"PartitionKey":null,"RowKey":"r"}`, "PropertiesNeedValue"},
		{`{"PartitionKey":1,"RowKey":"r"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Decimal","A":"1"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"","A":"1"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":"9223372036854775808"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Guid","A":"nope"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":""}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"0001-01-01T00:00:00Z"}`, "OutOfRangeInput"},
		{`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Binary","A":"!!"}`, "InvalidInput"},
		{`{"PartitionKey":"p"`, "InvalidInput"},
		{`{"PartitionKey":"p"} trailing`, "InvalidInput"},
		{"{\"PartitionKey\":\"\xff\"}", "InvalidInput"},
		// Unpaired surrogates: U+FFFD in their place would make "d\ud800"
		// and "d\udbff" one key.
		{`{"PartitionKey":"p","RowKey":"d\ud800"}`, "InvalidInput"},
		{`{"PartitionKey":"d\udfff","RowKey":"r"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","S":"x\ud83dy"}`, "InvalidInput"},
		{`{"PartitionKey":"p","RowKey":"r","S\udc00":"x"}`, "InvalidInput"},
		{`[]`, "InvalidInput"},
	} {
		_, _, _, err := DecodeEntity([]byte(tt.body))
		if got := partita.ErrorCode(err); string(got) != tt.code {
			t.Errorf("DecodeEntity(%s) = %v, want %s", tt.body, err, tt.code)
		}
	}
}

func TestAppendEntity_Forms(t *testing.T) {
	e := decode(t, `{"PartitionKey":"p","RowKey":"r","D":5.0,"N@odata.type":"Edm.Double","N":"NaN","L@odata.type":"Edm.Int64","L":"-1","T@odata.type":"Edm.DateTime","T":"2020-01-01T00:00:00.5000000Z"}`)
	e.Timestamp = 638_000_000_000_000_000
	o := &EntityOptions{Base: "http://h/acct", Account: "acct", Table: "tb", Element: true}
	got := string(AppendEntity(nil, e, o))
	for _, want := range []string{`"odata.metadata":"http://h/acct/$metadata#tb/@Element"`, `"D":5.0`, `"N@odata.type":"Edm.Double","N":"NaN"`,
		`"L@odata.type":"Edm.Int64","L":"-1"`, `"T@odata.type":"Edm.DateTime","T":"2020-01-01T00:00:00.5Z"`, `"odata.etag":"W/\"datetime'`} {
		if !strings.Contains(got, want) {
			t.Errorf("minimal %s lacks %s", got, want)
		}
	}
	o.Metadata = NoMetadata
	got = string(AppendEntity(nil, e, o))
	if strings.Contains(got, "odata") || !strings.Contains(got, `"L":"-1"`) || !strings.Contains(got, `"N":"NaN"`) {
		t.Errorf("nometadata %s", got)
	}
	o.Metadata = FullMetadata
	got = string(AppendEntity(nil, e, o))
	for _, want := range []string{`"odata.type":"acct.tb"`, `"odata.id":"http://h/acct/tb(PartitionKey='p',RowKey='r')"`, `"odata.editLink":"tb(PartitionKey='p',RowKey='r')"`, `"Timestamp@odata.type":"Edm.DateTime"`} {
		if !strings.Contains(got, want) {
			t.Errorf("fullmetadata %s lacks %s", got, want)
		}
	}
	o.Metadata, o.Select = MinimalMetadata, []string{"RowKey", "Missing", "D"}
	got = string(AppendEntity(nil, e, o))
	if !strings.Contains(got, `"RowKey":"r","Missing":null,"D":5.0`) || strings.Contains(got, "PartitionKey") {
		t.Errorf("select: %s", got)
	}
}

func TestToken_RoundTrip(t *testing.T) {
	for _, s := range []string{"", "Smith", "a b", "ünï", "=="} {
		tok := EncodeToken(s)
		if tok == "" || strings.ContainsAny(tok, " ") {
			t.Errorf("EncodeToken(%q) = %q", s, tok)
		}
		if got, ok := DecodeToken(tok); !ok || got != s {
			t.Errorf("DecodeToken(EncodeToken(%q)) = %q, %v", s, got, ok)
		}
	}
	if EncodeToken("Smith") != "1!8!U21pdGg-" {
		t.Errorf("EncodeToken(Smith) = %s, want the service's 1!8!U21pdGg-", EncodeToken("Smith"))
	}
	for _, bad := range []string{"", "x", "1!3!abc", "2!4!U21p", "1!x!", "1!4!@@@@"} {
		if _, ok := DecodeToken(bad); ok {
			t.Errorf("DecodeToken(%q) accepted", bad)
		}
	}
}

// FuzzDecodeEntity: decode → encode (minimal metadata) → decode is stable.
func FuzzDecodeEntity(f *testing.F) {
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","I":5,"D":0.1,"L@odata.type":"Edm.Int64","L":"5","B":false}`))
	f.Add([]byte(`{"PartitionKey":"","RowKey":"\u00e9\"\\","X@odata.type":"Edm.Binary","X":"AA==","G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833"}`))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","T@odata.type":"Edm.DateTime","T":"2020-01-01T00:00:00+01:00","N@odata.type":"Edm.Double","N":"Infinity","E":-1e-7}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e, _, _, err := DecodeEntity(body)
		if err != nil {
			if partita.ErrorCode(err) == partita.CodeInternal {
				t.Fatalf("non-client error %v", err)
			}
			return
		}
		out := AppendEntity(nil, e, &EntityOptions{Table: "t"})
		e2, _, _, err := DecodeEntity(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if e.PartitionKey != e2.PartitionKey || e.RowKey != e2.RowKey || len(e.Properties) != len(e2.Properties) {
			t.Fatalf("round trip changed keys or count: %s", out)
		}
		for i := range e.Properties {
			a, b := e.Properties[i], e2.Properties[i]
			if a.Name != b.Name || !a.Value.Equal(b.Value) {
				t.Fatalf("property %s: %+v became %+v via %s", a.Name, a.Value, b.Value, out)
			}
		}
	})
}

func BenchmarkAppendEntity(b *testing.B) {
	e, _, _, _ := DecodeEntity([]byte(`{"PartitionKey":"partition","RowKey":"row-000042","Name":"some name here","Age":42,"Score":3.25,"When@odata.type":"Edm.DateTime","When":"2020-01-01T00:00:00Z","Active":true}`))
	o := &EntityOptions{Base: "http://127.0.0.1:10002/devstoreaccount1", Table: "t"}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendEntity(buf[:0], e, o)
	}
}

func BenchmarkDecodeEntity(b *testing.B) {
	body := []byte(`{"PartitionKey":"partition","RowKey":"row-000042","Name":"some name here","Age":42,"Score":3.25,"When@odata.type":"Edm.DateTime","When":"2020-01-01T00:00:00Z","Active":true}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := DecodeEntity(body); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeToken: no panic; every accepted token re-encodes to itself, and
// every string round-trips through a token.
func FuzzDecodeToken(f *testing.F) {
	for _, s := range []string{"1!8!U21pdGg-", "1!0!", "1!4!YQ--", "garbage", "1!99!x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if s, ok := DecodeToken(tok); ok {
			if again, ok := DecodeToken(EncodeToken(s)); !ok || again != s {
				t.Fatalf("token %q decodes to %q, which does not round-trip", tok, s)
			}
		}
		enc := EncodeToken(tok)
		if got, ok := DecodeToken(enc); !ok || got != tok || enc == "" || strings.ContainsAny(enc, " ") {
			t.Fatalf("EncodeToken(%q) = %q does not round-trip", tok, enc)
		}
	})
}

// FuzzAppendString: the word-at-a-time escaper gives the same bytes as a
// plain byte loop, and valid UTF-8 decodes back through encoding/json.
func FuzzAppendString(f *testing.F) {
	f.Add("plain ascii text longer than eight bytes")
	f.Add("ab\"cd\\ef\x00gh\x1fij\x7f\u00e9\u2028end")
	f.Add(strings.Repeat("\\", 17) + "\"")
	f.Fuzz(func(t *testing.T, s string) {
		var want []byte
		want = append(want, '"')
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				want = append(want, '\\', c)
			case c == '\n':
				want = append(want, `\n`...)
			case c == '\r':
				want = append(want, `\r`...)
			case c == '\t':
				want = append(want, `\t`...)
			case c < 0x20:
				want = append(want, fmt.Sprintf(`\u%04x`, c)...)
			default:
				want = append(want, c)
			}
		}
		want = append(want, '"')
		got := appendString([]byte("x"), s)
		if string(got[1:]) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
		if utf8.ValidString(s) {
			var back string
			if err := json.Unmarshal(got[1:], &back); err != nil || back != s {
				t.Fatalf("%q: encoding/json reads %s as %q (%v)", s, got[1:], back, err)
			}
		}
	})
}

// BenchmarkAppendEntity1K is the bench tool's entity: three properties, a
// 1 KiB payload string.
func BenchmarkAppendEntity1K(b *testing.B) {
	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 16)
	e, _, _, err := DecodeEntity([]byte(`{"PartitionKey":"p0007","RowKey":"r000000001234","Seq@odata.type":"Edm.Int64","Seq":"1234","Bucket":234,"Payload":"` + payload + `"}`))
	if err != nil {
		b.Fatal(err)
	}
	e.Timestamp = 638000000001234567
	o := &EntityOptions{Base: "http://127.0.0.1:10002/devstoreaccount1", Table: "t"}
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendEntity(buf[:0], e, o)
	}
}

// TestAppendXMLErrorEscapes checks that a message quoting request input
// stays well-formed XML and reads back as written.
func TestAppendXMLErrorEscapes(t *testing.T) {
	msg := `The table name 'a<b>&"c' is invalid.`
	body := AppendXMLError([]byte("prefix:"), "InvalidResourceName", msg, "rid-1", 0)
	if !bytes.HasPrefix(body, []byte("prefix:")) {
		t.Fatalf("prefix lost: %q", body)
	}
	var doc struct {
		Code    string `xml:"code"`
		Message string `xml:"message"`
	}
	if err := xml.Unmarshal(body[len("prefix:"):], &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, body)
	}
	if doc.Code != "InvalidResourceName" {
		t.Errorf("code = %q", doc.Code)
	}
	if !strings.HasPrefix(doc.Message, msg+"\nRequestId:rid-1\nTime:") {
		t.Errorf("message = %q", doc.Message)
	}
}

// TestAppendErrorInvalidUTF8: a message quoting request bytes that are not
// UTF-8 still gives a valid JSON (and XML) body, the bad bytes as U+FFFD.
func TestAppendErrorInvalidUTF8(t *testing.T) {
	msg := "The etag value 'a\xff\xfe\"b' is not valid."
	body := AppendError(nil, "InvalidInput", msg, "rid-1", 0)
	if !utf8.Valid(body) {
		t.Fatalf("JSON error body is not UTF-8: %q", body)
	}
	var doc struct {
		Err struct {
			Message struct{ Value string } `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	if want := "The etag value 'a\uFFFD\"b' is not valid.\nRequestId:rid-1\nTime:"; !strings.HasPrefix(doc.Err.Message.Value, want) {
		t.Errorf("message = %q, want prefix %q", doc.Err.Message.Value, want)
	}
	if x := AppendXMLError(nil, "InvalidInput", msg, "rid-1", 0); !utf8.Valid(x) {
		t.Errorf("XML error body is not UTF-8: %q", x)
	}
}

// TestAppendEntity_LongSelect checks the index a long $select uses against
// looking each name up, over entities of different shapes written with one
// options value (the index is reused across a page).
func TestAppendEntity_LongSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ents []*partita.Entity
	for i := 0; i < 40; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"PartitionKey":"p","RowKey":"r%d"`, i)
		for j, n := range rng.Perm(80)[:rng.IntN(60)] {
			fmt.Fprintf(&b, `,"p%d":%d`, n, j)
		}
		ents = append(ents, decode(t, b.String()+"}"))
	}
	defer func(m int) { selectIndexMin = m }(selectIndexMin)
	for round := 0; round < 20; round++ {
		var sel []string
		seen := map[string]bool{}
		for k := 0; k < 1+rng.IntN(100); k++ {
			n := fmt.Sprintf("p%d", rng.IntN(90))
			switch rng.IntN(10) {
			case 0:
				n = "RowKey"
			case 1:
				n = "Timestamp"
			}
			if !seen[n] {
				seen[n] = true
				sel = append(sel, n)
			}
		}
		for _, m := range []Metadata{NoMetadata, MinimalMetadata, FullMetadata} {
			indexed := &EntityOptions{Metadata: m, Base: "http://h/a", Account: "a", Table: "t", Select: sel}
			for _, e := range ents {
				selectIndexMin = 1 << 30
				want := AppendEntity(nil, e, &EntityOptions{Metadata: m, Base: "http://h/a", Account: "a", Table: "t", Select: sel})
				selectIndexMin = 0
				if got := AppendEntity(nil, e, indexed); !bytes.Equal(got, want) {
					t.Fatalf("select %v of %s:\n got %s\nwant %s", sel, e.RowKey, got, want)
				}
			}
			// Options given another selection index it anew.
			other := slices.Clone(sel)
			slices.Reverse(other)
			indexed.Select = other
			selectIndexMin = 1 << 30
			want := AppendEntity(nil, ents[0], &EntityOptions{Metadata: m, Base: "http://h/a", Account: "a", Table: "t", Select: other})
			selectIndexMin = 0
			if got := AppendEntity(nil, ents[0], indexed); !bytes.Equal(got, want) {
				t.Fatalf("reselected %v:\n got %s\nwant %s", other, got, want)
			}
		}
	}
}

// BenchmarkAppendEntityLongSelect writes a 250-property entity with a
// $select of 1,000 names, four of them present.
func BenchmarkAppendEntityLongSelect(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
	for j := 0; j < 250; j++ {
		fmt.Fprintf(&body, `,"p%03d":%d`, j, j)
	}
	e, _, _, err := DecodeEntity([]byte(body.String() + "}"))
	if err != nil {
		b.Fatal(err)
	}
	sel := []string{"p001", "p100", "p200", "p249"}
	for i := 0; i < 996; i++ {
		sel = append(sel, fmt.Sprintf("q%d", i))
	}
	o := &EntityOptions{Base: "http://h/a", Table: "t", Select: sel}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendEntity(buf[:0], e, o)
	}
}
