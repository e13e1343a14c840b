package advisor

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// clock is a settable time for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(o Options) (*Advisor, *clock) {
	c := &clock{t: time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)}
	o.Now = c.now
	o.MinWrites, o.MinQueries = 200, 20
	return New(o), c
}

func kinds(r Report) map[string]Finding {
	m := map[string]Finding{}
	for _, f := range r.Findings {
		m[f.Kind] = f
	}
	return m
}

// only checks that the report holds exactly the one finding kind.
func only(t *testing.T, a *Advisor, kind string) Finding {
	t.Helper()
	r := a.Findings()
	k := kinds(r)
	if _, ok := k[kind]; !ok || len(r.Findings) != 1 {
		t.Fatalf("want only %s, got %+v", kind, r.Findings)
	}
	f := k[kind]
	if f.Account != "acct" || !strings.EqualFold(f.Table, "t") || f.Pattern == "" || f.Fix == "" || f.Summary == "" || len(f.Evidence) == 0 {
		t.Errorf("finding lacks its table, evidence or pattern: %+v", f)
	}
	return f
}

// wellDesigned is traffic the guide recommends: writes spread over 100
// partitions with RowKeys in no particular order, point reads, range
// queries that return what they examine.
func wellDesigned(a *Advisor, n int) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		pk := fmt.Sprintf("dept%03d", r.IntN(100))
		a.Write("acct", "t", pk, fmt.Sprintf("%08x", r.Uint32()), true, 1000)
		a.Read("acct", "t", pk)
		if i%5 == 0 {
			a.Query("acct", "t", ClassRange, 10, 10, pk, false)
			a.Query("acct", "t", ClassPoint, 1, 1, pk, false)
		}
	}
}

func TestAdvisor_WellDesignedNoFindings(t *testing.T) {
	a, _ := newTest(Options{})
	wellDesigned(a, 5000)
	if r := a.Findings(); len(r.Findings) != 0 {
		t.Errorf("a well-designed workload raised findings: %+v", r.Findings)
	}
}

func TestAdvisor_HotPartition(t *testing.T) {
	a, _ := newTest(Options{})
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1000; i++ {
		pk := "hot"
		if i%5 == 0 { // 80% of the writes to one partition
			pk = fmt.Sprintf("p%03d", r.IntN(200))
		}
		a.Write("acct", "t", pk, fmt.Sprintf("%08x", r.Uint32()), true, 100)
	}
	f := only(t, a, KindHotPartition)
	if f.PartitionKey != "hot" || f.Evidence["share"] < 0.75 || f.Evidence["writes"] != 1000 {
		t.Errorf("hot partition evidence: %+v", f)
	}
}

func TestAdvisor_AppendPartitionKey(t *testing.T) {
	a, _ := newTest(Options{})
	// The current hour's partition: PartitionKeys that only increase,
	// ten inserts each.
	for i := 0; i < 1000; i++ {
		a.Write("acct", "t", fmt.Sprintf("2026010112%04d", i/10), fmt.Sprintf("%08x", (i*7919)%1000), true, 100)
	}
	f := only(t, a, KindAppendPartition)
	if f.Evidence["newPartitions"] != 100 || f.Evidence["tailShare"] != 1 {
		t.Errorf("append evidence: %+v", f)
	}
}

func TestAdvisor_AppendRowKey(t *testing.T) {
	a, _ := newTest(Options{})
	// Ten devices, each logging with increasing timestamps as RowKeys.
	for i := 0; i < 2000; i++ {
		a.Write("acct", "t", fmt.Sprintf("device%02d", (i*7)%10), fmt.Sprintf("%019d", 638000000000000000+i), true, 100)
	}
	f := only(t, a, KindAppendRow)
	// The partitions' last RowKeys live in a direct-mapped cache keyed by a
	// per-process hash: two devices sharing a slot evict each other and
	// their inserts go uncounted, so how many are counted depends on the
	// seed. The finding needs at least MinWrites (200) of them.
	if f.Evidence["increasingShare"] != 1 || f.Evidence["inserts"] < 200 {
		t.Errorf("append row evidence: %+v", f)
	}
}

func TestAdvisor_TableScans(t *testing.T) {
	a, _ := newTest(Options{})
	for i := 0; i < 100; i++ {
		if i%4 == 0 {
			a.Query("acct", "t", ClassTable, 5000, 3, "", false)
		} else {
			a.Query("acct", "t", ClassPoint, 1, 1, "p", false)
		}
	}
	f := only(t, a, KindTableScan)
	if f.Evidence["tableScans"] != 25 || f.Evidence["queries"] != 100 || f.Evidence["share"] != 0.25 || f.Evidence["examinedPerReturned"] != 5000.0/3 {
		t.Errorf("table scan evidence: %+v", f)
	}
}

// Scans of a tiny table that return nothing examine next to nothing: no
// finding, however many there are; scans of a large one that return
// nothing say so rather than dividing by one.
func TestAdvisor_ScansThatReturnNothing(t *testing.T) {
	a, _ := newTest(Options{})
	for i := 0; i < 2000; i++ {
		examined := 0
		if i%300 == 0 {
			examined = 7
		}
		a.Query("acct", "tiny", ClassTable, examined, 0, "", false)
	}
	if r := a.Findings(); len(r.Findings) != 0 {
		t.Errorf("scans of a 7-entity table: %+v", r.Findings)
	}
	for i := 0; i < 100; i++ {
		a.Query("acct", "t", ClassTable, 5000, 0, "", false)
	}
	f := only(t, a, KindTableScan)
	if want := "examining 500000 entities and returning none"; !strings.Contains(f.Summary, want) {
		t.Errorf("summary %q, want it to say %q", f.Summary, want)
	}
}

func TestAdvisor_PartitionScans(t *testing.T) {
	a, _ := newTest(Options{})
	for i := 0; i < 50; i++ {
		a.Query("acct", "t", ClassPartition, 400, 2, fmt.Sprintf("cust%d", i%5), false)
	}
	f := only(t, a, KindPartitionScan)
	if f.Evidence["examinedPerReturned"] != 200 || f.Evidence["partitionScans"] != 50 {
		t.Errorf("partition scan evidence: %+v", f)
	}
}

func TestAdvisor_LargePartition(t *testing.T) {
	a, _ := newTest(Options{LargePartition: 5000})
	// One scan of a 6,000-entity partition, in pages of 1,000; then scans
	// of a small one, repeated (which must not add up).
	for p := 0; p < 6; p++ {
		a.Query("acct", "t", ClassPartition, 1000, 1000, "big", p > 0)
	}
	for p := 0; p < 20; p++ {
		a.Query("acct", "t", ClassPartition, 400, 400, "small", false)
	}
	f := only(t, a, KindLargePartition)
	if f.PartitionKey != "big" || f.Evidence["entities"] != 6000 {
		t.Errorf("large partition evidence: %+v", f)
	}
}

// A large partition seen by no scan for the window's length is no longer
// reported: it may have been emptied, or its table dropped and made anew.
func TestAdvisor_LargePartitionAges(t *testing.T) {
	a, c := newTest(Options{LargePartition: 5000})
	for p := 0; p < 6; p++ {
		a.Query("acct", "t", ClassPartition, 1000, 1000, "big", p > 0)
	}
	only(t, a, KindLargePartition)
	c.t = c.t.Add(4 * time.Minute)
	a.Query("acct", "t", ClassPartition, 6000, 6000, "big", false) // seen again
	c.t = c.t.Add(4 * time.Minute)
	if f := only(t, a, KindLargePartition); f.PartitionKey != "big" {
		t.Errorf("a partition scanned 4 minutes ago: %+v", f)
	}
	c.t = c.t.Add(2 * time.Minute)
	if r := a.Findings(); len(r.Findings) != 0 {
		t.Errorf("a partition no scan has seen for 6 minutes is still reported: %+v", r.Findings)
	}
	// Eight other partitions later, the stale entry takes no place.
	for i := 0; i < 8; i++ {
		a.Query("acct", "t", ClassPartition, 5001+i, 10, fmt.Sprintf("p%d", i), false)
	}
	if n := len(a.Findings().Findings); n != 8 {
		t.Errorf("%d findings for eight large partitions", n)
	}
}

func TestAdvisor_LargeEntity(t *testing.T) {
	a, _ := newTest(Options{})
	a.Write("acct", "t", "p", "r1", true, 1000)
	a.Write("acct", "t", "p", "r2", true, 1040000)
	a.Write("acct", "t", "p", "r3", true, 990000)
	f := only(t, a, KindLargeEntity)
	if f.Evidence["entities"] != 2 || f.Evidence["largestBytes"] != 1040000 {
		t.Errorf("large entity evidence: %+v", f)
	}
}

// TestAdvisor_WindowForgets checks that findings cover only the last
// minutes: a hot partition of an hour ago is no longer reported.
func TestAdvisor_WindowForgets(t *testing.T) {
	a, c := newTest(Options{})
	for i := 0; i < 500; i++ {
		a.Write("acct", "t", "hot", fmt.Sprint(i), false, 0)
	}
	if len(a.Findings().Findings) != 1 {
		t.Fatalf("findings: %+v", a.Findings())
	}
	c.t = c.t.Add(time.Hour)
	if r := a.Findings(); len(r.Findings) != 0 {
		t.Errorf("an hour later: %+v", r.Findings)
	}
}

// TestAdvisor_Bounded sends traffic for 10,000 tables and 10,000
// partitions: the tables tracked and every sketch stay within their
// bounds.
func TestAdvisor_Bounded(t *testing.T) {
	a, _ := newTest(Options{MaxTables: 64, TopK: 8})
	for i := 0; i < 10000; i++ {
		a.Write("acct", fmt.Sprintf("t%d", i), "p", "r", true, 0)
		a.Write("acct", "busy", fmt.Sprintf("p%d", i), fmt.Sprintf("r%d", i), true, 0)
		a.Query("acct", "busy", ClassPartition, 1, 1, fmt.Sprintf("p%d", i), i%2 == 1)
	}
	if n := a.Tables(); n != 64 {
		t.Errorf("tables tracked: %d, want 64", n)
	}
	busy := (*a.tables.Load())[tableID{"acct", "busy"}]
	if busy == nil {
		t.Fatal("the table written last is not tracked") // a guard for the checks below; which table the LRU keeps is not asserted
	}
	busy.mu.Lock()
	defer busy.mu.Unlock()
	for _, b := range busy.ring {
		if len(b.requests.items) > 8 || len(b.writes.items) > 8 {
			t.Errorf("sketch sizes %d %d", len(b.requests.items), len(b.writes.items))
		}
	}
	if len(busy.largest) > 8 {
		t.Errorf("largest partitions kept: %d", len(busy.largest))
	}
}

func TestAdvisor_HeatMapAndHandler(t *testing.T) {
	a, _ := newTest(Options{TopK: 4})
	for i := 0; i < 300; i++ {
		a.Write("acct", "t", "hot", fmt.Sprint(i), true, 0)
		a.Read("acct", "t", "warm")
		if i%3 == 0 {
			a.Read("acct", "t", fmt.Sprintf("cold%d", i))
		}
	}
	h := a.HeatMap()
	if len(h.Tables) != 1 || h.Tables[0].Requests != 700 || h.Tables[0].Writes != 300 {
		t.Fatalf("heat: %+v", h)
	}
	ps := h.Tables[0].Partitions
	if len(ps) > 4 || ps[0].PartitionKey != "hot" || ps[0].Writes != 300 || ps[0].Requests != 300 || ps[1].PartitionKey != "warm" {
		t.Errorf("partitions: %+v", ps)
	}
	for path, into := range map[string]any{"/heat": &Heat{}, "/advisor": &Report{}} {
		w := httptest.NewRecorder()
		a.Handler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), into); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	var rep Report
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/advisor", nil))
	json.Unmarshal(w.Body.Bytes(), &rep)
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != KindHotPartition {
		t.Errorf("/advisor: %s", w.Body)
	}
}

// TestAdvisor_Concurrent records from many goroutines while reports are
// read (run with -race).
func TestAdvisor_Concurrent(t *testing.T) {
	a, _ := newTest(Options{MaxTables: 4})
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 2000; i++ {
				tb := fmt.Sprintf("t%d", i%6)
				a.Write("acct", tb, fmt.Sprint(i%50), fmt.Sprint(i), i%2 == 0, 0)
				a.Read("acct", tb, fmt.Sprint(i%7))
				a.Query("acct", tb, i%4, 10, 1, fmt.Sprint(i%9), i%3 == 0)
			}
		}()
	}
	for i := 0; i < 50; i++ {
		a.Findings()
		a.HeatMap()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if n := a.Tables(); n > 4 {
		t.Errorf("tables tracked: %d, want at most 4", n)
	}
}

// TestAdvisor_TableNamesFoldCase: table names are case-insensitive, so the
// writes a client sends to "T" and "t" are one table's, and
// varying the case adds no table; findings name it as first seen (they
// said "t", which the Tables list never shows).
func TestAdvisor_TableNamesFoldCase(t *testing.T) {
	a, _ := newTest(Options{})
	for i := 0; i < 300; i++ {
		name := []string{"T", "t", "T"}[i%3]
		a.Write("acct", name, "hot", fmt.Sprintf("r%06d", 1000-i), true, 100) // decreasing RowKeys: no append finding
	}
	if n := a.Tables(); n != 1 {
		t.Fatalf("tables tracked: %d, want 1", n)
	}
	f := only(t, a, KindHotPartition)
	if f.Table != "T" || f.Evidence["writes"] != 300 {
		t.Errorf("hot partition finding: %+v", f)
	}
}

// TestAdvisor_ChurnOverMaxTables: traffic spread over more tables than are
// tracked neither evicts the tables in use (each request made one table
// give its place to the next, so that no table kept its figures) nor costs
// a copy of the table map per request; a table idle for IdleGrace gives
// its place to the next new one.
func TestAdvisor_ChurnOverMaxTables(t *testing.T) {
	a, c := newTest(Options{MaxTables: 8})
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("other%d", i)
	}
	for i := 0; i < 500; i++ {
		a.Write("acct", "t", "hot", fmt.Sprint(i), false, 0)
		a.Write("acct", names[i%len(names)], "p", fmt.Sprint(i), false, 0)
		if i%50 == 0 {
			c.t = c.t.Add(time.Second / 2)
		}
	}
	if n := a.Tables(); n != 8 {
		t.Errorf("tables tracked: %d, want 8", n)
	}
	if r := a.Findings(); len(kinds(r)) != 1 || kinds(r)[KindHotPartition].Table != "t" {
		t.Errorf("the busy table lost its figures to the churn: %+v", r.Findings)
	}
	if allocs := testing.AllocsPerRun(200, func() {
		for _, n := range names {
			a.Read("acct", n, "p")
		}
	}); allocs != 0 {
		t.Errorf("%.0f allocations per %d reads of tables not tracked, want none", allocs, len(names))
	}
	// Idle for IdleGrace, the tracked tables give their places.
	c.t = c.t.Add(IdleGrace)
	a.Write("acct", "late", "p", "r", false, 0)
	if _, ok := (*a.tables.Load())[tableID{"acct", "late"}]; !ok || a.Tables() != 8 {
		t.Errorf("a new table after the others went idle: tracked %v, %d tables", ok, a.Tables())
	}
}

// A long key is cut for display at the start of a character, never in
// the middle of one.
func TestClipKeepsCharactersWhole(t *testing.T) {
	for pad := 0; pad < 4; pad++ {
		k := strings.Repeat("a", pad) + strings.Repeat("\u20ac", 100) // 3 bytes each
		c := clip(k)
		if !utf8.ValidString(c) || len(c) > maxKeyShown || len(c) < maxKeyShown-3 || !strings.HasPrefix(k, c) {
			t.Errorf("clip of a %d-byte key: %d bytes, valid %v", len(k), len(c), utf8.ValidString(c))
		}
	}
	if c := clip("short"); c != "short" {
		t.Errorf("clip(short) = %q", c)
	}
}

// tracked counts the tables tracked for account.
func tracked(a *Advisor, account string) int {
	n := 0
	for id := range *a.tables.Load() {
		if id.account == account {
			n++
		}
	}
	return n
}

// TestAdvisor_AccountTables: with a part per account, one account's many
// busy tables leave room for another's; without it (the control) they
// take every place. Past its part, an account's new table takes the place
// of its own idle one, never another account's.
func TestAdvisor_AccountTables(t *testing.T) {
	busy := func(a *Advisor, c *clock) {
		for i := 0; i < 400; i++ {
			a.Write("busy", fmt.Sprintf("t%d", i%20), "p", fmt.Sprint(i), false, 0)
			if i%100 == 0 {
				c.t = c.t.Add(time.Second)
			}
		}
		for i := 0; i < 4; i++ {
			a.Write("quiet", fmt.Sprintf("q%d", i), "p", "r", false, 0)
		}
	}
	a, c := newTest(Options{MaxTables: 8})
	busy(a, c)
	if b, q := tracked(a, "busy"), tracked(a, "quiet"); b != 8 || q != 0 {
		t.Fatalf("control, one pool for all accounts: busy %d, quiet %d tables, want 8 and 0", b, q)
	}

	a, c = newTest(Options{MaxTables: 8, AccountTables: 4})
	busy(a, c)
	if b, q := tracked(a, "busy"), tracked(a, "quiet"); b != 4 || q != 4 {
		t.Fatalf("busy %d, quiet %d tables tracked, want 4 and 4", b, q)
	}
	if allocs := testing.AllocsPerRun(100, func() { a.Read("busy", "t19", "p") }); allocs != 0 {
		t.Errorf("%.0f allocations per read of a table past the account's part, want none", allocs)
	}

	// Idle for IdleGrace, all of them, quiet's the longest: busy's next
	// table replaces one of its own, and quiet keeps its four.
	c.t = c.t.Add(2 * time.Second)
	for i := 0; i < 20; i++ {
		a.Write("busy", fmt.Sprintf("t%d", i), "p", "again", false, 0)
	}
	c.t = c.t.Add(IdleGrace)
	a.Write("busy", "late", "p", "r", false, 0)
	if _, ok := (*a.tables.Load())[tableID{"busy", "late"}]; !ok {
		t.Errorf("busy's new table after its own went idle is not tracked")
	}
	if b, q := tracked(a, "busy"), tracked(a, "quiet"); b != 4 || q != 4 {
		t.Errorf("after the swap: busy %d, quiet %d tables, want 4 and 4", b, q)
	}
}

// TestAdvisor_LongKeysCutOnCharacters: a partition key is kept to its first
// 128 bytes at a character's start, never in the middle of one (the heat
// map showed "…aaa\ufffd"); keys alike for that long are one partition.
func TestAdvisor_LongKeysCutOnCharacters(t *testing.T) {
	a, _ := newTest(Options{})
	prefix := strings.Repeat("a", 127)
	for _, tail := range []string{"tail1", "tail2", "tail1"} {
		a.Write("acct", "T", prefix+"é"+tail, "r", true, 100)
	}
	h := a.HeatMap()
	if len(h.Tables) != 1 || len(h.Tables[0].Partitions) != 1 {
		t.Fatalf("heat map: %+v", h)
	}
	p := h.Tables[0].Partitions[0]
	if p.PartitionKey != prefix || p.Requests != 3 {
		t.Errorf("partition %q with %d requests, want the 127 bytes before the 2-byte character, 3 requests", p.PartitionKey, p.Requests)
	}
}
