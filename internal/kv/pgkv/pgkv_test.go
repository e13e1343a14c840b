package pgkv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/kvtest"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
)

func open(t *testing.T, dsn string) *pgkv.DB {
	t.Helper()
	db, err := pgkv.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.DB { return open(t, pgtest.NewDatabase(t)) })
}

// TestSerializableAcrossPools: two pools (as two front ends) increment one
// counter with read-modify-write transactions; none is lost.
func TestSerializableAcrossPools(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a, b := open(t, dsn), open(t, dsn)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const per = 50
	var wg sync.WaitGroup
	for _, db := range []*pgkv.DB{a, b, a, b} {
		wg.Add(1)
		go func(db *pgkv.DB) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				err := db.Update(ctx, func(tx kv.Txn) error {
					v, err := tx.Get([]byte("n"))
					n := 0
					if err == nil {
						fmt.Sscan(string(v), &n)
					} else if !errors.Is(err, kv.ErrNotFound) {
						return err
					}
					return tx.Set([]byte("n"), []byte(fmt.Sprint(n+1)))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(db)
	}
	wg.Wait()
	err := a.View(ctx, func(r kv.Reader) error {
		v, err := r.Get([]byte("n"))
		if err == nil && string(v) != fmt.Sprint(4*per) {
			t.Errorf("counter = %s, want %d", v, 4*per)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMigrateIdempotent: opening twice keeps the schema and data.
func TestMigrateIdempotent(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := open(t, dsn)
	if err := a.Update(context.Background(), func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := open(t, dsn)
	defer b.Close()
	err := b.View(context.Background(), func(r kv.Reader) error {
		v, err := r.Get([]byte("k"))
		if err == nil && string(v) != "v" {
			t.Errorf("k = %q", v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnavailable: a closed-port DSN fails with kv.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	_, err := pgkv.Open(context.Background(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", nil)
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
}

// TestCondWrite: each form of the one-statement conditional write applies
// exactly when its conditions hold, and changes nothing otherwise.
func TestCondWrite(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	set := func(k, v string) {
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte(k), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k string) string {
		var out string
		err := db.View(ctx, func(r kv.Reader) error {
			v, err := r.Get([]byte(k))
			if errors.Is(err, kv.ErrNotFound) {
				out = "<absent>"
				return nil
			}
			out = string(v)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	set("guard", "g1")
	g := func(w kv.CondWrite) kv.CondWrite {
		if w.GuardKey == nil {
			w.GuardKey, w.GuardValue = []byte("guard"), []byte("g1")
		}
		return w
	}
	for _, c := range []struct {
		name  string
		w     kv.CondWrite
		apply bool
		after string // value of "k" afterwards
	}{
		{"insert", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v1-a"), Absent: true}), true, "v1-a"},
		{"insert existing", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Absent: true}), false, "v1-a"},
		{"update, prefix matches", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v2-b"), Prefix: []byte("v1")}), true, "v2-b"},
		{"update, prefix differs", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Prefix: []byte("v1")}), false, "v2-b"},
		{"update, prefix longer than value", g(kv.CondWrite{Key: []byte("k"), Value: []byte("x"), Prefix: []byte("v2-b-and-more")}), false, "v2-b"},
		{"update, guard changed", kv.CondWrite{GuardKey: []byte("guard"), GuardValue: []byte("g0"), Key: []byte("k"), Value: []byte("x")}, false, "v2-b"},
		{"update, guard absent", kv.CondWrite{GuardKey: []byte("nope"), GuardValue: []byte("g1"), Key: []byte("k"), Value: []byte("x")}, false, "v2-b"},
		{"update, must exist", g(kv.CondWrite{Key: []byte("other"), Value: []byte("x")}), false, "v2-b"},
		{"delete, prefix differs", g(kv.CondWrite{Key: []byte("k"), Prefix: []byte("v1")}), false, "v2-b"},
		{"delete, prefix matches", g(kv.CondWrite{Key: []byte("k"), Prefix: []byte("v2")}), true, "<absent>"},
		{"delete absent", g(kv.CondWrite{Key: []byte("k")}), false, "<absent>"},
		{"insert, guard changed", kv.CondWrite{GuardKey: []byte("guard"), GuardValue: []byte("g0"), Key: []byte("k"), Value: []byte("x"), Absent: true}, false, "<absent>"},
		{"insert again", g(kv.CondWrite{Key: []byte("k"), Value: []byte("v3"), Absent: true}), true, "v3"},
		{"delete, must exist", g(kv.CondWrite{Key: []byte("k")}), true, "<absent>"},
	} {
		applied, err := db.CondWrite(ctx, c.w)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if applied != c.apply {
			t.Errorf("%s: applied=%v, want %v", c.name, applied, c.apply)
		}
		if got := get("k"); got != c.after {
			t.Errorf("%s: k=%q afterwards, want %q", c.name, got, c.after)
		}
	}
	if get("other") != "<absent>" || get("guard") != "g1" {
		t.Error("a conditional write touched another key")
	}
}

// TestCondWriteGuardRace: inserts guarded by a record race with
// transactions that change the record and then sweep the range the inserts
// write to (what Delete Table and its purge do). No insert may land after
// the sweep: every applied insert is swept, none survives.
func TestCondWriteGuardRace(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		guardV := []byte(fmt.Sprint("live", round))
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("guard"), guardV) }); err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("row/%02d/", round)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					ok, err := db.CondWrite(ctx, kv.CondWrite{GuardKey: []byte("guard"), GuardValue: guardV,
						Key: []byte(fmt.Sprintf("%s%d-%04d", prefix, w, i)), Value: []byte("x"), Absent: true})
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return // the guard changed: this writer is done
					}
				}
			}(w)
		}
		time.Sleep(5 * time.Millisecond)
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("guard"), []byte("gone")) }); err != nil {
			t.Fatal(err)
		}
		// The sweep, after the guard change committed.
		if err := db.DeleteRange(ctx, []byte(prefix), []byte(prefix+"\xff")); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{LowerBound: []byte(prefix), UpperBound: []byte(prefix + "\xff")})
			if err != nil {
				return err
			}
			defer it.Close()
			if it.First() {
				t.Errorf("round %d: %q was written after its guard changed and the range was swept", round, it.Key())
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpen_SilentHostSkipped: the first host of a multi-host DSN accepts
// TCP connections but never answers (a machine that is gone behind a live
// address). The engine gives up on it after its connect timeout and uses
// the second host, instead of hanging on the first.
func TestOpen_SilentHostSkipped(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // kept open, never read or answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String() + "," + u.Host
	// Generous against a loaded machine, yet far below "forever".
	ctx, cancel := context.WithTimeout(context.Background(), 4*pgkv.DefaultConnectTimeout)
	defer cancel()
	db, err := pgkv.Open(ctx, u.String(), nil)
	if err != nil {
		t.Fatalf("open with a silent first host: %v", err)
	}
	defer db.Close()
	if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("write through the second host: %v", err)
	}
}

// TestReadOnlyServerUnavailable: a server that accepts only reads (a
// fenced or demoted primary) makes writes fail with kv.ErrUnavailable,
// which clients see as 503 and retry, not as an internal error.
func TestReadOnlyServerUnavailable(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	db := open(t, dsn)
	defer db.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dsn)
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(ctx, pgtest.AdminDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	// Sessions opened from now on are read-only; end the pool's sessions
	// so that it opens new ones.
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatal(err)
	}
	sawReadOnly := false
	for i := 0; i < 10 && !sawReadOnly; i++ {
		err = db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("w")) })
		if !errors.Is(err, kv.ErrUnavailable) {
			t.Fatalf("write on a read-only server: got %v, want kv.ErrUnavailable", err)
		}
		sawReadOnly = strings.Contains(err.Error(), "25006")
	}
	if !sawReadOnly {
		t.Fatal("no write reached the read-only server")
	}
	_, err = db.CondWrite(ctx, kv.CondWrite{Key: []byte("k"), Value: []byte("w"), GuardKey: []byte("k"), GuardValue: []byte("v")})
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "25006") {
		t.Fatalf("conditional write on a read-only server: got %v, want kv.ErrUnavailable (25006)", err)
	}
}
