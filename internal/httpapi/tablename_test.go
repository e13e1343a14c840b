package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestBatchTablesFoldInASCII: the operations of a changeset name one table,
// with names compared as table names are (ASCII case only). "Kay" with the
// Kelvin sign (U+212A) passed strings.EqualFold against "kay", so its
// operation was written into table kay.
func TestBatchTablesFoldInASCII(t *testing.T) {
	s := obsServer(t, Options{})
	wantStatus(t, do(t, s, "POST", "", "/Tables", nil, []byte(`{"TableName":"kay"}`)), http.StatusCreated)
	op := func(table, rk string) string {
		return strings.Join([]string{"--changeset_k", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
			"POST http://127.0.0.1:10002/devstoreaccount1/" + table + " HTTP/1.1", "Content-Type: application/json", "",
			`{"PartitionKey":"p","RowKey":"` + rk + `"}`}, "\r\n")
	}
	batch := strings.Join([]string{"--batch_k", "Content-Type: multipart/mixed; boundary=changeset_k", "",
		op("KAY", "a"), op("%E2%84%AAay", "b"), "--changeset_k--", "--batch_k--", ""}, "\r\n")
	w := do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_k"}, []byte(batch))
	if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "HTTP/1.1 400") || !strings.Contains(w.Body.String(), `"value":"1:`) {
		t.Errorf("changeset over kay and \\u212Aay: %d %s, want operation 1 refused", w.Code, w.Body)
	}
	if list := do(t, s, "GET", "", "/kay()", nil, nil); strings.Contains(list.Body.String(), `"RowKey"`) {
		t.Errorf("the refused changeset wrote: %s", list.Body)
	}
	// An entity operation on the Kelvin-sign name reaches no table.
	if w := do(t, s, "GET", "", "/%E2%84%AAay()", nil, nil); w.Code != http.StatusNotFound {
		t.Errorf("query of \\u212Aay: %d %s, want 404", w.Code, w.Body)
	}
	if w := do(t, s, "DELETE", "", "/Tables('%E2%84%AAay')", nil, nil); w.Code != http.StatusNotFound {
		t.Errorf("delete table \\u212Aay: %d %s, want 404", w.Code, w.Body)
	}
	wantStatus(t, do(t, s, "GET", "", "/Tables('kay')", nil, nil), http.StatusOK)
}

// TestDeleteWithoutIfMatch: a Delete Entity without If-Match is taken as
// If-Match: * (docs/COMPATIBILITY.md): it deletes the entity, and a
// missing entity is 404.
func TestDeleteWithoutIfMatch(t *testing.T) {
	s := obsServer(t, Options{})
	wantStatus(t, do(t, s, "POST", "", "/Tables", nil, []byte(`{"TableName":"del"}`)), http.StatusCreated)
	wantStatus(t, do(t, s, "POST", "", "/del", nil, []byte(`{"PartitionKey":"p","RowKey":"r"}`)), http.StatusCreated)
	wantStatus(t, do(t, s, "DELETE", "", "/del(PartitionKey='p',RowKey='r')", nil, nil), http.StatusNoContent)
	wantStatus(t, do(t, s, "GET", "", "/del(PartitionKey='p',RowKey='r')", nil, nil), http.StatusNotFound)
	wantStatus(t, do(t, s, "DELETE", "", "/del(PartitionKey='p',RowKey='r')", nil, nil), http.StatusNotFound)
}
