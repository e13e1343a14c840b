package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
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
	crashCycles = flag.Int("crash.cycles", 10, "kill -9 cycles of TestCrashRecovery (long mode: hundreds)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestCrashRecovery (0: time-based)")
)

// props is an entity's custom properties as the model tracks them.
type props map[string]int

func (p props) clone() props {
	q := props{}
	for k, v := range p {
		q[k] = v
	}
	return q
}

func (p props) equal(q props) bool {
	if len(p) != len(q) {
		return false
	}
	for k, v := range p {
		if w, ok := q[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// crashClient owns one partition; its keys are written by no one else, so
// each key has a sequential history the client knows exactly.
type crashClient struct {
	id    int
	c     *aztables.Client
	rng   *rand.Rand
	state map[string]props // acknowledged state; nil = absent
	// pending is the operation in flight when the server died: the state
	// each affected key would have if it applied. All of it or none of it
	// may be visible after the restart.
	pending map[string]props
	pendDel map[string]bool
	acked   atomic.Int64
	// timedOutOK lets a write end as 500 OperationTimedOut ("may or may
	// not have succeeded"): where the database can be lost under a commit
	// in flight, partita answers that. Such a write is pending, as one
	// that got no answer. Elsewhere the answer is an unexpected error.
	timedOutOK bool
}

func (cc *crashClient) pk() string { return fmt.Sprintf("part%03d", cc.id) }

// step issues one random operation. It returns an error only when the
// server is unreachable (the operation's fate is then unknown).
func (cc *crashClient) step(seq int) error {
	rk := fmt.Sprintf("r%02d", cc.rng.IntN(12))
	cur, exists := cc.state[rk]
	switch op := cc.rng.IntN(6); {
	case op == 0 && !exists: // insert
		next := props{"Seq": seq, "A": seq}
		return cc.do(map[string]props{rk: next}, nil, func() error {
			_, err := cc.c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": cc.pk(), "RowKey": rk, "Seq": seq, "A": seq}), nil)
			return err
		})
	case op == 1: // upsert (replace)
		next := props{"Seq": seq, "B": seq}
		return cc.do(map[string]props{rk: next}, nil, func() error {
			_, err := cc.c.UpsertEntity(ctx, mustJSONb(map[string]any{"PartitionKey": cc.pk(), "RowKey": rk, "Seq": seq, "B": seq}), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			return err
		})
	case op == 2 && exists: // read-modify-write merge with the ETag
		r, err := cc.c.GetEntity(ctx, cc.pk(), rk, nil)
		if err != nil {
			return unreachable(err)
		}
		next := cur.clone()
		next["Seq"], next["C"] = seq, seq
		return cc.do(map[string]props{rk: next}, nil, func() error {
			_, err := cc.c.UpdateEntity(ctx, mustJSONb(map[string]any{"PartitionKey": cc.pk(), "RowKey": rk, "Seq": seq, "C": seq}), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &r.ETag})
			return err
		})
	case op == 3 && exists: // delete
		return cc.do(nil, map[string]bool{rk: true}, func() error {
			_, err := cc.c.DeleteEntity(ctx, cc.pk(), rk, nil)
			return err
		})
	default: // batch of insert-or-replace / insert-or-merge / delete over distinct keys
		keys := cc.rng.Perm(12)[:2+cc.rng.IntN(5)]
		next := map[string]props{}
		dels := map[string]bool{}
		var acts []aztables.TransactionAction
		for i, k := range keys {
			rk := fmt.Sprintf("r%02d", k)
			ent := map[string]any{"PartitionKey": cc.pk(), "RowKey": rk, "Seq": seq, "D": i}
			switch cc.rng.IntN(3) {
			case 0:
				acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(ent)})
				next[rk] = props{"Seq": seq, "D": i}
			case 1:
				acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertMerge, Entity: mustJSONb(ent)})
				p := props{}
				if cur, ok := cc.state[rk]; ok {
					p = cur.clone()
				}
				p["Seq"], p["D"] = seq, i
				next[rk] = p
			default:
				if _, ok := cc.state[rk]; !ok {
					acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(ent)})
					next[rk] = props{"Seq": seq, "D": i}
					continue
				}
				acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: mustJSONb(map[string]any{"PartitionKey": cc.pk(), "RowKey": rk})})
				dels[rk] = true
			}
		}
		return cc.do(next, dels, func() error {
			_, err := cc.c.SubmitTransaction(ctx, acts, nil)
			return err
		})
	}
}

// do runs a write; on acknowledgment it updates the model, on an
// unreachable server it records the write as pending. Any service error
// (a 4xx the model did not expect) fails the test.
func (cc *crashClient) do(next map[string]props, dels map[string]bool, fn func() error) error {
	err := fn()
	if err == nil {
		for k, p := range next {
			cc.state[k] = p
		}
		for k := range dels {
			delete(cc.state, k)
		}
		cc.acked.Add(1)
		return nil
	}
	if cc.timedOutOK && isTimedOut(err) {
		err = fmt.Errorf("%w: %w", errTimedOut, err)
	}
	if e := unreachable(err); errors.Is(e, errUnreachable) {
		cc.pending, cc.pendDel = next, dels
		return e
	}
	return fmt.Errorf("client %d: unexpected service error: %w", cc.id, err)
}

var errUnreachable = errors.New("server unreachable")

// errTimedOut marks a write answered 500 OperationTimedOut where the
// test allows it (crashClient.timedOutOK): its outcome is unknown, and it
// counts as unreachable.
var errTimedOut = errors.New("outcome unknown (500 OperationTimedOut)")

// isTimedOut reports a 500 OperationTimedOut answer.
func isTimedOut(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusInternalServerError && re.ErrorCode == "OperationTimedOut"
}

// unreachable classifies err: a transport failure (the server died), a
// 503 (the server is up but its store is not, as while PostgreSQL fails
// over) or an error marked errTimedOut gives errUnreachable, since the
// operation's fate is unknown; anything else is returned as is.
func unreachable(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode != http.StatusServiceUnavailable && !errors.Is(err, errTimedOut) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnreachable, err)
}

func mustJSONb(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestCrashRecovery kills partita with SIGKILL at random moments while
// clients write, restarts it on the same data, and checks every
// acknowledged write against the clients' own log: acknowledged writes are
// there with their last acknowledged value, acknowledged deletes are gone,
// and each operation in flight at the kill (single writes and whole
// batches) is either fully applied or fully absent.
func TestCrashRecovery(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./e2e -run TestCrashRecovery -args -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	const nclients = 8
	clients := make([]*crashClient, nclients)
	for i := range clients {
		clients[i] = &crashClient{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i+2))), state: map[string]props{}}
	}
	table := "crash"
	var seq atomic.Int64
	anomalies := 0
	noRetry := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, Transport: &http.Client{Timeout: 10 * time.Second}}}
	for cycle := 0; cycle < *crashCycles; cycle++ {
		s := StartServer(t, dir)
		cred, _ := aztables.NewSharedKeyCredential(devAccount, devKey)
		svc, err := aztables.NewServiceClientWithSharedKey(s.Endpoint(), cred, noRetry)
		if err != nil {
			t.Fatal(err)
		}
		if cycle == 0 {
			if _, err := svc.CreateTable(ctx, table, nil); err != nil {
				t.Fatal(err)
			}
		}
		c := svc.NewClient(table)
		// Verify the state left by the previous cycle.
		if cycle > 0 {
			for _, cc := range clients {
				anomalies += verifyClient(t, c, cc)
			}
		}
		// Write until the kill.
		killAt := time.Duration(200+rng.IntN(1300)) * time.Millisecond
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for _, cc := range clients {
			cc.c = c
			wg.Add(1)
			go func(cc *crashClient) {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := cc.step(int(seq.Add(1))); err != nil {
						if !errors.Is(err, errUnreachable) {
							t.Error(err)
						}
						return
					}
				}
			}(cc)
		}
		time.Sleep(killAt)
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
		close(stop)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	// Final check after a last restart.
	s := StartServer(t, dir)
	svc := serviceClient(t, s)
	c := svc.NewClient(table)
	var total int64
	for _, cc := range clients {
		anomalies += verifyClient(t, c, cc)
		total += cc.acked.Load()
	}
	fmt.Fprintf(os.Stderr, "crash test: %d cycles, %d operations acknowledged, %d anomalies\n", *crashCycles, total, anomalies)
	if anomalies != 0 {
		t.Fatalf("%d anomalies", anomalies)
	}
	if total == 0 {
		t.Fatal("no operation was acknowledged")
	}
}

// verifyClient compares a client's partition with its model, resolves the
// pending operation, and adopts the stored state. It returns the number of
// anomalies.
func verifyClient(t *testing.T, c *aztables.Client, cc *crashClient) int {
	t.Helper()
	got := partitionState(t, c, cc.pk())
	// The expected state if the pending op did not apply, and if it did.
	without := cc.state
	with := map[string]props{}
	for k, v := range cc.state {
		with[k] = v
	}
	for k, p := range cc.pending {
		with[k] = p
	}
	for k := range cc.pendDel {
		delete(with, k)
	}
	same := func(a, b map[string]props) bool {
		if len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !v.equal(w) {
				return false
			}
		}
		return true
	}
	anomalies := 0
	if !same(got, without) && !same(got, with) {
		anomalies++
		t.Errorf("client %d: stored state %v matches neither the acknowledged state %v nor it plus the in-flight operation %v (deletes %v)", cc.id, got, without, cc.pending, cc.pendDel)
	}
	cc.state, cc.pending, cc.pendDel = got, nil, nil
	return anomalies
}

// partitionState reads a crash client's partition as the model tracks it:
// RowKey → numeric properties.
func partitionState(t *testing.T, c *aztables.Client, pk string) map[string]props {
	t.Helper()
	got := map[string]props{}
	f := fmt.Sprintf("PartitionKey eq '%s'", pk)
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
	for pager.More() {
		p, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list after restart: %v", err)
		}
		for _, raw := range p.Entities {
			var m map[string]any
			json.Unmarshal(raw, &m)
			pr := props{}
			for k, v := range m {
				if n, ok := v.(float64); ok {
					pr[k] = int(n)
				}
			}
			got[m["RowKey"].(string)] = pr
		}
	}
	return got
}
