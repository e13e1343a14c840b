package pgkv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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
