package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/partita/partita/internal/advisor"
	"github.com/partita/partita/internal/metrics"
)

// BenchmarkObserve measures what metrics and the advisor cost on the
// hottest paths: a point get and an insert through ServeHTTP over the
// in-memory engine, with both off and with both on. Compare the pairs
// with benchstat (docs/PERFORMANCE.md, "Metrics and the advisor"):
//
//	go test ./internal/httpapi -run '^$' -bench 'Observe' -count 10 -benchmem
func BenchmarkObserve(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		newServer := func() *Server {
			var o Options
			if on {
				o.Metrics = metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
				o.Advisor = advisor.New(advisor.Options{})
			}
			s := obsServer(b, o)
			wantStatus(b, do(b, s, "POST", "", "/Tables", map[string]string{"Prefer": "return-no-content"}, []byte(`{"TableName":"bench"}`)), 204)
			return s
		}
		b.Run("GetEntity/"+name, func(b *testing.B) {
			s := newServer()
			for i := 0; i < 100; i++ {
				wantStatus(b, do(b, s, "POST", "", "/bench", map[string]string{"Prefer": "return-no-content"},
					[]byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%d","Name":"entity %d","N":%d}`, i%10, i, i, i))), 204)
			}
			tmpl := signedRequest(b, "GET", "/devstoreaccount1/bench(PartitionKey='p7',RowKey='r7')")
			tmpl.Header.Set("Accept", "application/json;odata=nometadata")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := *tmpl
				w := httptest.NewRecorder()
				s.ServeHTTP(w, &r)
				if w.Code != 200 {
					b.Fatalf("get: %d %s", w.Code, w.Body)
				}
			}
		})
		b.Run("InsertEntity/"+name, func(b *testing.B) {
			s := newServer()
			tmpl := signedRequest(b, "POST", "/devstoreaccount1/bench")
			tmpl.Header.Set("Accept", "application/json;odata=nometadata")
			tmpl.Header.Set("Content-Type", "application/json")
			tmpl.Header.Set("Prefer", "return-no-content")
			bodies := make([][]byte, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%1024 == 0 {
					// A fresh engine every 1024 inserts keeps the
					// in-memory engine's sorted inserts from dominating.
					b.StopTimer()
					s = newServer()
					bodies = bodies[:0]
					for k := 0; k < 1024; k++ {
						bodies = append(bodies, []byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%08d","Name":"entity","N":%d}`, k%16, i+k, k)))
					}
					b.StartTimer()
				}
				body := bodies[i%1024]
				r := *tmpl
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
				w := httptest.NewRecorder()
				s.ServeHTTP(w, &r)
				if w.Code != http.StatusNoContent {
					b.Fatalf("insert: %d %s", w.Code, w.Body)
				}
			}
		})
	}
}
