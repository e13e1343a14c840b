package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

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
			var cpu cpuClock
			cpu.start()
			for i := 0; i < b.N; i++ {
				r := *tmpl
				w := httptest.NewRecorder()
				s.ServeHTTP(w, &r)
				if w.Code != 200 {
					b.Fatalf("get: %d %s", w.Code, w.Body)
				}
			}
			cpu.stop()
			cpu.report(b)
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
			var cpu cpuClock
			for i := 0; i < b.N; i++ {
				if i%1024 == 0 {
					// A fresh engine every 1024 inserts keeps the
					// in-memory engine's sorted inserts from dominating.
					b.StopTimer()
					cpu.stop()
					s = newServer()
					bodies = bodies[:0]
					for k := 0; k < 1024; k++ {
						bodies = append(bodies, []byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%08d","Name":"entity","N":%d}`, k%16, i+k, k)))
					}
					cpu.start()
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
			cpu.stop()
			cpu.report(b)
		})
	}
}

// cpuClock adds up the process's CPU time (user and system, every
// thread: the GC's included) over the timed parts of a benchmark. On a
// shared machine it is a steadier measure of cost than the wall clock,
// which counts the time other processes hold the cores.
type cpuClock struct {
	total, from time.Duration
	running     bool
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuClock) start() { c.from, c.running = processCPU(), true }

func (c *cpuClock) stop() {
	if c.running {
		c.total += processCPU() - c.from
		c.running = false
	}
}

func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkObservePaired sends the requests of BenchmarkObserve to two
// servers in turn, one with metrics and the advisor off and one with
// both on, timing each request: the two sides share every moment of the
// machine's load, so their ratio is steadier than that of two separate
// runs on a shared machine. It reports each side's ns/op and the
// overhead in percent.
//
//	go test ./internal/httpapi -run '^$' -bench 'ObservePaired' -count 10
func BenchmarkObservePaired(b *testing.B) {
	newServer := func(on bool) *Server {
		var o Options
		if on {
			o.Metrics = metrics.New([]string{"devstoreaccount1"}, ErrorCodes())
			o.Advisor = advisor.New(advisor.Options{})
		}
		s := obsServer(b, o)
		wantStatus(b, do(b, s, "POST", "", "/Tables", map[string]string{"Prefer": "return-no-content"}, []byte(`{"TableName":"bench"}`)), 204)
		return s
	}
	report := func(b *testing.B, side [2]time.Duration) {
		n := float64(b.N) / 2
		off, on := float64(side[0])/n, float64(side[1])/n
		b.ReportMetric(off, "off-ns/op")
		b.ReportMetric(on, "on-ns/op")
		b.ReportMetric(100*(on-off)/off, "overhead-%")
	}
	b.Run("GetEntity", func(b *testing.B) {
		var srv [2]*Server
		for k := range srv {
			srv[k] = newServer(k == 1)
			for i := 0; i < 100; i++ {
				wantStatus(b, do(b, srv[k], "POST", "", "/bench", map[string]string{"Prefer": "return-no-content"},
					[]byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%d","Name":"entity %d","N":%d}`, i%10, i, i, i))), 204)
			}
		}
		tmpl := signedRequest(b, "GET", "/devstoreaccount1/bench(PartitionKey='p7',RowKey='r7')")
		tmpl.Header.Set("Accept", "application/json;odata=nometadata")
		var side [2]time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := *tmpl
			w := httptest.NewRecorder()
			t0 := time.Now()
			srv[i%2].ServeHTTP(w, &r)
			side[i%2] += time.Since(t0)
			if w.Code != 200 {
				b.Fatalf("get: %d %s", w.Code, w.Body)
			}
		}
		report(b, side)
	})
	b.Run("InsertEntity", func(b *testing.B) {
		var srv [2]*Server
		tmpl := signedRequest(b, "POST", "/devstoreaccount1/bench")
		tmpl.Header.Set("Accept", "application/json;odata=nometadata")
		tmpl.Header.Set("Content-Type", "application/json")
		tmpl.Header.Set("Prefer", "return-no-content")
		bodies := make([][]byte, 0, 1024)
		var side [2]time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2048 == 0 {
				// Fresh engines every 1024 inserts each, as in
				// BenchmarkObserve.
				b.StopTimer()
				srv[0], srv[1] = newServer(false), newServer(true)
				bodies = bodies[:0]
				for k := 0; k < 1024; k++ {
					bodies = append(bodies, []byte(fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%08d","Name":"entity","N":%d}`, k%16, i+k, k)))
				}
				b.StartTimer()
			}
			body := bodies[(i%2048)/2]
			r := *tmpl
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			w := httptest.NewRecorder()
			t0 := time.Now()
			srv[i%2].ServeHTTP(w, &r)
			side[i%2] += time.Since(t0)
			if w.Code != http.StatusNoContent {
				b.Fatalf("insert: %d %s", w.Code, w.Body)
			}
		}
		report(b, side)
	})
}
