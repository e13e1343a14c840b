package transfer

import (
	"bytes"
	"encoding/json"
	"testing"
)

const samplePage = `{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#t","value":[{"odata.type":"devstoreaccount1.t","odata.id":"http://x/t(PartitionKey='p',RowKey='r')","odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00.0000000Z'\"","PartitionKey":"p","RowKey":"r","S":"a \"quoted\" ] } [ { \\ string","N":5.0},{"PartitionKey":"p","RowKey":"s"}]}`

func TestSplitValues(t *testing.T) {
	for _, c := range []struct {
		body string
		want int
		fast bool
	}{
		{samplePage, 2, true},
		{`{"value":[]}`, 0, true},
		{` { "odata.metadata" : "x" , "value" : [ {"a":[1,{"b":"]"}]} ] } `, 1, true},
		{`{"Value":[{}]}`, 1, false}, // encoding/json matches names case-insensitively
		{`{"value":[{}],"value":[{},{}]}`, 2, false},
	} {
		vs, ok := scanValues([]byte(c.body))
		if ok != c.fast {
			t.Errorf("scanValues(%s) ok = %v", c.body, ok)
		}
		got, err := splitValues([]byte(c.body))
		if err != nil || len(got) != c.want {
			t.Errorf("splitValues(%s) = %d values, %v; want %d", c.body, len(got), err, c.want)
		}
		if ok && len(vs) != len(got) {
			t.Errorf("fast and slow paths disagree on %s", c.body)
		}
	}
	if _, err := splitValues([]byte(`{"value":[{]}`)); err == nil {
		t.Error("a broken body splits")
	}
}

// FuzzSplitValues: on valid JSON the byte scanner finds exactly the
// elements encoding/json finds.
func FuzzSplitValues(f *testing.F) {
	f.Add([]byte(samplePage))
	f.Add([]byte(`{"value":[]}`))
	f.Add([]byte(`{"a":{"value":[{"x":1}]},"value":[{"y":"\u0022]"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		vs, ok := scanValues(body)
		if !ok || !json.Valid(body) {
			return
		}
		var v struct {
			Value []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("scanner accepted what encoding/json refuses (%v): %s", err, body)
		}
		if len(v.Value) != len(vs) {
			t.Fatalf("%d values, encoding/json %d: %s", len(vs), len(v.Value), body)
		}
		for i := range vs {
			if !bytes.Equal(vs[i], v.Value[i]) {
				t.Fatalf("value %d: %s, encoding/json %s", i, vs[i], v.Value[i])
			}
		}
	})
}
