package wire

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/partita/partita"
)

// The continuation headers of a query response page.
const (
	HeaderNextPartitionKey = "x-ms-continuation-NextPartitionKey"
	HeaderNextRowKey       = "x-ms-continuation-NextRowKey"
	HeaderNextTableName    = "x-ms-continuation-NextTableName"
)

// AppendPageStart appends the opening of a query response page:
// {"odata.metadata":<metadataURL>,"value":[ — without the metadata member
// at NoMetadata. The caller appends the items, comma-separated, then
// AppendPageEnd.
func AppendPageStart(b []byte, m Metadata, metadataURL string) []byte {
	b = append(b, '{')
	if m != NoMetadata {
		b = append(b, `"odata.metadata":`...)
		b = appendString(b, metadataURL)
		b = append(b, ',')
	}
	return append(b, `"value":[`...)
}

// AppendPageEnd closes a page opened by AppendPageStart.
func AppendPageEnd(b []byte) []byte { return append(b, "]}"...) }

// EntitiesMetadataURL is the metadata URL of an entity query on table,
// naming the selected properties (sel nil means all of them).
func EntitiesMetadataURL(base, table string, sel []string) string {
	md := base + "/$metadata#" + table
	if sel != nil {
		md += "&$select=" + strings.Join(sel, ",")
	}
	return md
}

// TablesMetadataURL is the metadata URL of a table query.
func TablesMetadataURL(base string) string { return base + "/$metadata#Tables" }

// SetNextKey sets the continuation headers of an entity query page that
// stopped before next; nothing when next is nil.
func SetNextKey(h http.Header, next *partita.Key) {
	if next == nil {
		return
	}
	h.Set(HeaderNextPartitionKey, EncodeToken(next.PartitionKey))
	h.Set(HeaderNextRowKey, EncodeToken(next.RowKey))
}

// ParseNextKey reads the continuation of an entity query from its
// NextPartitionKey and NextRowKey parameters: nil when both are absent or
// the first is empty and the second absent. A malformed token is
// InvalidInput, and so is an empty NextRowKey, as the service answers a
// client that sends one for a continuation without it. A missing
// NextRowKey starts at the partition's first row.
func ParseNextKey(q url.Values) (*partita.Key, error) {
	npk, nrk := q.Get("NextPartitionKey"), q.Get("NextRowKey")
	if nrk == "" && q.Has("NextRowKey") {
		return nil, invalidInput()
	}
	if npk == "" && nrk == "" {
		return nil, nil
	}
	pk, ok1 := DecodeToken(npk)
	rk, ok2 := DecodeToken(nrk)
	if !ok1 || (!ok2 && nrk != "") {
		return nil, invalidInput()
	}
	return &partita.Key{PartitionKey: pk, RowKey: rk}, nil
}

// SetNextTable sets the continuation header of a table query page that
// stopped before the table named next; nothing when next is "".
func SetNextTable(h http.Header, next string) {
	if next != "" {
		h.Set(HeaderNextTableName, EncodeToken(next))
	}
}

// ParseNextTable reads the continuation of a table query from its
// NextTableName parameter: "" when absent. A malformed token is
// InvalidInput.
func ParseNextTable(q url.Values) (string, error) {
	t := q.Get("NextTableName")
	if t == "" {
		return "", nil
	}
	name, ok := DecodeToken(t)
	if !ok {
		return "", invalidInput()
	}
	return name, nil
}
