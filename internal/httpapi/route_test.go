package httpapi

import (
	"net/url"
	"strings"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/odata"
)

func TestStatusByCode_Complete(t *testing.T) {
	for _, c := range partita.Codes {
		if _, ok := statusByCode[c]; !ok {
			t.Errorf("code %s has no HTTP status", c)
		}
	}
}

func TestParseResource(t *testing.T) {
	for _, tt := range []struct {
		in   string
		kind resourceKind
		tbl  string
		pk   string
		rk   string
		code partita.Code
	}{
		{in: "", kind: resService},
		{in: "Tables", kind: resTables},
		{in: "Tables()", kind: resTables},
		{in: "Tables('abc')", kind: resTable, tbl: "abc"},
		{in: "$batch", kind: resBatch},
		{in: "mytable", kind: resEntities, tbl: "mytable"},
		{in: "mytable()", kind: resEntities, tbl: "mytable"},
		{in: "t(PartitionKey='a',RowKey='b')", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t(RowKey='b',PartitionKey='a')", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t(PartitionKey = 'a' , RowKey = 'b')", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t(PartitionKey='O%27%27Brien',RowKey='')", kind: resEntity, tbl: "t", pk: "O'Brien", rk: ""},
		{in: "t(PartitionKey='O''Brien',RowKey='a%20b')", kind: resEntity, tbl: "t", pk: "O'Brien", rk: "a b"},
		{in: "t(PartitionKey='a+b',RowKey='%C3%BC')", kind: resEntity, tbl: "t", pk: "a+b", rk: "ü"},
		{in: "t(PartitionKey='a',RowKey='r'k')", code: partita.CodeInvalidInput},
		{in: "t(PartitionKey='a%2Fb',RowKey='r')", code: partita.CodeInvalidInput},
		{in: "t(PartitionKey='a',RowKey='r'", code: partita.CodeInvalidInput},
		{in: "t(PartitionKey='a')", code: partita.CodeInvalidInput},
		{in: "t(PartitionKey='a',PartitionKey='b')", code: partita.CodeInvalidInput},
		{in: "t(Foo='a',RowKey='b')", code: partita.CodeInvalidInput},
		// The path is decoded before it is split (what net/url sends for a
		// url.URL built from the literal form), in either case of hex.
		{in: "t%28PartitionKey=%27a%27,RowKey=%27b%27%29", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t%28PartitionKey%3d%27a%27%2cRowKey%3D%27b%27%29", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t%28PartitionKey='a',RowKey='b')", kind: resEntity, tbl: "t", pk: "a", rk: "b"},
		{in: "t(PartitionKey='a%28x%29',RowKey='(b)')", kind: resEntity, tbl: "t", pk: "a(x)", rk: "(b)"},
		{in: "t%28PartitionKey=%27O%27%27Brien%27,RowKey=%27%27%29", kind: resEntity, tbl: "t", pk: "O'Brien", rk: ""},
		{in: "t%28%29", kind: resEntities, tbl: "t"},
		{in: "%74able", kind: resEntities, tbl: "table"},
		{in: "Tables%28%27abc%27%29", kind: resTable, tbl: "abc"},
		{in: "Tables%28'abc'%29", kind: resTable, tbl: "abc"},
		{in: "Tables%28%29", kind: resTables},
		{in: "%24batch", kind: resBatch},
		{in: "t%28PartitionKey=%27a%27,RowKey=%27b%27", code: partita.CodeInvalidInput},
		{in: "t%2", code: partita.CodeInvalidInput},
		{in: "t(PartitionKey='%zz',RowKey='b')", code: partita.CodeInvalidInput},
		// A bad escape before an escaped '(' whose text changes length in
		// upper case (invalid UTF-8, U+0250): a panic once (FuzzParseResource).
		{in: "%\x8c\x8c%28", code: partita.CodeInvalidInput},
		{in: "%zz\u0250\u0250\u0250\u0250%28", code: partita.CodeInvalidInput},
		{in: "t\u0250\u0250\u0250\u0250%28PartitionKey=%27%zz%27,RowKey=%27b%27%29", code: partita.CodeInvalidInput},
	} {
		r, err := parseResource(tt.in)
		if tt.code != "" {
			if partita.ErrorCode(err) != tt.code {
				t.Errorf("parseResource(%q) = %+v, %v, want %s", tt.in, r, err, tt.code)
			}
			continue
		}
		if err != nil || r.kind != tt.kind || r.table != tt.tbl || r.key.PartitionKey != tt.pk || r.key.RowKey != tt.rk {
			t.Errorf("parseResource(%q) = %+v, %v", tt.in, r, err)
		}
	}
}

func TestParseResource_Lenient(t *testing.T) {
	for _, tt := range []struct{ in, pk, rk string }{
		{"t(PartitionKey='O%27Brien',RowKey='it%27s, ok')", "O'Brien", "it's, ok"},
		{"t(PartitionKey='p%271',RowKey='x%27%27y')", "p'1", "x''y"}, // strict parse fails, so nothing is doubled
		{"t(PartitionKey='a',RowKey='b')", "a", "b"},
		{"t(PartitionKey=''',RowKey='end'')", "'", "end'"},
	} {
		r, err := parseResourceMode(tt.in, true)
		if err != nil || r.key.PartitionKey != tt.pk || r.key.RowKey != tt.rk {
			t.Errorf("lenient parse of %q = %+v, %v; want (%q,%q)", tt.in, r.key, err, tt.pk, tt.rk)
		}
	}
}

// FuzzParseResource: no panic; every parsed entity key, written back the
// way the Go SDK writes it (quotes doubled, path-escaped), parses to the
// same key.
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"t(PartitionKey='a',RowKey='b')", "Tables('x')", "t(PartitionKey='%27%27',RowKey='%F0%9F%98%80')", "t()", "$batch"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := parseResource(in)
		if err != nil {
			if partita.ErrorCode(err) == partita.CodeInternal {
				t.Fatalf("parseResource(%q): non-client error %v", in, err)
			}
			return
		}
		if r.kind != resEntity {
			return
		}
		enc := func(k string) string { return url.PathEscape(strings.ReplaceAll(k, "'", "''")) }
		again := url.PathEscape(r.table) + "(PartitionKey='" + enc(r.key.PartitionKey) + "',RowKey='" + enc(r.key.RowKey) + "')"
		r2, err := parseResource(again)
		if err != nil || r2 != r {
			t.Fatalf("parseResource(%q) = %+v; re-encoded %q gives %+v, %v", in, r, again, r2, err)
		}
	})
}

// TestClassifyFilterErrors checks the one edge between odata and HTTP: each
// kind of $filter error gets the service's code, status and message.
func TestClassifyFilterErrors(t *testing.T) {
	for _, tt := range []struct {
		filter string
		code   partita.Code
		status int
		msg    string
	}{
		{"A eq", partita.CodeInvalidInput, 400, "Syntax error at position 4 in 'A eq'."},
		{"A eq 1x", partita.CodeInvalidInput, 400, "Syntax error at position 7 in 'A eq 1x'."},
		{"A eq null", partita.CodeInvalidInput, 400, partita.MsgInvalidInput},
		{"A eq B", partita.CodeNotImplemented, 501, partita.MsgNotImplemented},
	} {
		_, err := odata.Parse(tt.filter)
		code, msg := classify(err)
		if code != tt.code || msg != tt.msg || statusOf(code) != tt.status {
			t.Errorf("%q: got %s %d %q, want %s %d %q", tt.filter, code, statusOf(code), msg, tt.code, tt.status, tt.msg)
		}
	}
}
