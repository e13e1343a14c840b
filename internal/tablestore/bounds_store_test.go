package tablestore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

func boundsEngines(t *testing.T, fn func(t *testing.T, db kv.DB)) {
	t.Run("mem", func(t *testing.T) { fn(t, memkv.New()) })
	t.Run("pebble", func(t *testing.T) {
		db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{NoSync: true, MinFreeBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		fn(t, db)
	})
}

// TestBoundsOracle: random inserts, insert-or-merges, deletes and batches
// whose RowKeys grow, shrink or repeat, in a few partitions, against a
// model. An insert must fail with EntityAlreadyExists exactly when the
// model holds its key, and an insert-or-merge must keep the stored
// properties exactly when it does: a partition's bounds that let a read be
// skipped for a stored key would overwrite it instead. The store is
// reopened now and then (its bounds start unknown) and remembers only two
// partitions per shard, so bounds are learnt and forgotten all the time.
func TestBoundsOracle(t *testing.T) {
	defer tablestore.SetBoundsPerShard(2)()
	boundsEngines(t, func(t *testing.T, db kv.DB) {
		seed := *seedFlag
		if seed == 0 {
			seed = rand.Uint64()
		}
		t.Logf("seed %d (-store.seed to repeat)", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		open := func() *tablestore.Store {
			s, err := tablestore.Open(ctx, db, tablestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := open()
		defer func() { s.Close() }()
		if _, err := s.CreateTable(ctx, "acct", "bounds"); err != nil {
			t.Fatal(err)
		}
		type mkey struct{ pk, rk string }
		model := map[mkey]int64{} // key → the X it holds
		const pks = 4
		up, down := [pks]int{}, [pks]int{}
		for i := range down {
			down[i] = 1 << 20
		}
		pickRK := func(p int) string {
			switch rng.IntN(4) {
			case 0:
				up[p]++
				return fmt.Sprintf("k%08d", up[p]+1<<20) // above every other
			case 1:
				down[p]--
				return fmt.Sprintf("k%08d", down[p]) // below every other
			default:
				return fmt.Sprintf("k%08d", (1<<20)-50+rng.IntN(100)) // the middle, often stored
			}
		}
		ent := func(pk, rk string, x int64, extra bool) *partita.Entity {
			e := &partita.Entity{PartitionKey: pk, RowKey: rk, Properties: []partita.Property{{Name: "X", Value: edm.Int64Value(x)}}}
			if extra {
				e.Properties = append(e.Properties, partita.Property{Name: "Y", Value: edm.Int64Value(x)})
			}
			return e
		}
		checkGet := func(k mkey) {
			e, err := s.GetEntity(ctx, "acct", "bounds", partita.Key{PartitionKey: k.pk, RowKey: k.rk})
			want, ok := model[k]
			switch {
			case !ok && partita.ErrorCode(err) != partita.CodeResourceNotFound:
				t.Fatalf("get %v: %v, %v; want not found", k, e, err)
			case ok && err != nil:
				t.Fatalf("get %v: %v; want X=%d", k, err, want)
			case ok:
				if v, _ := e.Get("X"); v.Int != want {
					t.Fatalf("get %v: X=%d, want %d", k, v.Int, want)
				}
			}
		}
		var inserts, refused int
		for step := int64(1); step <= 4000; step++ {
			if rng.IntN(400) == 0 {
				s.Close()
				s = open()
			}
			p := rng.IntN(pks)
			pk := fmt.Sprint("p", p)
			switch op := rng.IntN(10); {
			case op < 5: // insert
				k := mkey{pk, pickRK(p)}
				_, err := s.Write(ctx, "acct", "bounds", partita.Op{Kind: partita.OpInsert, Entity: ent(k.pk, k.rk, step, false)})
				if _, had := model[k]; had {
					if partita.ErrorCode(err) != partita.CodeEntityAlreadyExists {
						t.Fatalf("step %d: insert of stored %v: %v, want EntityAlreadyExists", step, k, err)
					}
					refused++
				} else {
					if err != nil {
						t.Fatalf("step %d: insert %v: %v", step, k, err)
					}
					model[k] = step
					inserts++
				}
			case op < 6: // insert or merge (keeps Y of a stored entity), or insert or replace (reads nothing, adds keys all the same)
				k := mkey{pk, pickRK(p)}
				_, had := model[k]
				kind := partita.OpInsertOrMerge
				if rng.IntN(2) == 0 {
					kind = partita.OpInsertOrReplace
				}
				if _, err := s.Write(ctx, "acct", "bounds", partita.Op{Kind: kind, Entity: ent(k.pk, k.rk, step, !had)}); err != nil {
					t.Fatalf("step %d: %v %v: %v", step, kind, k, err)
				}
				model[k] = step
			case op < 8: // delete
				k := mkey{pk, pickRK(p)}
				_, err := s.Write(ctx, "acct", "bounds", partita.Op{Kind: partita.OpDelete, Entity: ent(k.pk, k.rk, 0, false), If: partita.Condition{Kind: partita.IfExists}})
				if _, had := model[k]; had != (err == nil) {
					t.Fatalf("step %d: delete %v (stored %v): %v", step, k, had, err)
				}
				delete(model, k)
			default: // a batch of inserts and deletes with distinct keys
				seen := map[string]bool{}
				var ops []partita.Op
				collide := -1
				for n := 1 + rng.IntN(5); len(ops) < n; {
					rk := pickRK(p)
					if seen[rk] {
						continue
					}
					seen[rk] = true
					k := mkey{pk, rk}
					_, had := model[k]
					if rng.IntN(4) == 0 && had {
						ops = append(ops, partita.Op{Kind: partita.OpDelete, Entity: ent(pk, rk, 0, false), If: partita.Condition{Kind: partita.IfExists}})
						continue
					}
					if had && collide < 0 {
						collide = len(ops)
					}
					ops = append(ops, partita.Op{Kind: partita.OpInsert, Entity: ent(pk, rk, step, false)})
				}
				_, err := s.WriteBatch(ctx, "acct", "bounds", ops)
				var be *partita.BatchError
				switch {
				case collide >= 0 && (!errors.As(err, &be) || partita.ErrorCode(be.Err) != partita.CodeEntityAlreadyExists || be.Index != collide):
					t.Fatalf("step %d: batch whose op %d inserts a stored key: %v", step, collide, err)
				case collide < 0 && err != nil:
					t.Fatalf("step %d: batch: %v", step, err)
				case collide < 0:
					for _, o := range ops {
						k := mkey{pk, o.Entity.RowKey}
						if o.Kind == partita.OpDelete {
							delete(model, k)
						} else {
							model[k] = step
						}
					}
				}
			}
			if step%97 == 0 {
				for k := range model {
					checkGet(k)
					break
				}
			}
		}
		// Every stored entity is the model's, and only those.
		var got []string
		queryAll(t, s, "bounds", partita.Query{}, func(e *partita.Entity) {
			k := mkey{e.PartitionKey, e.RowKey}
			x, _ := e.Get("X")
			if want, ok := model[k]; !ok || want != x.Int {
				t.Errorf("stored %v X=%d; model %d, %v", k, x.Int, want, ok)
			}
			got = append(got, k.pk+"/"+k.rk)
		})
		if len(got) != len(model) || !sort.StringsAreSorted(got) {
			t.Errorf("%d entities stored, model %d", len(got), len(model))
		}
		if inserts < 500 || refused < 100 {
			t.Errorf("%d inserts and %d refused: the test proved little", inserts, refused)
		}
		t.Logf("%d inserts, %d refused as existing, %d stored", inserts, refused, len(model))
	})
}

// TestBoundsConcurrentInserts: goroutines insert the same keys at once,
// singly and in batches, into partitions that are new every round (so the
// bounds are learnt while others write) and that the store can remember
// only two of per shard; every key must be inserted exactly once.
func TestBoundsConcurrentInserts(t *testing.T) {
	defer tablestore.SetBoundsPerShard(2)()
	boundsEngines(t, func(t *testing.T, db kv.DB) {
		s, err := tablestore.Open(ctx, db, tablestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.CreateTable(ctx, "acct", "race"); err != nil {
			t.Fatal(err)
		}
		const rounds, keys, racers = 40, 24, 6
		var wins, losses atomic.Int64
		for r := 0; r < rounds; r++ {
			pk := fmt.Sprint("p", r%7, "-", r) // new partitions, several at once
			won := make([]atomic.Int32, keys)
			var wg sync.WaitGroup
			for g := 0; g < racers; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(r), uint64(g)))
					order := rng.Perm(keys)
					if g%2 == 1 { // half go up, half down: both ends move
						sort.Sort(sort.Reverse(sort.IntSlice(order)))
					}
					for j := 0; j < len(order); j++ {
						i := order[j]
						rk := fmt.Sprintf("r%04d", i)
						var err error
						if g%3 == 2 && j+1 < len(order) && order[j+1] != i {
							i2 := order[j+1]
							_, err = s.WriteBatch(ctx, "acct", "race", []partita.Op{
								{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: pk, RowKey: rk}},
								{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: pk, RowKey: fmt.Sprintf("r%04d", i2)}},
							})
							if err == nil {
								won[i].Add(1)
								won[i2].Add(1)
								wins.Add(2)
								j++
								continue
							}
						} else {
							_, err = s.Write(ctx, "acct", "race", partita.Op{Kind: partita.OpInsert, Entity: &partita.Entity{PartitionKey: pk, RowKey: rk}})
							if err == nil {
								won[i].Add(1)
								wins.Add(1)
								continue
							}
						}
						var be *partita.BatchError
						if partita.ErrorCode(err) != partita.CodeEntityAlreadyExists && !(errors.As(err, &be) && partita.ErrorCode(be.Err) == partita.CodeEntityAlreadyExists) {
							t.Errorf("insert %s/%s: %v", pk, rk, err)
							return
						}
						losses.Add(1)
					}
				}(g)
			}
			wg.Wait()
			for i := range won {
				if n := won[i].Load(); n != 1 {
					t.Fatalf("round %d: %s/r%04d inserted %d times", r, pk, i, n)
				}
			}
		}
		if losses.Load() < int64(rounds*keys) {
			t.Errorf("only %d refused inserts: the racers hardly raced", losses.Load())
		}
		t.Logf("%d inserted, %d refused", wins.Load(), losses.Load())
	})
}

// TestBoundsBytesBounded: partitions with the longest keys a client may
// send must not grow the remembered bounds past their byte budget, however
// many partitions are written; and forgetting for want of bytes keeps
// inserts right (every key written a second time is a 409).
func TestBoundsBytesBounded(t *testing.T) {
	defer tablestore.SetBoundsShardBytes(16 << 10)()
	ctx := t.Context()
	s, err := tablestore.Open(ctx, memkv.New(), tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTable(ctx, "acct", "wide"); err != nil {
		t.Fatal(err)
	}
	const parts = 600
	long := strings.Repeat("k", 1000)
	key := func(i, j int) (string, string) {
		return fmt.Sprintf("%s%05d", long[:500], i), fmt.Sprintf("%s%05d", long[:500], j)
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < parts; i++ {
			for j := 0; j < 2; j++ {
				pk, rk := key(i, j)
				e := &partita.Entity{PartitionKey: pk, RowKey: rk, Properties: []partita.Property{{Name: "N", Value: edm.Int32Value(int32(i))}}}
				_, err := s.Write(ctx, "acct", "wide", partita.Op{Kind: partita.OpInsert, Entity: e})
				if round == 0 && err != nil {
					t.Fatalf("insert %d/%d: %v", i, j, err)
				}
				if round == 1 && partita.ErrorCode(err) != partita.CodeEntityAlreadyExists {
					t.Fatalf("second insert of %d/%d: %v, want EntityAlreadyExists", i, j, err)
				}
			}
		}
		counted, actual := tablestore.BoundsBytes(s)
		if counted != actual {
			t.Fatalf("round %d: bounds count %d bytes, their entries hold %d", round, counted, actual)
		}
		// 32 shards of 16 KiB.
		if actual > 32*16<<10 {
			t.Fatalf("round %d: bounds hold %d bytes, budget %d", round, actual, 32*16<<10)
		}
		t.Logf("round %d: %d partitions remembered, %d bytes", round, tablestore.BoundsKnown(s), actual)
	}
}
