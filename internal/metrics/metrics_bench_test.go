package metrics

import (
	"testing"
	"time"
)

// BenchmarkObserve is the per-request cost of the request metrics alone.
func BenchmarkObserve(b *testing.B) {
	m := New([]string{"devstoreaccount1"}, []string{"ResourceNotFound"})
	r := &Request{Account: "devstoreaccount1", Operation: "GetEntity", Status: 200, Duration: 20 * time.Microsecond, BytesOut: 180}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.Admitted(0)
		m.Observe(r)
	}
}
