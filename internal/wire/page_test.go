package wire

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/partita/partita"
)

func TestPageEnvelope(t *testing.T) {
	md := EntitiesMetadataURL("http://h/acct", "T", []string{"A", "B"})
	for _, tt := range []struct {
		m    Metadata
		want string
	}{
		{NoMetadata, `{"value":[1,2]}`},
		{MinimalMetadata, `{"odata.metadata":"http://h/acct/$metadata#T&$select=A,B","value":[1,2]}`},
		{FullMetadata, `{"odata.metadata":"http://h/acct/$metadata#T&$select=A,B","value":[1,2]}`},
	} {
		b := AppendPageStart(nil, tt.m, md)
		b = append(b, "1,2"...)
		if got := string(AppendPageEnd(b)); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.m, got, tt.want)
		}
	}
	if got := TablesMetadataURL("http://h/acct"); got != "http://h/acct/$metadata#Tables" {
		t.Errorf("TablesMetadataURL = %s", got)
	}
}

func TestContinuationRoundTrip(t *testing.T) {
	h := http.Header{}
	SetNextKey(h, nil)
	SetNextTable(h, "")
	if len(h) != 0 {
		t.Fatalf("headers without a continuation: %v", h)
	}
	SetNextKey(h, &partita.Key{PartitionKey: "p 1", RowKey: ""})
	SetNextTable(h, "Tab")
	q := url.Values{
		"NextPartitionKey": {h.Get(HeaderNextPartitionKey)},
		"NextRowKey":       {h.Get(HeaderNextRowKey)},
		"NextTableName":    {h.Get(HeaderNextTableName)},
	}
	k, err := ParseNextKey(q)
	if err != nil || k == nil || k.PartitionKey != "p 1" || k.RowKey != "" {
		t.Fatalf("ParseNextKey = %+v, %v", k, err)
	}
	if name, err := ParseNextTable(q); err != nil || name != "Tab" {
		t.Fatalf("ParseNextTable = %q, %v", name, err)
	}
	if k, err := ParseNextKey(url.Values{}); k != nil || err != nil {
		t.Fatalf("no continuation: %+v, %v", k, err)
	}
	// A partition key alone starts at the partition's first row.
	if k, err := ParseNextKey(url.Values{"NextPartitionKey": {EncodeToken("p")}}); err != nil || k.PartitionKey != "p" || k.RowKey != "" {
		t.Fatalf("partition only: %+v, %v", k, err)
	}
	for _, bad := range []url.Values{
		{"NextPartitionKey": {"x"}},
		{"NextPartitionKey": {EncodeToken("p")}, "NextRowKey": {"1!9!AA--"}},
		{"NextRowKey": {EncodeToken("r")}},
		// An empty NextRowKey: the service's 400 (a client that sent one
		// for a continuation without it worked here and failed there).
		{"NextPartitionKey": {EncodeToken("p")}, "NextRowKey": {""}},
		{"NextRowKey": {""}},
	} {
		if _, err := ParseNextKey(bad); partita.ErrorCode(err) != partita.CodeInvalidInput {
			t.Errorf("ParseNextKey(%v) = %v, want InvalidInput", bad, err)
		}
	}
	if _, err := ParseNextTable(url.Values{"NextTableName": {"nope"}}); partita.ErrorCode(err) != partita.CodeInvalidInput {
		t.Errorf("ParseNextTable(bad) = %v", err)
	}
}
