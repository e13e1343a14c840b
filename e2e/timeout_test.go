package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// serverTimeout adds timeout=<seconds> to every request's URL, as the SDKs
// do when the caller sets a server timeout.
type serverTimeout string

func (s serverTimeout) Do(req *policy.Request) (*http.Response, error) {
	u := req.Raw().URL
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "timeout=" + string(s)
	return req.Next()
}

// serverTimeoutClient is timedClient with `timeout` on every request
// (none when seconds is "").
func serverTimeoutClient(t *testing.T, s *Server, table string, clientTimeout time.Duration, seconds string) *aztables.Client {
	t.Helper()
	cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
	o := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Transport: &http.Client{Timeout: clientTimeout},
	}}
	if seconds != "" {
		o.PerCallPolicies = []policy.Policy{serverTimeout(seconds)}
	}
	svc, err := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, o)
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewClient(table)
}

// TestFailover_StandbyKilledServerTimeout: with the synchronous standby
// lost, a commit waits in PostgreSQL; partita abandons it at the server
// timeout and answers 500 OperationTimedOut (which the SDKs retry) well
// before the client's own timeout: an insert and a $batch sent with
// timeout=2 after about 2 s, and without `timeout` after the server's
// default (--max-request-timeout, 3 s here instead of 30 s). With
// --max-inflight 2, the timed-out writes give their slots back: a read
// afterwards is served. When the standby returns, writes succeed, every
// acknowledged write is present, and each timed-out batch is all or
// nothing.
func TestFailover_StandbyKilledServerTimeout(t *testing.T) {
	pg := newPGPair(t)
	s := StartServer(t, t.TempDir(), "--store", pg.DSN(), "--max-request-timeout", "3s", "--max-inflight", "2")
	const table = "servertimeout"
	if _, err := serviceClient(t, s).CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	c := serviceClient(t, s).NewClient(table)
	if _, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "before"}), nil); err != nil {
		t.Fatal(err)
	}
	pg.kill(pg.standby)

	const clientTimeout = 15 * time.Second
	clients := map[string]*aztables.Client{
		"2": serverTimeoutClient(t, s, table, clientTimeout, "2"),
		"":  serverTimeoutClient(t, s, table, clientTimeout, ""),
	}
	wants := map[string]time.Duration{"2": 2 * time.Second, "": 3 * time.Second}
	var batches []string
	for i, seconds := range []string{"2", "2", "", "", "2"} {
		rk := fmt.Sprintf("during-%d", i)
		cl := clients[seconds]
		start := time.Now()
		var err error
		if i%2 == 0 {
			_, err = cl.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk}), nil)
		} else {
			batches = append(batches, rk)
			_, err = cl.SubmitTransaction(ctx, []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk})},
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": rk + "-b"})},
			}, nil)
		}
		took := time.Since(start)
		what := fmt.Sprintf("write %s (timeout=%q)", rk, seconds)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError || re.ErrorCode != "OperationTimedOut" {
			t.Errorf("%s with the synchronous standby gone: %v (want 500 OperationTimedOut)", what, err)
		}
		if want := wants[seconds]; took < want-100*time.Millisecond || took > want+2*time.Second {
			t.Errorf("%s answered after %v, want about %v", what, took, want)
		}
	}
	// Two writes with timeout=2 hold both slots, their clients still
	// waiting; at the deadline they give the slots back, so a read sent
	// after it is served at once (not 503 ServerBusy after --queue-wait).
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := clients["2"].AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": fmt.Sprintf("q%d", i), "RowKey": "r"}), nil)
			if !isCode(err, http.StatusInternalServerError, "OperationTimedOut") {
				t.Errorf("concurrent write %d: %v (want 500 OperationTimedOut)", i, err)
			}
		}(i)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := timedClient(t, s, table, 10*time.Second).GetEntity(ctx, "p", "before", nil); err != nil {
		t.Errorf("read after the timed-out writes' deadline: %v", err)
	}
	wg.Wait()
	// A bad timeout is refused, whatever the database's state.
	if _, err := serverTimeoutClient(t, s, table, clientTimeout, "-1").GetEntity(ctx, "p", "before", nil); !isCode(err, http.StatusBadRequest, "InvalidQueryParameterValue") {
		t.Errorf("timeout=-1: %v (want 400 InvalidQueryParameterValue)", err)
	}

	pg.start(pg.standby)
	pg.waitSync()
	if _, err := clients["2"].AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "after"}), nil); err != nil {
		t.Fatalf("write with timeout=2 after the standby returned: %v", err)
	}
	rows, _ := listAll(t, c, nil)
	have := map[string]bool{}
	for _, r := range rows {
		have[r.RK] = true
	}
	for _, rk := range []string{"before", "after"} {
		if !have[rk] {
			t.Errorf("acknowledged write %s is missing", rk)
		}
	}
	for _, rk := range batches {
		if have[rk] != have[rk+"-b"] {
			t.Errorf("batch %s is partly applied", rk)
		}
	}
	present := 0
	for i := 0; i < 5; i++ {
		if have[fmt.Sprintf("during-%d", i)] {
			present++
		}
	}
	t.Logf("%d of 5 timed-out writes were applied (each had committed on the primary and was waiting for the standby)", present)
}

func isCode(err error, status int, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status && re.ErrorCode == code
}
