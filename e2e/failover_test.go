package e2e

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

var (
	failoverCycles = flag.Int("failover.cycles", 2, "primary losses of TestFailover_PrimaryKilled (long mode: 50)")
	failoverSeed   = flag.Uint64("failover.seed", 0, "seed of the failover tests (0: time-based)")
)

// failoverRequestTimeout is the clients' HTTP timeout in the failover
// tests. A request that gets no answer within it counts as a hang.
const failoverRequestTimeout = 30 * time.Second

// timedClient is a table client that sends each request once, so the
// test sees every answer the server gives, and gives up after timeout.
func timedClient(t *testing.T, s *Server, table string, timeout time.Duration) *aztables.Client {
	t.Helper()
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	o := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Transport: &http.Client{Timeout: timeout},
	}}
	svc, err := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, o)
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewClient(table)
}

// outcomes counts what clients saw while the database failed over.
type outcomes struct {
	// timedOutOK accepts 500 OperationTimedOut for writes (errors marked
	// errTimedOut): with the primary lost under a commit in flight, that
	// write's outcome is unknown and partita says so.
	timedOutOK bool

	mu       sync.Mutex
	byKind   map[string]int
	wrong    []string // answers other than success, 503 and those allowed
	timeouts int      // no answer within failoverRequestTimeout
}

func (o *outcomes) add(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byKind == nil {
		o.byKind = map[string]int{}
	}
	var re *azcore.ResponseError
	switch {
	case err == nil:
		o.byKind["ok"]++
	case errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable:
		o.byKind["503 "+re.ErrorCode]++
	case o.timedOutOK && errors.Is(err, errTimedOut):
		o.byKind["500 OperationTimedOut (write, outcome unknown)"]++
	case errors.As(err, &re):
		o.byKind[fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)]++
		if len(o.wrong) < 20 {
			o.wrong = append(o.wrong, err.Error())
		}
	case strings.Contains(err.Error(), "Client.Timeout") || errors.Is(err, os.ErrDeadlineExceeded):
		o.byKind["timeout"]++
		o.timeouts++
	default:
		o.byKind["transport error"]++
	}
}

func (o *outcomes) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	for k, n := range o.byKind {
		parts = append(parts, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// workload runs the crash test's clients (each owns a partition and logs
// every write it sends) until stop is closed or each hits an operation
// whose fate it cannot know (no answer, 503, or a write's 500
// OperationTimedOut where the clients allow it); such an operation stays
// pending in the client's log until verifyClient resolves it.
// failed[i] tells whether clients[i] stopped on such an operation.
func workload(t *testing.T, clients []*crashClient, seq *atomic.Int64, stop chan struct{}, seen *outcomes) (wg *sync.WaitGroup, failed []atomic.Bool) {
	wg = &sync.WaitGroup{}
	failed = make([]atomic.Bool, len(clients))
	for i, cc := range clients {
		wg.Add(1)
		go func(cc *crashClient) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := cc.step(int(seq.Add(1)))
				if err == nil {
					continue
				}
				if errors.Is(err, errUnreachable) {
					seen.add(err)
					failed[i].Store(true)
					return
				}
				t.Error(err)
				return
			}
		}(cc)
	}
	return wg, failed
}

// probe writes a new entity through s every 50 ms from start until one
// succeeds, records every answer, and returns the time from start to the
// first success (or fails the test after limit).
func probe(t *testing.T, s *Server, table string, start time.Time, limit time.Duration, seen *outcomes) time.Duration {
	c := timedClient(t, s, table, failoverRequestTimeout)
	host := strings.NewReplacer(":", "-", "/", "-").Replace(s.URL)
	for i := 0; ; i++ {
		_, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "probe", "RowKey": fmt.Sprintf("%s-%d-%d", host, start.UnixNano(), i)}), nil)
		if isTimedOut(err) {
			err = fmt.Errorf("%w: %w", errTimedOut, err) // a write's: seen decides whether it may be
		}
		seen.add(err)
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Errorf("no write succeeded through %s within %v of the failure (last: %v)", s.URL, limit, err)
			return limit
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newCrashClients(seed uint64, n int) []*crashClient {
	clients := make([]*crashClient, n)
	for i := range clients {
		clients[i] = &crashClient{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i+2))), state: map[string]props{}}
	}
	return clients
}

func failoverSeedValue(t *testing.T, name string) uint64 {
	seed := *failoverSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./e2e -run %s -args -failover.seed=%d)", seed, name, seed)
	return seed
}

// TestFailover_PrimaryKilled: two front ends over a primary and a
// synchronous standby, the crash test's workload through both; the
// primary is killed with SIGKILL (the whole server, as a lost machine) at
// a random moment and the standby promoted. The front ends must find the
// new primary by themselves; meanwhile clients may see 503 (which the SDKs
// retry) and, for a write whose commit was in flight at the kill, 500
// OperationTimedOut (its outcome is unknown), and nothing else; no request
// may hang. Afterwards the crash test's rules hold: every acknowledged
// write is there, every operation in flight at the kill or answered 503
// or 500 OperationTimedOut (batches included) is all there or not at all,
// and nothing deleted comes back. A new standby is then built from the
// new primary and the cycle repeats (-failover.cycles).
func TestFailover_PrimaryKilled(t *testing.T) {
	seed := failoverSeedValue(t, "TestFailover_PrimaryKilled")
	rng := rand.New(rand.NewPCG(seed, 1))
	pg := newPGPair(t)
	fe := []*Server{
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
	}
	const table = "failover"
	if _, err := serviceClient(t, fe[0]).CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	clients := newCrashClients(seed, 8)
	for _, cc := range clients {
		cc.timedOutOK = true
	}
	var seq atomic.Int64
	seen := &outcomes{timedOutOK: true}
	anomalies := 0
	var firstWrite, promoteTook []time.Duration
	var acked int64
	for cycle := 0; cycle < *failoverCycles; cycle++ {
		for i, cc := range clients {
			cc.c = timedClient(t, fe[i%2], table, failoverRequestTimeout)
		}
		stop := make(chan struct{})
		wg, _ := workload(t, clients, &seq, stop, seen)
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)

		killed := time.Now()
		pg.kill(pg.primary)
		// Probes write through both front ends from the kill on, while
		// the standby is promoted, and record every answer.
		var pwg sync.WaitGroup
		took := make([]time.Duration, len(fe))
		for i, s := range fe {
			pwg.Add(1)
			go func() { defer pwg.Done(); took[i] = probe(t, s, table, killed, 90*time.Second, seen) }()
		}
		pg.promote()
		promoteTook = append(promoteTook, time.Since(killed))
		pwg.Wait()
		close(stop)
		wg.Wait()
		firstWrite = append(firstWrite, slices.Max(took))
		t.Logf("cycle %d: kill → promotion step returned %v, kill → first write through each front end %v", cycle, promoteTook[cycle].Round(time.Millisecond), took)
		if t.Failed() {
			t.FailNow()
		}
		// The clients' logs against the new primary.
		verify := serviceClient(t, fe[cycle%2]).NewClient(table)
		for _, cc := range clients {
			anomalies += verifyClient(t, verify, cc)
		}
		// A new standby, so that the next loss is survivable too.
		pg.attachStandby()
	}
	for _, cc := range clients {
		acked += cc.acked.Load()
	}
	slices.Sort(firstWrite)
	fmt.Fprintf(os.Stderr, "failover test: %d primary losses, %d operations acknowledged, %d anomalies; kill → first successful write: median %v, max %v (the harness's promotion step returned after: median %v); clients saw %s\n",
		*failoverCycles, acked, anomalies, firstWrite[len(firstWrite)/2].Round(time.Millisecond), firstWrite[len(firstWrite)-1].Round(time.Millisecond),
		median(promoteTook).Round(time.Millisecond), seen)
	if len(seen.wrong) > 0 {
		t.Errorf("clients got answers other than success, 503 or a write's 500 OperationTimedOut during failover: %q", seen.wrong)
	}
	if seen.timeouts > 0 {
		t.Errorf("%d requests got no answer within %v", seen.timeouts, failoverRequestTimeout)
	}
	if anomalies != 0 {
		t.Fatalf("%d anomalies", anomalies)
	}
	if acked == 0 {
		t.Fatal("no operation was acknowledged")
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestFailover_FencedPrimary: a planned switchover. The primary is fenced
// (made read-only while it keeps running, as an operator or failover
// manager does before promoting another server) and the standby promoted.
// Pooled connections to the old primary are healthy but refuse writes
// (SQLSTATE 25006); the front ends must answer those with 503, drop the
// connections and find the new primary, never answer with a 500.
func TestFailover_FencedPrimary(t *testing.T) {
	pg := newPGPair(t)
	fe := []*Server{
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
	}
	const table = "fenced"
	if _, err := serviceClient(t, fe[0]).CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	// Warm both pools with connections to the primary.
	for i := 0; i < 20; i++ {
		for _, s := range fe {
			if _, err := serviceClient(t, s).NewClient(table).AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "warm", "RowKey": fmt.Sprintf("%s-%d", s.URL[len(s.URL)-5:], i)}), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	fenced := time.Now()
	pg.exec(pg.primary, `ALTER SYSTEM SET default_transaction_read_only = on`, `SELECT pg_reload_conf()`)
	pg.promote()
	seen := &outcomes{}
	for _, s := range fe {
		took := probe(t, s, table, fenced, 60*time.Second, seen)
		t.Logf("fence → first write through %s: %v", s.URL, took.Round(time.Millisecond))
	}
	t.Logf("clients saw %s", seen)
	if len(seen.wrong) > 0 {
		t.Fatalf("answers other than success or 503 after the switchover: %q", seen.wrong)
	}
}

// TestFailover_StandbyKilled: with the synchronous standby lost, a commit
// waits (PostgreSQL's synchronous_commit=on) and partita must not
// acknowledge it: the client's request times out or gets 503, and reads
// still work. When the standby returns, writes succeed again; every
// acknowledged write is present, and the unacknowledged ones may or may
// not be (they had committed on the primary and were waiting).
func TestFailover_StandbyKilled(t *testing.T) {
	pg := newPGPair(t)
	s := StartServer(t, t.TempDir(), "--store", pg.DSN())
	const table = "standby"
	if _, err := serviceClient(t, s).CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	c := serviceClient(t, s).NewClient(table)
	if _, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "before"}), nil); err != nil {
		t.Fatal(err)
	}
	pg.kill(pg.standby)
	const wait = 3 * time.Second
	short := timedClient(t, s, table, wait)
	seen := &outcomes{}
	var unacked []string
	acked := []string{"before"}
	for i := 0; i < 2; i++ {
		rk := fmt.Sprintf("during-%d", i)
		var err error
		switch i % 2 {
		case 0:
			_, err = short.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk}), nil)
		default:
			_, err = short.SubmitTransaction(ctx, []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk})},
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk + "-b"})},
			}, nil)
		}
		if err == nil {
			t.Errorf("write %s acknowledged with the synchronous standby gone", rk)
			acked = append(acked, rk)
			continue
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("write %s: %v (want a timeout or 503)", rk, err)
		}
		seen.add(err)
		unacked = append(unacked, rk)
	}
	if _, err := timedClient(t, s, table, 10*time.Second).GetEntity(ctx, "p", "before", nil); err != nil {
		t.Errorf("read with the standby gone: %v", err)
	}
	t.Logf("with the standby gone, writes saw %s", seen)
	pg.start(pg.standby)
	pg.waitSync()
	if _, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "after"}), nil); err != nil {
		t.Fatalf("write after the standby returned: %v", err)
	}
	acked = append(acked, "after")
	rows, _ := listAll(t, c, nil)
	have := map[string]bool{}
	for _, r := range rows {
		have[r.RK] = true
	}
	for _, rk := range acked {
		if !have[rk] {
			t.Errorf("acknowledged write %s is missing", rk)
		}
	}
	present := 0
	for i, rk := range unacked {
		// A batch is all or nothing.
		if i%2 == 1 && have[rk] != have[rk+"-b"] {
			t.Errorf("batch %s is partly applied", rk)
		}
		if have[rk] {
			present++
		}
	}
	t.Logf("%d of %d unacknowledged writes were applied once the standby returned", present, len(unacked))
}

// TestFailover_FrontEndKilled: one of two front ends is killed with
// SIGKILL under the crash test's workload. The other keeps serving
// without a single failed request (each of its clients has writes
// acknowledged after the kill), and the clients' logs hold.
func TestFailover_FrontEndKilled(t *testing.T) {
	seed := failoverSeedValue(t, "TestFailover_FrontEndKilled")
	rng := rand.New(rand.NewPCG(seed, 1))
	pg := newPGPair(t)
	fe := []*Server{
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
		StartServer(t, t.TempDir(), "--store", pg.DSN()),
	}
	const table = "frontend"
	if _, err := serviceClient(t, fe[0]).CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	clients := newCrashClients(seed, 8)
	for i, cc := range clients {
		cc.c = timedClient(t, fe[i%2], table, failoverRequestTimeout)
	}
	var seq atomic.Int64
	seen := &outcomes{}
	stop := make(chan struct{})
	wg, failed := workload(t, clients, &seq, stop, seen)
	time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
	fe[0].cmd.Process.Signal(syscall.SIGKILL)
	<-fe[0].done
	before := make([]int64, len(clients))
	for i, cc := range clients {
		before[i] = cc.acked.Load()
	}
	// Run until every client of the surviving front end has had writes
	// acknowledged since the kill (or one of them stopped on a failure).
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		progressed := true
		for i, cc := range clients {
			if i%2 == 1 && !failed[i].Load() && cc.acked.Load() < before[i]+5 {
				progressed = false
			}
		}
		if progressed {
			break
		}
	}
	close(stop)
	wg.Wait()
	verify := serviceClient(t, fe[1]).NewClient(table)
	anomalies := 0
	for i, cc := range clients {
		if i%2 == 1 && failed[i].Load() {
			t.Errorf("client %d of the surviving front end saw a failure", cc.id)
		}
		if i%2 == 1 && cc.acked.Load() == before[i] {
			t.Errorf("client %d of the surviving front end made no progress after the other was killed", cc.id)
		}
		anomalies += verifyClient(t, verify, cc)
	}
	t.Logf("clients saw %s", seen)
	if anomalies != 0 {
		t.Fatalf("%d anomalies", anomalies)
	}
}
