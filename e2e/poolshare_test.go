package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

// TestPoolShare: on PostgreSQL every store call holds a pool connection
// while it runs, and the pool (here pool_max_conns=8) is smaller than the
// request slots one client may hold. One client whose calls take long —
// here writes held up by row locks the test takes in the database, a
// stand-in for scans that run to their budget — must hold at most its
// share (--client-share, 50 %) of the connections, and the others' point
// reads, with a 3 s server timeout, must be answered meanwhile. Before the
// store calls were bounded by principal, the client's 24 writes took all 8
// connections and every other read waited in the pool's queue until its
// deadline: 500 OperationTimedOut. The client is another account (two
// accounts configured) or a shared access signature (one account, whose
// key holder reads).
func TestPoolShare(t *testing.T) {
	if E2EStore != "postgres" {
		t.Skip("runs in the PostgreSQL pass (PARTITA_E2E_STORE=postgres): Pebble has no connection pool")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	for _, tc := range []struct {
		name string
		sas  bool
	}{{"account", false}, {"sas", true}} {
		t.Run(tc.name, func(t *testing.T) { testPoolShare(t, tc.sas) })
	}
}

func testPoolShare(t *testing.T, viaSAS bool) {
	const (
		pool      = 8
		attackers = 24
	)
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(pool))
	u.RawQuery = q.Encode()
	flags := []string{"--store", u.String()}
	// The reader: another account, or the attacked account's key holder.
	reader, readerKey := otherAccount, otherKey
	if !viaSAS {
		flags = append(flags, "--accounts", twoAccounts)
	} else {
		reader, readerKey = devAccount, devKey
	}
	s := StartServer(t, "", flags...)
	createTableAs(t, s, devAccount, devKey, "hot")
	createTableAs(t, s, reader, readerKey, "calm")
	client := &http.Client{Timeout: time.Minute}
	for i := 0; i < attackers; i++ {
		if st, code, _ := keyedInsert(client, s, devAccount, devKey, "hot", "r"+strconv.Itoa(i)); st != 204 {
			t.Fatalf("insert: %d %s", st, code)
		}
	}
	if st, code, _ := keyedInsert(client, s, reader, readerKey, "calm", "k"); st != 204 {
		t.Fatalf("insert: %d %s", st, code)
	}
	sas := ""
	if viaSAS {
		sas = sasSpec{table: "hot", perms: "raud"}.build(t)
	}

	// Lock every row: the attacker's writes wait on their entities' locks
	// holding their connections; reads do not wait on row locks.
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	lockTx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lockTx.Rollback(ctx)
	if _, err := lockTx.Exec(ctx, `SELECT k FROM partita_kv FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// waiting counts the database's sessions waiting for a lock: the
	// attacker's calls that hold a connection.
	watcher, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	waiting := func() int {
		var n int
		if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	type outcome struct {
		status int
		code   string
	}
	results := make(chan outcome, attackers)
	var wg sync.WaitGroup
	for i := 0; i < attackers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			path := "/" + devAccount + "/hot(PartitionKey='p',RowKey='r" + strconv.Itoa(i) + "')"
			req, _ := http.NewRequest("PUT", s.URL+path, strings.NewReader(`{"V":`+strconv.Itoa(i)+`}`))
			if viaSAS {
				req.URL.RawQuery = sas
				req.Header.Set("x-ms-version", "2019-02-02")
			} else {
				for k, v := range liteHeaders(devAccount, devKey, path) {
					req.Header.Set(k, v)
				}
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				results <- outcome{0, err.Error()}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- outcome{resp.StatusCode, resp.Header.Get("x-ms-error-code")}
		}(i)
	}
	released := false
	release := func() {
		if !released {
			released = true
			lockTx.Rollback(ctx)
		}
	}
	defer func() { release(); wg.Wait() }()

	// Until the attack holds what it can.
	deadline := time.Now().Add(20 * time.Second)
	for waiting() < pool/2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of the attacker's writes wait on their locks after 20 s", waiting())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // and a little longer, for any beyond the share
	most := waiting()

	target := "/" + reader + "/calm(PartitionKey='p',RowKey='k')"
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", s.URL+target+"?timeout=3", nil)
		for k, v := range liteHeaders(reader, readerKey, target) {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("read %d during the attack: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("read %d during the attack: %d %s after %v; want 200 (the attacker may hold at most half the pool)",
				i, resp.StatusCode, resp.Header.Get("x-ms-error-code"), time.Since(start).Round(time.Millisecond))
		}
		most = max(most, waiting())
	}
	t.Logf("the attacker's calls held %d of the pool's %d connections at most", most, pool)
	if most > pool/2 {
		t.Errorf("the attacker's calls held %d of the pool's %d connections; want at most its share, %d", most, pool, pool/2)
	}

	// Once the locks go, every write of the attacker is served.
	release()
	wg.Wait()
	close(results)
	for r := range results {
		if r.status != 204 {
			t.Errorf("attacker's write after the locks went: %d %s; want 204", r.status, r.code)
		}
	}
}
