// Package metrics holds partita's Prometheus instruments: requests,
// latencies, query classes with the entities they examine and return,
// batch sizes, admission (slots, queue wait, 503s), bytes in and out, and
// collectors for the storage engines' own figures. Every label takes its
// values from a fixed set (operations, statuses, error codes, query
// classes) or from the configured account names, with anything else
// counted as "other", so no client can grow the number of series.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Other is the label value of anything outside a label's fixed set.
const Other = "other"

// Operations are the values of the operation label: the REST API's
// operation names as partita's HTTP layer names them. "Unknown" is a
// request refused before its operation was known.
var Operations = []string{
	"Unknown", "QueryTables", "CreateTable", "GetTable", "DeleteTable",
	"EntityGroupTransaction", "QueryEntities", "InsertEntity", "GetEntity",
	"UpdateEntity", "MergeEntity", "DeleteEntity", "InsertOrReplaceEntity",
	"InsertOrMergeEntity", "GetTableACL", "SetTableACL",
	"GetServiceProperties", "SetServiceProperties", "GetServiceStats",
	"Preflight", "GetPartitaAdvisor", "GetPartitaHeat",
}

// Statuses are the values of the status label.
var Statuses = []int{200, 201, 202, 204, 206, 304, 400, 401, 403, 404, 405, 409, 411, 412, 413, 415, 416, 500, 501, 503}

// Classes are the query classes, in odata.Class order.
var Classes = []string{"point", "range", "partition", "table"}

// Metrics is a registry with partita's instruments. Its methods are safe
// for concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg      *prometheus.Registry
	accounts map[string]int  // configured account names, with their index: fixed at New
	codes    map[string]bool // known error codes: fixed at New

	requests *prometheus.CounterVec
	reqCache sync.Map                                                // reqKey -> prometheus.Counter; bounded by the label sets
	fast     [][len(fastStatuses)]atomic.Pointer[prometheus.Counter] // by account*ops+op, then status
	latency  []prometheus.Observer
	opIndex  map[string]int

	bytesIn, bytesOut []prometheus.Counter

	queries, examined, returned []prometheus.Counter
	batchSize                   prometheus.Observer
	inFlight                    atomic.Pointer[func() int64]
	queueWait                   prometheus.Observer
	busy                        *prometheus.CounterVec
	storeWait                   [2]prometheus.Observer // taken, gave_up
	storeCalls                  atomic.Pointer[func() int64]
}

// fastStatuses are the statuses of successes.
var fastStatuses = [...]int{200, 201, 202, 204}

type reqKey struct {
	account string
	op      int
	status  int
	code    string
}

// New returns Metrics whose account label takes the given names (any
// other is "other") and whose error code label takes the given codes.
func New(accounts, codes []string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), accounts: map[string]int{}, codes: map[string]bool{}, opIndex: map[string]int{}}
	for _, a := range accounts {
		if _, ok := m.accounts[a]; !ok {
			m.accounts[a] = len(m.accounts)
		}
	}
	// The successes of each account and operation, found by index
	// rather than by hashing labels: most requests take this path.
	m.fast = make([][len(fastStatuses)]atomic.Pointer[prometheus.Counter], (len(m.accounts)+1)*(len(Operations)+1))
	for _, c := range codes {
		m.codes[c] = true
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "partita_requests_total",
		Help: "Requests served, by account, operation, HTTP status and error code (empty on success).",
	}, []string{"account", "operation", "status", "code"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "partita_request_duration_seconds",
		Help:    "Time from a request's arrival to its response, by operation.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"operation"})
	in := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "partita_request_bytes_total", Help: "Request body bytes read, by operation."}, []string{"operation"})
	out := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "partita_response_bytes_total", Help: "Response body bytes written, by operation."}, []string{"operation"})
	for i, op := range append(append([]string(nil), Operations...), Other) {
		m.opIndex[op] = i
		m.latency = append(m.latency, lat.WithLabelValues(op))
		m.bytesIn = append(m.bytesIn, in.WithLabelValues(op))
		m.bytesOut = append(m.bytesOut, out.WithLabelValues(op))
	}
	q := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "partita_queries_total", Help: "Query pages served (Query Entities), by query class."}, []string{"class"})
	ex := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "partita_query_entities_examined_total", Help: "Entities read by queries to produce their pages, by query class."}, []string{"class"})
	ret := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "partita_query_entities_returned_total", Help: "Entities returned by queries, by query class."}, []string{"class"})
	for _, c := range Classes {
		m.queries = append(m.queries, q.WithLabelValues(c))
		m.examined = append(m.examined, ex.WithLabelValues(c))
		m.returned = append(m.returned, ret.WithLabelValues(c))
	}
	bs := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "partita_batch_operations",
		Help:    "Operations per entity group transaction ($batch change set) that reached the store.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100},
	})
	m.batchSize = bs
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "partita_requests_in_flight", Help: "Requests holding a slot (see --max-inflight)."}, func() float64 {
		if f := m.inFlight.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	qw := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "partita_queue_wait_seconds",
		Help:    "Time requests waited for a request slot (0 when one was free), whether they got one or were refused (503 ServerBusy).",
		Buckets: []float64{.00001, .0001, .001, .01, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.queueWait = qw
	m.busy = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "partita_busy_total",
		Help: "Requests refused with 503 ServerBusy, by reason: slots (no request slot in time), body (no room for the body in time), store (the store refused: low disk, PostgreSQL unreachable).",
	}, []string{"reason"})
	for _, r := range []string{"slots", "body", "store"} {
		m.busy.WithLabelValues(r)
	}
	sw := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "partita_store_call_wait_seconds",
		Help:    "Time store calls waited for their share of the store-call budget (PostgreSQL: the pool, see --client-share), counting only calls that had to wait; outcome taken, or gave_up when the request's deadline came first.",
		Buckets: []float64{.0001, .001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"outcome"})
	m.storeWait = [2]prometheus.Observer{sw.WithLabelValues("taken"), sw.WithLabelValues("gave_up")}
	storeCalls := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "partita_store_calls_in_flight", Help: "Store calls holding a unit of the store-call budget (PostgreSQL: at most the pool's size; 0 on the embedded engine, which has no such budget)."}, func() float64 {
		if f := m.storeCalls.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	m.reg.MustRegister(m.requests, lat, in, out, q, ex, ret, bs, inFlight, qw, m.busy, sw, storeCalls,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry, for collectors of the store's figures and
// for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) op(name string) int {
	if i, ok := m.opIndex[name]; ok {
		return i
	}
	return len(Operations) // Other
}

// Request is one request as the edge saw it.
type Request struct {
	Account   string
	Operation string
	Status    int
	Code      string // x-ms-error-code, "" on success
	Duration  time.Duration
	BytesIn   int64
	BytesOut  int64
}

// Observe records one request.
func (m *Metrics) Observe(r *Request) {
	if m == nil {
		return
	}
	k := reqKey{account: Other, op: m.op(r.Operation), status: r.Status, code: r.Code}
	ai, known := m.accounts[r.Account]
	if known {
		k.account = r.Account
	} else {
		ai = len(m.accounts)
	}
	if k.code == "" {
		for si, st := range fastStatuses {
			if st == k.status {
				slot := &m.fast[ai*(len(Operations)+1)+k.op][si]
				c := slot.Load()
				if c == nil {
					c = new(prometheus.Counter)
					*c = m.counter(k)
					slot.Store(c)
				}
				(*c).Inc()
				m.rest(r, k.op)
				return
			}
		}
	}
	if k.code != "" && !m.codes[k.code] {
		k.code = Other
	}
	if !knownStatus(k.status) {
		k.status = 0
	}
	c, ok := m.reqCache.Load(k)
	if !ok {
		c, _ = m.reqCache.LoadOrStore(k, m.counter(k))
	}
	c.(prometheus.Counter).Inc()
	m.rest(r, k.op)
}

// counter is the requests counter of k's labels.
func (m *Metrics) counter(k reqKey) prometheus.Counter {
	status := Other
	if k.status != 0 {
		status = strconv.Itoa(k.status)
	}
	opName := Other
	if k.op < len(Operations) {
		opName = Operations[k.op]
	}
	return m.requests.WithLabelValues(k.account, opName, status, k.code)
}

// rest records a request's latency and bytes.
func (m *Metrics) rest(r *Request, op int) {
	m.latency[op].Observe(r.Duration.Seconds())
	if r.BytesIn > 0 {
		m.bytesIn[op].Add(float64(r.BytesIn))
	}
	if r.BytesOut > 0 {
		m.bytesOut[op].Add(float64(r.BytesOut))
	}
}

func knownStatus(s int) bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Query records one query page of the given class (odata.Class order).
func (m *Metrics) Query(class, examined, returned int) {
	if m == nil || class < 0 || class >= len(Classes) {
		return
	}
	m.queries[class].Inc()
	m.examined[class].Add(float64(examined))
	m.returned[class].Add(float64(returned))
}

// Batch records the size of a change set that reached the store.
func (m *Metrics) Batch(ops int) {
	if m != nil {
		m.batchSize.Observe(float64(ops))
	}
}

// Admitted records a request that took a slot after waiting d.
func (m *Metrics) Admitted(d time.Duration) {
	if m != nil {
		m.queueWait.Observe(d.Seconds())
	}
}

// InFlightFrom sets what reports the requests in flight at each scrape
// (the server counts them anyway: no cost per request).
func (m *Metrics) InFlightFrom(f func() int64) {
	if m != nil {
		m.inFlight.Store(&f)
	}
}

// StoreCallsFrom sets what reports the store calls in flight at each
// scrape.
func (m *Metrics) StoreCallsFrom(f func() int64) {
	if m != nil {
		m.storeCalls.Store(&f)
	}
}

// StoreCallWaited records a store call that found no room in the
// store-call budget and waited d, then took its unit (taken) or gave up
// at its request's deadline.
func (m *Metrics) StoreCallWaited(d time.Duration, taken bool) {
	if m == nil {
		return
	}
	i := 0
	if !taken {
		i = 1
	}
	m.storeWait[i].Observe(d.Seconds())
}

// Busy records a 503 ServerBusy; reason is slots, body or store. waited
// is the time spent queueing for a slot (slots only).
func (m *Metrics) Busy(reason string, waited time.Duration) {
	if m == nil {
		return
	}
	switch reason {
	case "slots":
		m.queueWait.Observe(waited.Seconds())
	case "body", "store":
	default:
		reason = Other
	}
	m.busy.WithLabelValues(reason).Inc()
}
