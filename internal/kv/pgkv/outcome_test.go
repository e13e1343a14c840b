package pgkv_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

// TestLostCommitOutcomeUnknown: the connection is lost (a proxy between
// the engine and PostgreSQL cuts it) right after the call that commits
// has reached the server, before its answer comes back: a transaction's
// COMMIT, and a conditional write's one statement with the Sync that ends
// its implicit transaction. The server commits; the engine cannot know
// it, and must say the outcome is unknown (kv.ErrOutcomeUnknown: 500
// OperationTimedOut), not that the store was unavailable (503 ServerBusy,
// "not taken", which would have been a lie here: the writes are there).
// A connection lost before the commit was sent (the transaction's writes
// were sent, COMMIT was not), or one the server had already ended, still
// gives kv.ErrUnavailable, and nothing is written.
func TestLostCommitOutcomeUnknown(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	proxy, viaProxy := pgtest.NewProxy(t, dsn)
	db := open(t, viaProxy)
	defer func() {
		// Close waits for every pooled connection to come back; one that a
		// lost connection kept would hang it (this test once sat 10
		// minutes there in CI, with no goroutine holding a connection).
		closed := make(chan struct{})
		go func() { db.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Errorf("Close still waiting after 30 s: a pooled connection was never given back (%+v)", poolCounts(db))
		}
	}()
	direct := open(t, dsn)
	defer direct.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("guard"), []byte("g")) }); err != nil {
		t.Fatal(err)
	}

	// applied waits for key to hold want, read around the proxy: the server
	// finishes what it was sent on its own time.
	applied := func(t *testing.T, key, want string) bool {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var v []byte
			err := direct.View(ctx, func(r kv.Reader) error {
				var err error
				v, err = r.Get([]byte(key))
				return err
			})
			if err == nil && string(v) == want {
				return true
			}
			if err != nil && !errors.Is(err, kv.ErrNotFound) {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	unknown := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, kv.ErrOutcomeUnknown) || errors.Is(err, kv.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s, its answer lost: %v (want kv.ErrOutcomeUnknown alone)", what, err)
		}
	}
	notTaken := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, kv.ErrUnavailable) || errors.Is(err, kv.ErrOutcomeUnknown) {
			t.Errorf("%s: %v (want kv.ErrUnavailable: nothing was committed)", what, err)
		}
	}

	// settled fails the step that keeps a pooled connection after its
	// connection was lost: the pool must get every one back (returned, or
	// destroyed as broken), or it shrinks by one per lost connection.
	settled := func(t *testing.T) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			c := poolCounts(db)
			if c.acquired == 0 && c.constructing == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("a connection still taken from the pool after the step: %+v", c)
				return
			}
		}
	}

	t.Run("Commit", func(t *testing.T) {
		defer settled(t)
		cuts := proxy.Cuts()
		proxy.CutAfter(pgtest.Commit)
		err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k1"), []byte("v1")) })
		if proxy.Cuts() != cuts+1 {
			t.Fatalf("the proxy did not cut at the COMMIT (err %v)", err)
		}
		unknown(t, "a commit", err)
		if !applied(t, "k1", "v1") {
			t.Error("the server did not commit what it was sent: the test cut before the COMMIT reached it")
		}
	})

	t.Run("CondWrite", func(t *testing.T) {
		defer settled(t)
		cuts := proxy.Cuts()
		proxy.CutAfter(pgtest.ExecuteSync())
		_, err := db.CondWrite(ctx, kv.CondWrite{Key: []byte("k2"), Value: []byte("v2"), Absent: true, GuardKey: []byte("guard"), GuardValue: []byte("g")})
		if proxy.Cuts() != cuts+1 {
			t.Fatalf("the proxy did not cut after the statement (err %v)", err)
		}
		unknown(t, "a conditional write", err)
		if !applied(t, "k2", "v2") {
			t.Error("the server did not apply the statement it was sent")
		}
	})

	t.Run("BeforeCommit", func(t *testing.T) {
		defer settled(t)
		// The transaction's writes go out as one pipelined batch ending
		// with a Sync, before COMMIT: cut there.
		cuts := proxy.Cuts()
		proxy.CutAfter(pgtest.ExecuteSync())
		err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k3"), []byte("v3")) })
		if proxy.Cuts() != cuts+1 {
			t.Fatalf("the proxy did not cut after the writes (err %v)", err)
		}
		notTaken(t, "a transaction lost before its COMMIT", err)
		var v []byte
		err = direct.View(ctx, func(r kv.Reader) error { v, err = r.Get([]byte("k3")); return err })
		if !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("k3 after a transaction lost before its COMMIT: %q, %v (want not found)", v, err)
		}
	})

	t.Run("EndedByServer", func(t *testing.T) {
		// The server ends the session while the transaction is open
		// (pg_terminate_backend, as an administrator or a restart does);
		// the commit finds it gone, with the server's reason in hand.
		u, _ := url.Parse(dsn)
		name := strings.TrimPrefix(u.Path, "/")
		admin, err := pgx.Connect(ctx, pgtest.AdminDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		err = direct.Update(ctx, func(tx kv.Txn) error {
			if _, err := tx.Get([]byte("guard")); err != nil {
				return err
			}
			var pids []int32
			rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'`, name)
			if err == nil {
				pids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
			}
			if err != nil || len(pids) != 1 {
				t.Fatalf("the transaction's session: %v, %v", pids, err)
			}
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1, 10000)`, pids[0]); err != nil {
				t.Fatal(err)
			}
			return nil // nothing to write: the error comes at COMMIT
		})
		notTaken(t, "a commit on a session the server ended", err)
	})
}

type counts struct{ acquired, constructing, total int32 }

func poolCounts(db *pgkv.DB) counts {
	st := db.PoolStat()
	return counts{st.AcquiredConns(), st.ConstructingConns(), st.TotalConns()}
}

// TestServerTimeoutsAreUnavailable: the server's own time limits, which an
// operator may set for partita's role or database, end a write that was
// not committed: idle_in_transaction_session_timeout ends the session of a
// transaction left idle (a front end stalled between its statements,
// SQLSTATE 25P03), lock_timeout ends a statement that waited too long for
// a row another session holds (55P03). Both are kv.ErrUnavailable (503
// ServerBusy, which clients retry), and nothing is written. Before, they
// were unclassified errors: 500 InternalError.
func TestServerTimeoutsAreUnavailable(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	direct := open(t, dsn)
	defer direct.Close()
	notTaken := func(t *testing.T, what, key string, err error) {
		t.Helper()
		if !errors.Is(err, kv.ErrUnavailable) || errors.Is(err, kv.ErrOutcomeUnknown) {
			t.Errorf("%s: %v (want kv.ErrUnavailable: nothing was committed)", what, err)
		}
		err = direct.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte(key)); return err })
		if !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("%s: %s after the failed write: %v (want not found)", what, key, err)
		}
	}
	withOption := func(opt string) string {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Del("options")
		u.RawQuery = q.Encode()
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += "options=" + strings.ReplaceAll(url.QueryEscape("-c "+opt), "+", "%20") // pgx takes + literally
		return u.String()
	}

	t.Run("IdleInTransaction", func(t *testing.T) {
		db := open(t, withOption("idle_in_transaction_session_timeout=100"))
		defer db.Close()
		err := db.Update(ctx, func(tx kv.Txn) error {
			tx.Get([]byte("idle"))
			time.Sleep(400 * time.Millisecond) // a front end stalled mid-transaction
			return tx.Set([]byte("idle"), []byte("v"))
		})
		notTaken(t, "a transaction ended by idle_in_transaction_session_timeout", "idle", err)
	})

	t.Run("IdleInTransactionByDefault", func(t *testing.T) {
		// partita sets the limit itself when the server has none (the
		// default, 10 s, is Options' zero value; a shorter one here), so
		// a stalled front end's row locks do not hold other front ends'
		// writes for as long as it stalls; the DSN's value above, ten
		// times shorter than the wait, still ends its transaction.
		// stall opens a store with partita's limit at 0.2 s on dsn and
		// returns the error of a write transaction idle 0.7 s.
		stall := func(dsn, key string) error {
			db, err := pgkv.Open(ctx, dsn, &pgkv.Options{IdleInTransaction: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			return db.Update(ctx, func(tx kv.Txn) error {
				tx.Get([]byte(key))
				time.Sleep(700 * time.Millisecond)
				return tx.Set([]byte(key), []byte("v"))
			})
		}
		notTaken(t, "a transaction idle past partita's own limit", "idle2", stall(dsn, "idle2"))
		// The operator's setting wins: set in the DSN, longer than the
		// stall, or an explicit 0 (no limit), partita leaves it.
		for _, opt := range []string{"60000", "0"} {
			if err := stall(withOption("idle_in_transaction_session_timeout="+opt), "idle-"+opt); err != nil {
				t.Errorf("with the DSN's limit %s ms, a transaction idle 0.7 s: %v (partita's 0.2 s overrode it)", opt, err)
			}
		}
		// A write that does not stall is not affected.
		db, err := pgkv.Open(ctx, dsn, &pgkv.Options{IdleInTransaction: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("quick"), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LockTimeout", func(t *testing.T) {
		if err := direct.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("held"), []byte("0")) }); err != nil {
			t.Fatal(err)
		}
		holder, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close(ctx)
		htx, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer htx.Rollback(ctx)
		if _, err := htx.Exec(ctx, `SELECT 1 FROM partita_kv WHERE k = $1 FOR UPDATE`, []byte("held")); err != nil {
			t.Fatal(err)
		}
		db := open(t, withOption("lock_timeout=100"))
		defer db.Close()
		err = db.Update(ctx, func(tx kv.Txn) error {
			if err := tx.Set([]byte("locked"), []byte("v")); err != nil {
				return err
			}
			return tx.Set([]byte("held"), []byte("1"))
		})
		notTaken(t, "a transaction whose write waited past lock_timeout", "locked", err)
		_, err = db.CondWrite(ctx, kv.CondWrite{Key: []byte("held"), Value: []byte("2"), GuardKey: []byte("held"), GuardValue: []byte("0")})
		if !errors.Is(err, kv.ErrUnavailable) || errors.Is(err, kv.ErrOutcomeUnknown) {
			t.Errorf("a conditional write that waited past lock_timeout: %v (want kv.ErrUnavailable)", err)
		}
	})
}
