package pgkv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

// TestDeadlineAbandonsStuckCalls: with partita_kv locked by another
// session, every kind of call (a transaction's write, a commit-less
// conditional write, a point read, a scan) waits in PostgreSQL until its
// context's deadline, then fails promptly with context.DeadlineExceeded
// (500 OperationTimedOut), not kv.ErrUnavailable (503). Once the lock is
// gone, the pool serves every call again: the interrupted connections
// were closed, not handed out again mid-statement, and none of the
// abandoned writes took effect.
func TestDeadlineAbandonsStuckCalls(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	db, err := Open(context.Background(), dsn, &Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bg := context.Background()
	if err := db.Update(bg, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v0")) }); err != nil {
		t.Fatal(err)
	}

	holder, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(bg)
	lock, err := holder.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(bg, `LOCK TABLE partita_kv IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	const deadline = 300 * time.Millisecond
	calls := map[string]func(ctx context.Context) error{
		"update": func(ctx context.Context) error {
			return db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("lost")) })
		},
		"condwrite": func(ctx context.Context) error {
			_, err := db.CondWrite(ctx, kv.CondWrite{Key: []byte("k2"), Value: []byte("lost"), Absent: true, GuardKey: []byte("k"), GuardValue: []byte("v0")})
			return err
		},
		"get": func(ctx context.Context) error {
			return db.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("k")); return err })
		},
		"scan": func(ctx context.Context) error {
			return db.View(ctx, func(r kv.Reader) error {
				it, err := r.NewIter(kv.IterOptions{})
				if err != nil {
					return err
				}
				defer it.Close()
				it.First()
				return it.Error()
			})
		},
	}
	// Twice each, more calls than the pool has connections.
	for round := 0; round < 2; round++ {
		for name, call := range calls {
			ctx, cancel := context.WithTimeout(bg, deadline)
			start := time.Now()
			err := call(ctx)
			took := time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kv.ErrUnavailable) {
				t.Errorf("%s with the table locked: %v (want context.DeadlineExceeded, not unavailable)", name, err)
			}
			if took < deadline-50*time.Millisecond || took > deadline+2*time.Second {
				t.Errorf("%s returned after %v, want about %v", name, took, deadline)
			}
		}
	}
	if err := lock.Rollback(bg); err != nil {
		t.Fatal(err)
	}

	// Every connection the pool hands out now works.
	for i := 0; i < 12; i++ {
		var v []byte
		err := db.View(bg, func(r kv.Reader) error {
			var err error
			v, err = r.Get([]byte("k"))
			return err
		})
		if err != nil || string(v) != "v0" {
			t.Fatalf("read %d after the lock: %q, %v (want v0: the abandoned update must not apply)", i, v, err)
		}
		if err := db.Update(bg, func(tx kv.Txn) error { return tx.Set([]byte("n"), []byte{byte(i)}) }); err != nil {
			t.Fatalf("write %d after the lock: %v", i, err)
		}
	}
	err = db.View(bg, func(r kv.Reader) error { _, err := r.Get([]byte("k2")); return err })
	if !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("the abandoned conditional write: %v (want not found)", err)
	}
	// No session of this database is left inside a transaction or
	// waiting: pgx canceled and closed the interrupted ones.
	var stuck int
	deadlineWait := time.Now().Add(5 * time.Second)
	for {
		err := holder.QueryRow(bg, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND (state LIKE 'idle in transaction%' OR wait_event_type = 'Lock')`).Scan(&stuck)
		if err != nil {
			t.Fatal(err)
		}
		if stuck == 0 || time.Now().After(deadlineWait) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if stuck != 0 {
		t.Errorf("%d sessions still in a transaction or waiting for a lock", stuck)
	}
}

// TestClassifyCtx: an error of a call whose context's deadline passed is
// context.DeadlineExceeded whatever the driver said (pgx reports a
// deadline it set on the connection as a net.Error timeout, which
// classify alone would call unavailable); before the deadline, classify
// decides.
func TestClassifyCtx(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	netTimeout := &timeoutErr{}
	if err := classifyCtx(expired, netTimeout); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("after the deadline: %v", err)
	}
	if err := classifyCtx(context.Background(), netTimeout); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("no deadline, a network timeout: %v (want unavailable)", err)
	}
	if classifyCtx(expired, nil) != nil {
		t.Error("nil error became non-nil")
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
