package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

// TestLostCommit_OperationTimedOut: the connection between partita and
// PostgreSQL is lost (a proxy cuts it) once a write's commit has reached
// the database and before its answer is back. The database commits; the
// client must be told the outcome is unknown, 500 OperationTimedOut (the
// service's "may or may not have succeeded"), not 503 ServerBusy, which
// says the request was not taken: an insert-or-replace (a transaction),
// an insert (one conditional statement) and a batch each. A write whose
// connection is lost before its commit was sent still gets 503, and is
// not stored.
func TestLostCommit_OperationTimedOut(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	proxy, viaProxy := pgtest.NewProxy(t, dsn)
	s := StartServer(t, t.TempDir(), "--store", viaProxy)
	c := noRetryClient(t, s.Endpoint(), "lost")
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "warm"}), nil); err != nil {
		t.Fatal(err)
	}
	// cut arms the proxy, runs write and returns its error, after checking
	// that the proxy did cut.
	cut := func(t *testing.T, match func(byte, []byte) bool, write func() error) error {
		t.Helper()
		n := proxy.Cuts()
		proxy.CutAfter(match)
		err := write()
		proxy.Disarm()
		if proxy.Cuts() != n+1 {
			t.Fatalf("the proxy did not cut (err %v)", err)
		}
		return err
	}
	// stored waits for rk to be readable: the database finishes the commit
	// it received on its own time.
	stored := func(t *testing.T, rk string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err := c.GetEntity(ctx, "p", rk, nil)
			if err == nil {
				return
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != 404 || time.Now().After(deadline) {
				t.Fatalf("%s after its commit reached the database: %v", rk, err)
			}
		}
	}

	t.Run("Transaction", func(t *testing.T) {
		err := cut(t, pgtest.Commit, func() error {
			_, err := c.UpsertEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "upsert"}), nil)
			return err
		})
		wantErr(t, err, 500, "OperationTimedOut")
		stored(t, "upsert")
	})
	t.Run("ConditionalStatement", func(t *testing.T) {
		err := cut(t, pgtest.ExecuteSync(), func() error {
			_, err := c.AddEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "insert"}), nil)
			return err
		})
		wantErr(t, err, 500, "OperationTimedOut")
		stored(t, "insert")
	})
	t.Run("Batch", func(t *testing.T) {
		err := cut(t, pgtest.Commit, func() error {
			_, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "batch-a"})},
				{ActionType: aztables.TransactionTypeInsertReplace, Entity: mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "batch-b"})},
			}, nil)
			return err
		})
		wantErr(t, err, 500, "OperationTimedOut")
		stored(t, "batch-a")
		stored(t, "batch-b")
	})
	t.Run("BeforeCommit", func(t *testing.T) {
		// The transaction's first statement after BEGIN (each ends with
		// a Sync) is the last thing the database hears: COMMIT is never
		// sent.
		err := cut(t, pgtest.ExecuteSync(), func() error {
			_, err := c.UpsertEntity(ctx, mustJSONb(map[string]any{"PartitionKey": "p", "RowKey": "lost"}), nil)
			return err
		})
		wantErr(t, err, 503, "ServerBusy")
		_, err = c.GetEntity(ctx, "p", "lost", nil)
		wantErr(t, err, 404, "ResourceNotFound")
	})
}
