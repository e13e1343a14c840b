package nullserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestNullEntitySize: the do-nothing server's canned entity is valid JSON
// whose Payload has the requested size, for a point GET and in a query.
func TestNullEntitySize(t *testing.T) {
	for _, size := range []int{0, 10, 1024} {
		h := Handler(size)
		for _, path := range []string{"/devstoreaccount1/t(PartitionKey='p',RowKey='r')", "/devstoreaccount1/t()"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			var e struct {
				Payload string
				Value   []struct{ Payload string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("%d %s: %v\n%s", size, path, err, rec.Body.String())
			}
			if len(e.Value) == 1 {
				e.Payload = e.Value[0].Payload
			}
			if len(e.Payload) != size || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("%d %s: payload %d bytes, Content-Length %s for %d", size, path, len(e.Payload), rec.Header().Get("Content-Length"), rec.Body.Len())
			}
		}
	}
}
