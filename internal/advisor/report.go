package advisor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Finding kinds.
const (
	KindHotPartition    = "hot-partition"
	KindAppendPartition = "append-partition-key"
	KindAppendRow       = "append-row-key"
	KindTableScan       = "table-scan"
	KindPartitionScan   = "partition-scan"
	KindLargePartition  = "large-partition"
	KindLargeEntity     = "large-entity"
)

// Report is the JSON of GET /advisor: the findings over the last
// WindowSeconds.
type Report struct {
	WindowSeconds float64   `json:"windowSeconds"`
	Tables        int       `json:"tables"` // tables tracked
	Findings      []Finding `json:"findings"`
}

// Finding is one anti-pattern seen in a table's traffic.
type Finding struct {
	Kind    string `json:"kind"` // one of the Kind constants
	Account string `json:"account"`
	Table   string `json:"table"`
	// PartitionKey is the partition concerned, when there is one (at
	// most 128 bytes of it).
	PartitionKey string `json:"partitionKey,omitempty"`
	// Summary says what was seen, with the numbers.
	Summary string `json:"summary"`
	// Evidence holds the numbers by name, e.g. writes, share,
	// examinedPerReturned.
	Evidence map[string]float64 `json:"evidence"`
	// Pattern names the design guide's pattern that fixes it, Fix says
	// how.
	Pattern string `json:"pattern"`
	Fix     string `json:"fix"`
}

// Heat is the JSON of GET /heat: request and write rates by table and by
// partition over the last WindowSeconds, busiest first.
type Heat struct {
	WindowSeconds float64     `json:"windowSeconds"`
	Tables        []HeatTable `json:"tables"`
}

// HeatTable is one table's traffic.
type HeatTable struct {
	Account           string  `json:"account"`
	Table             string  `json:"table"`
	Requests          int64   `json:"requests"`
	Writes            int64   `json:"writes"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	WritesPerSecond   float64 `json:"writesPerSecond"`
	// Partitions are the busiest partitions by requests (at most TopK),
	// then by writes.
	Partitions []HeatPartition `json:"partitions"`
}

// HeatPartition is one partition's traffic. The counts come from
// space-saving sketches: they may overstate the truth by at most
// MaxOverstatement, and a partition missing from the list had at most
// that many.
type HeatPartition struct {
	PartitionKey      string  `json:"partitionKey"` // at most 128 bytes of it
	Requests          int64   `json:"requests"`
	Writes            int64   `json:"writes"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	WritesPerSecond   float64 `json:"writesPerSecond"`
	MaxOverstatement  int64   `json:"maxOverstatement"`
}

// window sums a table's live buckets; t.mu is held.
type window struct {
	bucket
	reqs, writes map[string]*count
	seconds      float64
}

func (a *Advisor) window(t *table, now time.Time) *window {
	cur := now.UnixNano()/int64(a.o.Bucket) + 1
	w := &window{reqs: map[string]*count{}, writes: map[string]*count{}}
	oldest := cur
	for i := range t.ring {
		b := &t.ring[i]
		if b.slot == 0 || b.slot <= cur-int64(len(t.ring)) || b.slot > cur {
			continue
		}
		oldest = min(oldest, b.slot)
		w.nRequests += b.nRequests
		w.nWrites += b.nWrites
		w.inserts += b.inserts
		w.pkTail += b.pkTail
		w.pkAdv += b.pkAdv
		w.rkSeen += b.rkSeen
		w.rkUp += b.rkUp
		for c := range numClasses {
			w.queries[c] += b.queries[c]
			w.examined[c] += b.examined[c]
			w.returned[c] += b.returned[c]
		}
		w.nearLimit += b.nearLimit
		if b.maxEntity > w.maxEntity {
			w.maxEntity, w.nearLimitSample = b.maxEntity, b.nearLimitSample
		}
		merge(w.reqs, b.requests)
		merge(w.writes, b.writes)
	}
	start := time.Unix(0, (oldest-1)*int64(a.o.Bucket))
	w.seconds = max(now.Sub(start).Seconds(), 1)
	return w
}

// count is a partition's count summed over buckets, and the most it may
// overstate.
type count struct{ count, err int64 }

func merge(into map[string]*count, s sketch) {
	for _, it := range s.items {
		if m := into[it.key]; m != nil {
			m.count += it.count
			m.err += it.err
		} else {
			into[it.key] = &count{it.count, it.err}
		}
	}
}

func top(m map[string]*count) (string, *count) {
	var key string
	var best *count
	for k, it := range m {
		if best == nil || it.count > best.count || (it.count == best.count && k < key) {
			key, best = k, it
		}
	}
	return key, best
}

// snapshot lists the tracked tables: all of them when account is "",
// else that account's only.
func (a *Advisor) snapshot(account string) []*table {
	cur := *a.tables.Load()
	ts := make([]*table, 0, len(cur))
	for _, t := range cur {
		if account == "" || t.id.account == account {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].id.account != ts[j].id.account {
			return ts[i].id.account < ts[j].id.account
		}
		return ts[i].id.table < ts[j].id.table
	})
	return ts
}

// Findings reports the anti-patterns seen over the window.
func (a *Advisor) Findings() Report { return a.findings("") }

// AccountFindings is Findings restricted to one account's tables (Tables
// then counts that account's tables only).
func (a *Advisor) AccountFindings(account string) Report {
	if account == "" {
		return Report{WindowSeconds: a.window0(), Findings: []Finding{}}
	}
	return a.findings(account)
}

// window0 is the length of the window in seconds.
func (a *Advisor) window0() float64 { return (a.o.Bucket * time.Duration(a.o.Buckets)).Seconds() }

func (a *Advisor) findings(account string) Report {
	now := a.o.Now()
	ts := a.snapshot(account)
	r := Report{WindowSeconds: a.window0(), Tables: len(ts), Findings: []Finding{}}
	for _, t := range ts {
		t.mu.Lock()
		w := a.window(t, now)
		var largest []partSize
		after := now.UnixNano() - int64(a.o.Bucket)*int64(a.o.Buckets)
		for _, p := range t.largest {
			if p.at > after {
				largest = append(largest, p)
			}
		}
		t.mu.Unlock()
		r.Findings = append(r.Findings, a.judge(tableID{t.id.account, t.name}, w, largest)...)
	}
	return r
}

func (a *Advisor) judge(id tableID, w *window, largest []partSize) []Finding {
	var out []Finding
	add := func(kind, pk, summary, pattern, fix string, ev map[string]float64) {
		out = append(out, Finding{Kind: kind, Account: id.account, Table: id.table, PartitionKey: pk,
			Summary: summary, Evidence: ev, Pattern: pattern, Fix: fix})
	}
	o := &a.o
	if w.nWrites >= o.MinWrites {
		if pk, it := top(w.writes); it != nil {
			// The sketch may overstate: judge on the guaranteed count.
			sure := it.count - it.err
			share := float64(sure) / float64(w.nWrites)
			if share >= o.HotShare {
				add(KindHotPartition, pk,
					fmt.Sprintf("partition %q took %.0f%% of the table's %d writes (%.1f writes/s)", pk, share*100, w.nWrites, float64(sure)/w.seconds),
					"Prepend/append anti-pattern; compound key pattern",
					"spread the writes over many partitions: make the PartitionKey a compound of a well-distributed value (an id, or a hash bucket of one) and what you query by, so that no single partition takes most of the inserts",
					map[string]float64{"writes": float64(w.nWrites), "partitionWrites": float64(sure), "share": share, "writesPerSecond": float64(w.nWrites) / w.seconds})
			}
		}
	}
	if w.inserts >= o.MinWrites {
		tail := float64(w.pkTail) / float64(w.inserts)
		if tail >= o.AppendShare && w.pkAdv >= 10 {
			add(KindAppendPartition, "",
				fmt.Sprintf("%.0f%% of %d inserts went to the last partition in key order, and %d new partitions were appended (%.1f inserts/s): the PartitionKey only increases", tail*100, w.inserts, w.pkAdv, float64(w.inserts)/w.seconds),
				"Prepend/append anti-pattern",
				"do not lead the PartitionKey with a time or sequence number: prefix it with a well-distributed value (department and employee id, a hash bucket) so that inserts at any moment spread over many partitions",
				map[string]float64{"inserts": float64(w.inserts), "tailShare": tail, "newPartitions": float64(w.pkAdv), "insertsPerSecond": float64(w.inserts) / w.seconds})
		}
	}
	if w.rkSeen >= o.MinWrites {
		up := float64(w.rkUp) / float64(w.rkSeen)
		if up >= o.AppendShare {
			add(KindAppendRow, "",
				fmt.Sprintf("%.0f%% of %d inserts into known partitions had a RowKey greater than any before it: RowKeys only increase, so the newest entities sort last", up*100, w.rkSeen),
				"Log tail pattern (inverted ticks); prepend/append anti-pattern",
				"to read the newest entities first, store the RowKey as inverted ticks (DateTime.MaxValue.Ticks - ticks, zero-padded to 19 digits) so they sort first; if the writes also go to few partitions, spread them with a compound PartitionKey",
				map[string]float64{"inserts": float64(w.rkSeen), "increasingShare": up})
		}
	}
	var queries int64
	for _, n := range w.queries {
		queries += n
	}
	if queries >= o.MinQueries {
		if n := w.queries[ClassTable]; n > 0 {
			share := float64(n) / float64(queries)
			ratio := float64(w.examined[ClassTable]) / float64(max(w.returned[ClassTable], 1))
			if share >= o.ScanShare && ratio >= o.ScanRatio && wasteful(w.examined[ClassTable], n, o.ScanRatio) {
				add(KindTableScan, "",
					fmt.Sprintf("%d of %d queries (%.0f%%) were table scans, examining %s", n, queries, share*100, perReturned(w.examined[ClassTable], w.returned[ClassTable], ratio)),
					"Index entities pattern; inter-partition secondary index pattern",
					"query by PartitionKey (and RowKey): keep the property you filter on in the keys of a second entity (an index entity, or a copy keyed by that property) and look entities up through it",
					map[string]float64{"queries": float64(queries), "tableScans": float64(n), "share": share,
						"examined": float64(w.examined[ClassTable]), "returned": float64(w.returned[ClassTable]), "examinedPerReturned": ratio})
			}
		}
		if n := w.queries[ClassPartition]; n > 0 {
			share := float64(n) / float64(queries)
			ratio := float64(w.examined[ClassPartition]) / float64(max(w.returned[ClassPartition], 1))
			if share >= o.ScanShare && ratio >= o.ScanRatio && wasteful(w.examined[ClassPartition], n, o.ScanRatio) {
				add(KindPartitionScan, "",
					fmt.Sprintf("%d of %d queries (%.0f%%) scanned whole partitions, examining %s: a RowKey range would serve", n, queries, share*100, perReturned(w.examined[ClassPartition], w.returned[ClassPartition], ratio)),
					"Intra-partition secondary index pattern; compound key pattern",
					"put what you filter on into the RowKey (a compound RowKey, or extra index entities in the same partition with RowKeys like 'email_...'), and query a RowKey range instead of filtering the whole partition",
					map[string]float64{"queries": float64(queries), "partitionScans": float64(n), "share": share,
						"examined": float64(w.examined[ClassPartition]), "returned": float64(w.returned[ClassPartition]), "examinedPerReturned": ratio})
			}
		}
	}
	for _, p := range largest {
		if p.n < o.LargePartition {
			break
		}
		add(KindLargePartition, p.pk,
			fmt.Sprintf("a scan of partition %q examined %d entities", p.pk, p.n),
			"Compound key pattern; high volume delete pattern",
			"split the partition: add a second element (a date, a bucket) to the PartitionKey so that each partition holds what one query needs",
			map[string]float64{"entities": float64(p.n)})
	}
	if w.nearLimit > 0 {
		add(KindLargeEntity, w.nearLimitSample,
			fmt.Sprintf("%d writes stored entities of at least %d bytes, the largest %d bytes of the %d-byte limit", w.nearLimit, o.NearLimit, w.maxEntity, MaxEntitySize),
			"Large entities pattern; wide entities pattern",
			"keep large values in a blob and store its name in the entity, or split the entity into several entities of one partition written together in a batch",
			map[string]float64{"entities": float64(w.nearLimit), "largestBytes": float64(w.maxEntity), "limitBytes": MaxEntitySize})
	}
	return out
}

// HeatMap reports the traffic by table and partition over the window.
func (a *Advisor) HeatMap() Heat { return a.heatMap("") }

// AccountHeatMap is HeatMap restricted to one account's tables.
func (a *Advisor) AccountHeatMap(account string) Heat {
	if account == "" {
		return Heat{WindowSeconds: a.window0(), Tables: []HeatTable{}}
	}
	return a.heatMap(account)
}

func (a *Advisor) heatMap(account string) Heat {
	now := a.o.Now()
	h := Heat{WindowSeconds: a.window0(), Tables: []HeatTable{}}
	for _, t := range a.snapshot(account) {
		t.mu.Lock()
		w := a.window(t, now)
		t.mu.Unlock()
		if w.nRequests == 0 {
			continue
		}
		ht := HeatTable{Account: t.id.account, Table: t.name, Requests: w.nRequests, Writes: w.nWrites,
			RequestsPerSecond: float64(w.nRequests) / w.seconds, WritesPerSecond: float64(w.nWrites) / w.seconds, Partitions: []HeatPartition{}}
		keys := map[string]bool{}
		for k := range w.reqs {
			keys[k] = true
		}
		for k := range w.writes {
			keys[k] = true
		}
		for k := range keys {
			p := HeatPartition{PartitionKey: k}
			if it := w.reqs[k]; it != nil {
				p.Requests, p.MaxOverstatement = it.count, it.err
			}
			if it := w.writes[k]; it != nil {
				p.Writes = it.count
				p.MaxOverstatement = max(p.MaxOverstatement, it.err)
			}
			p.RequestsPerSecond, p.WritesPerSecond = float64(p.Requests)/w.seconds, float64(p.Writes)/w.seconds
			ht.Partitions = append(ht.Partitions, p)
		}
		sort.Slice(ht.Partitions, func(i, j int) bool {
			pi, pj := ht.Partitions[i], ht.Partitions[j]
			if pi.Requests != pj.Requests {
				return pi.Requests > pj.Requests
			}
			if pi.Writes != pj.Writes {
				return pi.Writes > pj.Writes
			}
			return pi.PartitionKey < pj.PartitionKey
		})
		if len(ht.Partitions) > a.o.TopK {
			ht.Partitions = ht.Partitions[:a.o.TopK]
		}
		h.Tables = append(h.Tables, ht)
	}
	sort.SliceStable(h.Tables, func(i, j int) bool { return h.Tables[i].Requests > h.Tables[j].Requests })
	return h
}

// Handler serves GET /advisor (Report) and GET /heat (Heat) as JSON;
// mount it at both paths.
func (a *Advisor) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var v any
		switch {
		case strings.HasSuffix(r.URL.Path, "/heat"):
			v = a.HeatMap()
		default:
			v = a.Findings()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	})
}

// wasteful reports whether scans that examined examined entities in n
// queries read enough to matter: at least ratio entities a query. Scans of
// a table or partition of a few entities cost no more than the point
// queries that would replace them, however few entities they return.
func wasteful(examined, n int64, ratio float64) bool {
	return float64(examined) >= ratio*float64(n)
}

// perReturned says how many entities scans examined per entity returned,
// or, when they returned none, how many they examined.
func perReturned(examined, returned int64, ratio float64) string {
	if returned == 0 {
		return fmt.Sprintf("%d entities and returning none", examined)
	}
	return fmt.Sprintf("%.1f entities per entity returned", ratio)
}
