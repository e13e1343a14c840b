package tablestore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/kv/pgkv/pgtest"
	"github.com/partita/partita/internal/tablestore"
)

// TestStore_SharedETagChains: twelve clients over three front ends (three
// Stores, each with its own pool, on one PostgreSQL database) read an
// entity and write it conditioned on what they read: an insert when it is
// absent, else a replace, merge or delete with the ETag read. Writes
// conditioned on one version must exclude each other whichever front end
// and whichever path (one statement or a transaction) serves them: no two
// succeed from the same ETag, and inserts and deletes alternate (every
// entity's successful inserts are its deletes plus one if it is there at
// the end). Before transactions wrote rows they had read with UPDATE, a
// merge and a delete from the same ETag both succeeded, and the merge
// re-created the deleted entity (TestStore_SharedWriteRacingOneStatementDelete
// shows it deterministically).
func TestStore_SharedETagChains(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	var fes []*tablestore.Store
	for i := 0; i < 3; i++ {
		db, err := pgkv.Open(ctx, dsn, &pgkv.Options{MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, err := tablestore.Open(ctx, db, tablestore.Options{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fes = append(fes, s)
	}
	if _, err := fes[0].CreateTable(ctx, "a", "chains"); err != nil {
		t.Fatal(err)
	}
	const keys = 3
	type rec struct {
		ins, del int
		used     map[int64]int // ETag → writes that succeeded from it
	}
	var mu sync.Mutex
	recs := make([]rec, keys)
	for i := range recs {
		recs[i].used = map[int64]int{}
	}
	var wg sync.WaitGroup
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < 150; i++ {
				s := fes[rng.IntN(3)]
				k := rng.IntN(keys)
				rk := fmt.Sprint(k)
				e, err := s.GetEntity(ctx, "a", "chains", partita.Key{PartitionKey: "p", RowKey: rk})
				ent := &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: fmt.Sprintf("W%d", w), Value: edm.Int32Value(int32(i))}}}
				if partita.ErrorCode(err) == partita.CodeResourceNotFound {
					_, err := s.Write(ctx, "a", "chains", partita.Op{Kind: partita.OpInsert, Entity: ent})
					if err == nil {
						mu.Lock()
						recs[k].ins++
						mu.Unlock()
					} else if partita.ErrorCode(err) != partita.CodeEntityAlreadyExists {
						t.Error("insert", err)
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				cond := partita.Condition{Kind: partita.IfETag, Ticks: e.Timestamp}
				kinds := []partita.OpKind{partita.OpReplace, partita.OpMerge, partita.OpDelete}
				kind := kinds[rng.IntN(3)]
				_, err = s.Write(ctx, "a", "chains", partita.Op{Kind: kind, If: cond, Entity: ent})
				switch {
				case err == nil:
					mu.Lock()
					recs[k].used[e.Timestamp]++
					if recs[k].used[e.Timestamp] > 1 {
						t.Errorf("key %d: two writes succeeded from ETag %d", k, e.Timestamp)
					}
					if kind == partita.OpDelete {
						recs[k].del++
					}
					mu.Unlock()
				case partita.ErrorCode(err) == partita.CodeUpdateConditionNotSatisfied, partita.ErrorCode(err) == partita.CodeResourceNotFound:
				default:
					t.Error(kind, err)
				}
			}
		}(w)
	}
	wg.Wait()
	for k := range recs {
		_, err := fes[0].GetEntity(ctx, "a", "chains", partita.Key{PartitionKey: "p", RowKey: fmt.Sprint(k)})
		present := 0
		if err == nil {
			present = 1
		}
		t.Logf("key %d: %d inserts, %d deletes, %d ETag writes, present %d", k, recs[k].ins, recs[k].del, len(recs[k].used), present)
		if recs[k].ins != recs[k].del+present {
			t.Errorf("key %d: %d inserts, %d deletes, present %d", k, recs[k].ins, recs[k].del, present)
		}
	}
}
