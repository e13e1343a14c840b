package pgkv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
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

func TestRangesOneState(t *testing.T) {
	kvtest.RangesOneState(t, open(t, pgtest.NewDatabase(t)))
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

// TestIteratorReadsOneSnapshot: an iterator's rows come in several
// queries; a transaction committed between two of them must be seen whole
// or not at all. (Each chunk read its own snapshot: pages held half of a
// batch that straddled a chunk boundary.)
func TestIteratorReadsOneSnapshot(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	const rows = 1200 // more than one chunk of any size
	write := func(gen int) error {
		return db.Update(ctx, func(tx kv.Txn) error {
			for i := 0; i < rows; i++ {
				if err := tx.Set(key(i), []byte(fmt.Sprint(gen))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gen := 1; ; gen++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := write(gen); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }() // before the store closes
	for scan := 0; scan < 40; scan++ {
		seen := map[string]bool{}
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{LowerBound: key(0), UpperBound: key(rows)})
			if err != nil {
				return err
			}
			defer it.Close()
			for ok := it.First(); ok; ok = it.Next() {
				seen[string(it.Value())] = true
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 {
			t.Fatalf("scan %d saw the rows of %d transactions: %v", scan, len(seen), seen)
		}
	}
}

// TestIteratorChunksFollowRowSize: large rows are fetched a few at a
// time, so an iterator that reads one row of a range of large rows does
// not hold hundreds of them (a fixed 500 rows of 1 MiB held 500 MB).
func TestIteratorChunksFollowRowSize(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	big := make([]byte, 256<<10)
	for i := 0; i < 40; i++ {
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte(fmt.Sprintf("b%02d", i)), big) }); err != nil {
			t.Fatal(err)
		}
	}
	most := 0 // rows held at once
	err := db.View(ctx, func(r kv.Reader) error {
		it, err := r.NewIter(kv.IterOptions{})
		if err != nil {
			return err
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
			most = max(most, pgkv.Loaded(it))
		}
		if n != 40 {
			t.Errorf("%d rows, want 40", n)
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	if most*len(big) > 8<<20 {
		t.Errorf("%d rows of %d KiB held at once", most, len(big)>>10)
	}
}

// TestIteratorChunksFollowRowsHint: a reader that says it will read a
// few rows of a long range of small rows (a page of $top=10) has few more
// read for it: the chunk after the first 8 rows was 500, so every such
// page read up to 500 rows from the database. Past the hint, chunks grow
// fourfold to the usual size; without one they are as before.
func TestIteratorChunksFollowRowsHint(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	setRows(t, db, "r%04d", 2000, []byte("small"))
	fetches := func(hint int) (chunks []int) {
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{Rows: hint})
			if err != nil {
				return err
			}
			defer it.Close()
			n, ok := 0, it.First()
			for ; ok; ok = it.Next() {
				if len(chunks) == 0 || n == sum(chunks) {
					chunks = append(chunks, pgkv.Loaded(it)) // a fetch brought this row
				}
				n++
			}
			if n != 2000 {
				t.Errorf("Rows %d: %d rows, want 2000", hint, n)
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
		return chunks
	}
	if got := fetches(11); !slices.Equal(got[:4], []int{11, 44, 176, 500}) {
		t.Errorf("Rows 11: fetches of %v rows, want 11, 44, 176, 500, …", got)
	}
	if got := fetches(100); !slices.Equal(got[:3], []int{8, 92, 368}) {
		t.Errorf("Rows 100: fetches of %v rows, want 8, 92, 368, …", got)
	}
	if got := fetches(0); !slices.Equal(got[:3], []int{8, 500, 500}) {
		t.Errorf("no Rows: fetches of %v rows, want 8, 500, 500, … as before", got)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestIteratorChunksCutAtBytes: a range of small rows followed by large
// ones does not fool the chunk's size: after 8 rows of a few bytes the
// next chunk was asked for 500 rows and held every large row of the range
// (500 MB for 1 MiB entities, from one query). Each chunk now ends once
// it holds ChunkBytes, so an iterator holds at most that and one row.
func TestIteratorChunksCutAtBytes(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t))
	defer db.Close()
	ctx := context.Background()
	big := make([]byte, 256<<10)
	setRows(t, db, "a%02d", 8, []byte("small"))
	for i := 0; i < 40; i++ {
		if err := db.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte(fmt.Sprintf("b%02d", i)), big) }); err != nil {
			t.Fatal(err)
		}
	}
	most := 0 // bytes held at once
	for _, seek := range []bool{false, true} {
		err := db.View(ctx, func(r kv.Reader) error {
			it, err := r.NewIter(kv.IterOptions{})
			if err != nil {
				return err
			}
			defer it.Close()
			n := 0
			ok := it.First()
			if seek { // as a batch's existence reads go: a seek past the small rows
				for ; ok && n < 8; ok = it.Next() {
					n++
				}
				ok = it.SeekGE([]byte("b00"))
			}
			for ; ok; ok = it.Next() {
				n++
				most = max(most, pgkv.LoadedBytes(it))
			}
			if n != 48 {
				t.Errorf("seek %v: %d rows, want 48", seek, n)
			}
			return it.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if most > pgkv.ChunkBytes+len(big)+64 {
		t.Errorf("%d KiB held at once, want at most %d KiB and one row", most>>10, pgkv.ChunkBytes>>10)
	}
}

// TestConflictsExhaustedAreBusy: a write whose serialization failures
// outlast its retries (other front ends' writers kept winning) fails with
// kv.ErrUnavailable, which clients get as 503 ServerBusy and retry, not as
// a 500.
func TestConflictsExhaustedAreBusy(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var dbs []*pgkv.DB
	for range 2 {
		db, err := pgkv.Open(context.Background(), dsn, &pgkv.Options{MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	ctx := context.Background()
	var mu sync.Mutex
	var failed []error
	for round := 0; round < 20 && len(failed) == 0; round++ {
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(db *pgkv.DB) {
				defer wg.Done()
				err := db.Update(ctx, func(tx kv.Txn) error {
					v, err := tx.Get([]byte("n"))
					if err != nil && !errors.Is(err, kv.ErrNotFound) {
						return err
					}
					time.Sleep(2 * time.Millisecond) // let the others read it too
					return tx.Set([]byte("n"), append(v, 'x'))
				})
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}(dbs[w%2])
		}
		wg.Wait()
	}
	if len(failed) == 0 {
		t.Fatal("no write ran out of retries in 20 rounds of 8 conflicting writers")
	}
	for _, err := range failed {
		if !errors.Is(err, kv.ErrUnavailable) {
			t.Errorf("conflicts exhausted: %v, want kv.ErrUnavailable", err)
		}
	}
}

// TestDSNPoolSize: the DSN's pool_max_conns sizes the pool (it was
// overwritten with 32, so an operator could not fit front ends to the
// database's max_connections); without it the pool is 32.
func TestDSNPoolSize(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		dsn  string
		want int32
	}{
		{dsn + sep + "pool_max_conns=4", 4},
		{dsn, 32},
	} {
		db := open(t, c.dsn)
		if got := db.PoolStat().MaxConns(); got != c.want {
			t.Errorf("pool size with %q: %d, want %d", c.dsn, got, c.want)
		}
		db.Close()
	}
}

// setRows writes n rows, keyed fmt.Sprintf(format, i), of value v, in one
// transaction.
func setRows(t *testing.T, db kv.DB, format string, n int, v []byte) {
	t.Helper()
	if err := db.Update(context.Background(), func(tx kv.Txn) error {
		for i := 0; i < n; i++ {
			if err := tx.Set([]byte(fmt.Sprintf(format, i)), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
