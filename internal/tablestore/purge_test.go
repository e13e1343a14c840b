package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/kvtest"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/tablestore"
)

// failingPurgeDB fails its first DeleteRange calls, as a database that
// restarts (or whose connections are killed) while a table is purged.
type failingPurgeDB struct {
	kv.DB
	fails atomic.Int32
}

func (d *failingPurgeDB) DeleteRange(ctx context.Context, start, end []byte) error {
	if d.fails.Add(-1) >= 0 {
		return errors.New("terminating connection due to administrator command")
	}
	return d.DB.DeleteRange(ctx, start, end)
}

// TestPurgeRetries: a purge that fails is tried again until it is done, so
// the dropped table's name is free again without a restart (it answered
// TableBeingDeleted until the next start).
func TestPurgeRetries(t *testing.T) {
	ctx := context.Background()
	db := &failingPurgeDB{DB: memkv.New()}
	s, err := tablestore.Open(ctx, db, tablestore.Options{PurgeRetry: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "acct", "purged"); err != nil {
		t.Fatal(err)
	}
	db.fails.Store(3)
	if err := s.DeleteTable(ctx, "acct", "purged"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.CreateTable(ctx, "acct", "purged")
		if err == nil {
			break
		}
		if partita.ErrorCode(err) != partita.CodeTableBeingDeleted || time.Now().After(deadline) {
			t.Fatalf("CreateTable after a failed purge: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := db.fails.Load(); n >= 0 {
		t.Errorf("%d failures left: the purge was not retried past them", n+1)
	}
}

// TestCloseStopsPurgeRetries: Close does not wait for a purge that keeps
// failing; the next Open resumes it.
func TestCloseStopsPurgeRetries(t *testing.T) {
	ctx := context.Background()
	db := &failingPurgeDB{DB: memkv.New()}
	s, err := tablestore.Open(ctx, db, tablestore.Options{PurgeRetry: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, "acct", "stuck"); err != nil {
		t.Fatal(err)
	}
	db.fails.Store(1)
	if err := s.DeleteTable(ctx, "acct", "stuck"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a purge's retry")
	}
	s2, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := s2.CreateTable(ctx, "acct", "stuck"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("CreateTable after reopening: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// blockingPurgeDB's DeleteRange waits until its context ends, as a purge
// on PostgreSQL waits for rows another session holds locked; it counts the
// calls and the most in flight at once.
type blockingPurgeDB struct {
	kv.DB
	calls, inFlight, most atomic.Int32
}

func (d *blockingPurgeDB) DeleteRange(ctx context.Context, start, end []byte) error {
	d.calls.Add(1)
	n := d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestBlockedPurgesAreBounded: purges that the database does not let
// finish hold at most MaxPurges connections at once, give up after the
// purge timeout and are tried again, and do not hold up Close. Before, each
// dropped table's purge waited for ever on its own connection, and enough
// of them took a shared store's whole pool: requests for other tables
// timed out.
func TestBlockedPurgesAreBounded(t *testing.T) {
	defer tablestore.SetPurgeTimeout(100 * time.Millisecond)()
	ctx := context.Background()
	db := &blockingPurgeDB{DB: memkv.New()}
	s, err := tablestore.Open(ctx, db, tablestore.Options{PurgeRetry: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const tables = 6
	for i := 0; i < tables; i++ {
		name := fmt.Sprintf("locked%d", i)
		if _, err := s.CreateTable(ctx, "acct", name); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTable(ctx, "acct", name); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for db.calls.Load() < tables+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := db.calls.Load(); n < tables+2 {
		t.Errorf("%d purge attempts in 5 s, want every table's and retries (the attempts give up after the timeout)", n)
	}
	if m := db.most.Load(); m > int32(tablestore.MaxPurges()) {
		t.Errorf("%d purges in the database at once, want at most %d", m, tablestore.MaxPurges())
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for purges the database does not let finish")
	}
}

// lostAnswerDB applies an Update and then, once armed, reports its outcome
// unknown: a shared store whose connection broke after the commit left.
type lostAnswerDB struct {
	kv.DB
	lose atomic.Bool
}

func (d *lostAnswerDB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	err := d.DB.Update(ctx, fn)
	if err == nil && d.lose.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: the connection failed after the commit was sent", kv.ErrOutcomeUnknown)
	}
	return err
}

// TestLostDropIsPurged: a Delete Table whose answer was lost (500
// OperationTimedOut) but which applied leaves the table dropped with no
// purge running. Creating the name again, or retrying the drop (as the
// SDKs do after a 500), starts the purge, so the name comes free; it
// answered TableBeingDeleted until some front end restarted.
func TestLostDropIsPurged(t *testing.T) {
	for _, retry := range []string{"create", "delete again"} {
		t.Run(retry, func(t *testing.T) {
			ctx := context.Background()
			db := &lostAnswerDB{DB: memkv.New()}
			s, err := tablestore.Open(ctx, db, tablestore.Options{PurgeRetry: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CreateTable(ctx, "acct", "lost"); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				e := &partita.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)}
				if _, err := s.Write(ctx, "acct", "lost", partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
					t.Fatal(err)
				}
			}
			before := kvtest.Count(t, db, nil, nil)
			db.lose.Store(true)
			err = s.DeleteTable(ctx, "acct", "lost")
			if partita.ErrorCode(err) != partita.CodeOperationTimedOut {
				t.Fatalf("DeleteTable with its answer lost: %v, want OperationTimedOut", err)
			}
			if retry == "delete again" {
				if err := s.DeleteTable(ctx, "acct", "lost"); partita.ErrorCode(err) != partita.CodeResourceNotFound {
					t.Fatalf("the retried DeleteTable: %v, want ResourceNotFound (the drop had applied)", err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := s.CreateTable(ctx, "acct", "lost")
				if err == nil {
					break
				}
				if partita.ErrorCode(err) != partita.CodeTableBeingDeleted || time.Now().After(deadline) {
					t.Fatalf("CreateTable after a drop whose answer was lost: %v", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if after := kvtest.Count(t, db, nil, nil); after > before-50 {
				t.Errorf("%d keys after the purge and the new table, %d before: the dropped rows are still there", after, before)
			}
		})
	}
}

// TestPurgeSparesALiveTable: a purge started for a table whose drop did
// not apply (the drop's outcome unknown, the table still live) removes
// nothing.
func TestPurgeSparesALiveTable(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	s, err := tablestore.Open(ctx, db, tablestore.Options{PurgeRetry: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTable(ctx, "acct", "live"); err != nil {
		t.Fatal(err)
	}
	e := &partita.Entity{PartitionKey: "p", RowKey: "r"}
	if _, err := s.Write(ctx, "acct", "live", partita.Op{Kind: partita.OpInsert, Entity: e}); err != nil {
		t.Fatal(err)
	}
	if err := tablestore.PurgeNow(ctx, s, "acct", "live"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEntity(ctx, "acct", "live", partita.Key{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatalf("the live table's entity after a purge attempt: %v", err)
	}
}
