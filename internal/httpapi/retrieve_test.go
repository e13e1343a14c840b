package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// retrieveBatch is a batch holding one GET of target (docs/COMPATIBILITY.md §8).
func retrieveBatch(target string) []byte {
	return []byte(strings.Join([]string{"--batch_r", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"GET " + target + " HTTP/1.1", "Accept: application/json;odata=nometadata", "", "", "--batch_r--", ""}, "\r\n"))
}

// TestRetrieveBatchReadsQueryLikeGetEntity: the GET of a retrieve batch
// reads its query string as Get Entity does. Its $select was ignored (every
// property came back) and a malformed $select or query string passed,
// where the same GET on its own selects, or is 400.
func TestRetrieveBatchReadsQueryLikeGetEntity(t *testing.T) {
	s := obsServer(t, Options{})
	wantStatus(t, do(t, s, "POST", "", "/Tables", nil, []byte(`{"TableName":"retrieve"}`)), http.StatusCreated)
	wantStatus(t, do(t, s, "POST", "", "/retrieve", map[string]string{"Prefer": "return-no-content"},
		[]byte(`{"PartitionKey":"p","RowKey":"r","A":1,"B":"two"}`)), http.StatusNoContent)
	batch := func(query string) (int, string) {
		w := do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_r"},
			retrieveBatch("http://127.0.0.1:10002/devstoreaccount1/retrieve(PartitionKey='p',RowKey='r')"+query))
		return w.Code, w.Body.String()
	}
	for _, tt := range []struct {
		query string
		want  string // in the body of the 200 sub-response
		not   string
	}{
		{"", `"A":1,"B":"two"`, ""},
		{"?$select=A", `{"A":1}`, `"B"`},
		{"?$select=B,Missing", `{"B":"two","Missing":null}`, `"A"`},
		{"?$select=*", `"A":1,"B":"two"`, ""},
	} {
		code, body := batch(tt.query)
		if code != http.StatusAccepted || !strings.Contains(body, "HTTP/1.1 200") || !strings.Contains(body, tt.want) ||
			(tt.not != "" && strings.Contains(body, tt.not)) {
			t.Errorf("retrieve%s: %d %s, want 202 with a 200 holding %s", tt.query, code, body, tt.want)
		}
	}
	for _, query := range []string{"?$select=,", "?$select=A,,B", "?$select=%zz"} {
		direct := do(t, s, "GET", "", "/retrieve(PartitionKey='p',RowKey='r')"+query, nil, nil)
		code, body := batch(query)
		if code != direct.Code || code != http.StatusBadRequest {
			t.Errorf("retrieve%s: %d %s; Get Entity %d", query, code, body, direct.Code)
		}
	}
}

// TestChangesetRefusesBadQueryString: a write of a changeset whose query
// string does not decode fails as the same write on its own does (400
// InvalidQueryParameterValue), instead of being applied.
func TestChangesetRefusesBadQueryString(t *testing.T) {
	s := obsServer(t, Options{})
	wantStatus(t, do(t, s, "POST", "", "/Tables", nil, []byte(`{"TableName":"badquery"}`)), http.StatusCreated)
	direct := do(t, s, "POST", "", "/badquery?$format=%zz", nil, []byte(`{"PartitionKey":"p","RowKey":"direct"}`))
	batch := strings.Join([]string{"--batch_q", "Content-Type: multipart/mixed; boundary=changeset_q", "",
		"--changeset_q", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"POST http://127.0.0.1:10002/devstoreaccount1/badquery?$format=%zz HTTP/1.1", "Content-Type: application/json", "",
		`{"PartitionKey":"p","RowKey":"batch"}`, "--changeset_q--", "--batch_q--", ""}, "\r\n")
	w := do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_q"}, []byte(batch))
	if direct.Code != http.StatusBadRequest || w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "HTTP/1.1 400") ||
		!strings.Contains(w.Body.String(), "InvalidQueryParameterValue") {
		t.Errorf("insert with a bad query string: alone %d, in a changeset %d %s", direct.Code, w.Code, w.Body)
	}
	list := do(t, s, "GET", "", "/badquery()", nil, nil)
	if strings.Contains(list.Body.String(), `"RowKey"`) {
		t.Errorf("a write with a bad query string was applied: %s", list.Body)
	}
}

// TestBatchSubRequestPathWithBadEscape: a sub-request's path is not checked
// by net/http as the request line is, so parseResource meets bad escapes
// there; one before "%28" in a name that changes length in upper case
// panicked (a 500 InternalError for the batch) instead of a 400.
func TestBatchSubRequestPathWithBadEscape(t *testing.T) {
	s := obsServer(t, Options{})
	target := "http://127.0.0.1:10002/devstoreaccount1/%zz\u0250\u0250\u0250\u0250%28"
	w := do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_r"}, retrieveBatch(target))
	if w.Code != http.StatusBadRequest {
		t.Errorf("retrieve of %q: %d %s, want 400", target, w.Code, w.Body)
	}
	batch := strings.Join([]string{"--batch_e", "Content-Type: multipart/mixed; boundary=changeset_e", "",
		"--changeset_e", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "",
		"POST " + target + " HTTP/1.1", "Content-Type: application/json", "",
		`{"PartitionKey":"p","RowKey":"r"}`, "--changeset_e--", "--batch_e--", ""}, "\r\n")
	w = do(t, s, "POST", "", "/$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_e"}, []byte(batch))
	if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "HTTP/1.1 400") {
		t.Errorf("insert into %q: %d %s, want 202 with a 400", target, w.Code, w.Body)
	}
}
