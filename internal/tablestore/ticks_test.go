package tablestore_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

// stepClock is a store clock that an offset moves: set back between
// runs, and, when jumps is set, leaping ahead by more than the tick
// ceiling's step now and then, as a clock corrected forward does.
type stepClock struct {
	offset atomic.Int64 // nanoseconds
	calls  atomic.Int64
	jumps  bool
}

func (c *stepClock) now() time.Time {
	if c.jumps && c.calls.Add(1)%97 == 0 {
		c.offset.Add(int64(2 * time.Second))
	}
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// TestTimestampsAfterClockSetBack: an entity's Timestamp is its ETag, so
// a restarted server whose clock was set back (a restored VM snapshot)
// must still hand out Timestamps above every one it stored, or a blind
// insert-or-replace, or a delete and an insert, would repeat an old ETag
// and let a stale If-Match through. Each cycle writes with a clock that
// leaps ahead now and then, cuts the power (keeping only what was synced,
// and in some cycles part of what was not), and reopens with the clock an
// hour further back: every entity that survived has a Timestamp below the
// first one handed out after the restart, and Check finds none above the
// stored ceiling.
func TestTimestampsAfterClockSetBack(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	clock := &stepClock{jumps: true}
	fs := vfs.NewCrashableMem()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for cycle := 0; cycle < 6; cycle++ {
		db, err := pebblekv.Open("data", &pebblekv.Options{FS: fs, MinFreeBytes: -1, MemTableSize: 1 << 20, Logger: quiet})
		if err != nil {
			t.Fatalf("cycle %d: open: %v", cycle, err)
		}
		s, err := tablestore.Open(ctx, db, tablestore.Options{Now: clock.now, RowCacheBytes: -1, Logger: quiet})
		if err != nil {
			t.Fatalf("cycle %d: open store: %v", cycle, err)
		}
		if cycle == 0 {
			if _, err := s.CreateTable(ctx, "acct", "clock"); err != nil {
				t.Fatal(err)
			}
		} else {
			// What survived the cut, then the first Timestamp after it.
			stored := map[partita.Key]int64{}
			if _, err := s.QueryEntities(ctx, "acct", "clock", partita.Query{}, func(e *partita.Entity) error {
				stored[partita.Key{PartitionKey: e.PartitionKey, RowKey: e.RowKey}] = e.Timestamp
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			res, err := s.Write(ctx, "acct", "clock", partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "probe", RowKey: "r"}})
			if err != nil {
				t.Fatal(err)
			}
			for k, ts := range stored {
				if ts >= res.Timestamp {
					t.Fatalf("cycle %d: %v was stored with Timestamp %d; the first write after the restart got %d", cycle, k, ts, res.Timestamp)
				}
			}
			t.Logf("cycle %d: %d entities survived, all below the restart's first Timestamp", cycle, len(stored))
		}

		var stop atomic.Bool
		var wg sync.WaitGroup
		var writes atomic.Int64
		errs := make(chan error, 4)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			r := rand.New(rand.NewPCG(seed, uint64(cycle*10+w)))
			go func() {
				defer wg.Done()
				for !stop.Load() {
					e := &partita.Entity{PartitionKey: fmt.Sprintf("p%d", r.IntN(3)), RowKey: fmt.Sprintf("r%d", r.IntN(8))}
					var err error
					switch r.IntN(4) {
					case 0:
						_, err = s.Write(ctx, "acct", "clock", partita.Op{Kind: partita.OpDelete, Entity: e, If: partita.Condition{Kind: partita.IfExists}})
					case 1:
						_, err = s.Write(ctx, "acct", "clock", partita.Op{Kind: partita.OpInsert, Entity: e})
					case 2:
						ops := []partita.Op{{Kind: partita.OpInsertOrReplace, Entity: e}}
						if e.RowKey != "r0" {
							ops = append(ops, partita.Op{Kind: partita.OpInsertOrMerge, Entity: &partita.Entity{PartitionKey: e.PartitionKey, RowKey: "r0"}})
						}
						_, err = s.WriteBatch(ctx, "acct", "clock", ops)
					default:
						_, err = s.Write(ctx, "acct", "clock", partita.Op{Kind: partita.OpInsertOrReplace, Entity: e})
					}
					var pe *partita.Error
					if err != nil && !errors.As(err, &pe) {
						if !stop.Load() {
							errs <- err
						}
						return
					}
					writes.Add(1)
				}
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); writes.Load() < int64(100+rng.IntN(400)) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cfg := vfs.CrashCloneCfg{}
		if rng.IntN(2) == 1 {
			cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 1 + rng.IntN(99), RNG: rand.New(rand.NewPCG(seed, uint64(cycle)+100))}
		}
		crashed := fs.CrashClone(cfg)
		stop.Store(true)
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatalf("cycle %d: write: %v", cycle, err)
		default:
		}
		s.Close()
		db.Close()
		fs = crashed
		clock.offset.Add(-int64(time.Hour))

		// Nothing stored above the ceiling the restart will count from.
		db, err = pebblekv.Open("data", &pebblekv.Options{FS: fs, MinFreeBytes: -1, ReadOnly: true, Logger: quiet})
		if err != nil {
			t.Fatalf("cycle %d: open to check: %v", cycle, err)
		}
		rep, err := tablestore.Check(ctx, db, tablestore.CheckOptions{})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("cycle %d: check: %v", cycle, rep.Details)
		}
	}
}

// TestTimestampPastTheCeilingWaitsForIt: a clock that leaps ahead between
// the ceiling's reserve and the write's own Timestamp (a stall, or a
// clock corrected forward, at that moment) gives a Timestamp above the
// ceiling; the write then waits for a raise above it and runs again, so
// a power cut right after it, and a restart with the clock set back,
// still count from above it.
func TestTimestampPastTheCeilingWaitsForIt(t *testing.T) {
	var calls, leapAt atomic.Int64
	var offset atomic.Int64
	now := func() time.Time {
		if n := calls.Add(1); n == leapAt.Load() {
			offset.Add(int64(10 * time.Second))
		}
		return time.Now().Add(time.Duration(offset.Load()))
	}
	fs := vfs.NewCrashableMem()
	s, closeStore := clockStore(t, fs, now)
	if _, err := s.CreateTable(ctx, "acct", "leap"); err != nil {
		t.Fatal(err)
	}
	upsert := func(s *tablestore.Store, rk string) int64 {
		t.Helper()
		res, err := s.Write(ctx, "acct", "leap", partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "p", RowKey: rk}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Timestamp
	}
	upsert(s, "warm") // the ceiling is written ahead here
	before := calls.Load()
	upsert(s, "steady")
	perWrite := calls.Load() - before // the reserve's reading(s), then the write's
	leapAt.Store(calls.Load() + perWrite)
	leapt := upsert(s, "leapt") // its own reading of the clock is 10 s ahead
	if offset.Load() == 0 {
		t.Fatalf("the clock did not leap (%d readings a write)", perWrite)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // what was synced: every acknowledged write
	closeStore()

	offset.Store(-int64(time.Hour))
	s, closeStore = clockStore(t, crashed, now)
	defer closeStore()
	if next := upsert(s, "leapt"); next <= leapt {
		t.Fatalf("after the restart %q got Timestamp %d, not above its %d from before", "leapt", next, leapt)
	}
}

// TestUpgradeSeedsTheCeiling: a store written before the tick ceiling
// existed (the v1 upgrade fixture) gets its greatest stored Timestamp as
// its first ceiling, so a server started on it with its clock behind
// (here, years behind the fixture's writes) hands out only later ones,
// and check finds nothing above the ceiling.
func TestUpgradeSeedsTheCeiling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v1")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "upgrade", "v1"))); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	behind := func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) }
	s, err := tablestore.Open(ctx, db, tablestore.Options{Now: behind, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var newest int64
	for account, tables := range fixtureV1().accounts {
		for _, ft := range tables {
			if _, err := s.QueryEntities(ctx, account, ft.name, partita.Query{}, func(e *partita.Entity) error {
				newest = max(newest, e.Timestamp)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	account, ft := "devstoreaccount1", fixtureV1().accounts["devstoreaccount1"][0]
	res, err := s.Write(ctx, account, ft.name, partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "after", RowKey: "upgrade"}})
	if err != nil {
		t.Fatal(err)
	}
	if newest == 0 || res.Timestamp <= newest {
		t.Fatalf("a write after the upgrade got Timestamp %d, not above the stored %d", res.Timestamp, newest)
	}
	s.Close()
	db.Close()
	db, err = pebblekv.Open(dir, &pebblekv.Options{MinFreeBytes: -1, ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := tablestore.Check(ctx, db, tablestore.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("check after the upgrade: %v", rep.Details)
	}
}

// clockStore opens the store in "data" on fs with the clock now, its logs
// discarded; closeStore closes the store and its engine.
func clockStore(t *testing.T, fs vfs.FS, now func() time.Time) (s *tablestore.Store, closeStore func()) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := pebblekv.Open("data", &pebblekv.Options{FS: fs, MinFreeBytes: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if s, err = tablestore.Open(ctx, db, tablestore.Options{Now: now, Logger: quiet}); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return s, func() { s.Close(); db.Close() }
}
