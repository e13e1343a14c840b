package tablestore_test

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

var (
	powerCuts = flag.Int("powerloss.cuts", 4, "power cuts of TestPowerLoss (hundreds for a long run)")
	powerSeed = flag.Uint64("powerloss.seed", 0, "seed of TestPowerLoss (0: time-based)")
	// powerNoSync turns off the WAL sync, to check that the test catches a
	// store that acknowledges writes it has not made durable.
	powerNoSync = flag.Bool("powerloss.nosync", false, "TestPowerLoss: commit without syncing (the test must then fail)")
)

// TestPowerLoss cuts the power under concurrent writes and batches: the
// store runs on Pebble's crashable in-memory file system, and at a random
// moment a crash clone keeps only what was synced (and, in some cuts, a
// random part of what was written but not synced, as a disk may). The
// store is reopened on the clone and judged against the writers' own log:
// every acknowledged write is there, every batch is all or nothing, and
// nothing appears that was never written. Each writer owns its entities
// and writes one operation at a time, so its entities must look exactly
// as after some prefix of its log that contains every operation
// acknowledged before the cut and none started after it. The next cycle
// writes on the recovered store, so recoveries of recovered stores are
// tested too.
//
//	go test ./internal/tablestore -run TestPowerLoss -v -args -powerloss.cuts=300
//
// -powerloss.seed=N replays the cuts' timing and data (not the
// goroutines' interleaving).
func TestPowerLoss(t *testing.T) {
	seed := *powerSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -powerloss.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const writers = 8
	ws := make([]*plWriter, writers)
	for i := range ws {
		ws[i] = &plWriter{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)+2)), state: map[partita.Key]plEntity{}}
	}
	fs := vfs.NewCrashableMem()
	var totalAcked, totalLost, totalInFlight int
	start := time.Now()
	for cut := 0; cut < *powerCuts; cut++ {
		db, err := pebblekv.Open("data", &pebblekv.Options{FS: fs, MinFreeBytes: -1, MemTableSize: 1 << 20,
			NoSync: *powerNoSync, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("cut %d: open: %v", cut, err)
		}
		s, err := tablestore.Open(ctx, db, tablestore.Options{})
		if err != nil {
			t.Fatalf("cut %d: open store: %v", cut, err)
		}
		if cut == 0 {
			if _, err := s.CreateTable(ctx, "acct", "power"); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := judge(s, ws, cut-1); err != nil {
				t.Fatal(err)
			}
		}

		// Write until a random number of operations is acknowledged.
		var clock, acked atomic.Uint64
		var stop atomic.Bool
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(s, &clock, &acked, &stop)
			}()
		}
		target := uint64(rng.IntN(400))
		for deadline := time.Now().Add(20 * time.Second); acked.Load() < target && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cfg := vfs.CrashCloneCfg{}
		if rng.IntN(2) == 1 {
			cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 1 + rng.IntN(99), RNG: rand.New(rand.NewPCG(seed, uint64(cut)+1000))}
		}
		t0 := clock.Add(1)
		crashed := fs.CrashClone(cfg)
		t1 := clock.Add(1)
		stop.Store(true)
		wg.Wait()
		s.Close()
		db.Close()
		for _, w := range ws {
			w.cut(t0, t1)
			totalAcked += w.lo
			totalInFlight += w.hi - w.lo
		}
		fs = crashed
	}
	// Judge the last cut.
	db, err := pebblekv.Open("data", &pebblekv.Options{FS: fs, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("last open: %v", err)
	}
	defer db.Close()
	s, err := tablestore.Open(ctx, db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if *powerCuts > 0 {
		if err := judge(s, ws, *powerCuts-1); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range ws {
		totalLost += w.lost
	}
	t.Logf("%d power cuts in %v: %d operations acknowledged before a cut, all present; %d in flight at a cut, of which %d did not survive",
		*powerCuts, time.Since(start).Round(time.Millisecond), totalAcked, totalInFlight, totalLost)
}

// plEntity is a model entity: property name → "type:value"; nil is absent.
type plEntity map[string]string

// plOp is one operation of a writer: one write, or a batch.
type plOp struct {
	ops        []partita.Op
	start, ack uint64 // logical clock stamps; ack is 0 when not acknowledged
}

type plWriter struct {
	id    int
	rng   *rand.Rand
	base  map[partita.Key]plEntity // the writer's entities at the start of the cycle
	state map[partita.Key]plEntity // base with every op of log applied
	log   []*plOp
	// Set by cut: the log prefixes the recovered store may show.
	lo, hi int
	lost   int
}

func (w *plWriter) run(s *tablestore.Store, clock, acked *atomic.Uint64, stop *atomic.Bool) {
	w.base = maps.Clone(w.state)
	w.log = w.log[:0]
	for !stop.Load() {
		op := w.next()
		op.start = clock.Add(1)
		w.log = append(w.log, op)
		var err error
		if len(op.ops) == 1 {
			_, err = s.Write(ctx, "acct", "power", op.ops[0])
		} else {
			_, err = s.WriteBatch(ctx, "acct", "power", op.ops)
		}
		if err != nil {
			// Only a store that is closing fails here: the op is in
			// flight, never acknowledged.
			return
		}
		op.ack = clock.Add(1)
		acked.Add(1)
	}
}

// cut records which prefixes of the log may survive a cut taken between
// clock stamps t0 and t1.
func (w *plWriter) cut(t0, t1 uint64) {
	w.lo, w.hi = 0, 0
	for i, op := range w.log {
		if op.ack != 0 && op.ack < t0 {
			w.lo = i + 1
		}
		if op.start < t1 {
			w.hi = i + 1
		}
	}
}

// next draws an operation valid on the model state and applies it there.
func (w *plWriter) next() *plOp {
	pk := fmt.Sprintf("w%02dp%d", w.id, w.rng.IntN(3))
	n := 1
	if w.rng.IntN(2) == 0 {
		n = 2 + w.rng.IntN(7)
	}
	op := &plOp{}
	for _, r := range w.rng.Perm(10)[:n] {
		k := partita.Key{PartitionKey: pk, RowKey: fmt.Sprintf("r%d", r)}
		seq := w.rng.Int64()
		props := plEntity{"Seq": fmt.Sprintf("i:%d", seq), "Pad": "s:" + plPad(seq)}
		cur, exists := w.state[k]
		var kind partita.OpKind
		var cond partita.Condition
		if exists {
			kind = []partita.OpKind{partita.OpReplace, partita.OpMerge, partita.OpInsertOrReplace, partita.OpInsertOrMerge, partita.OpDelete}[w.rng.IntN(5)]
			if kind == partita.OpReplace || kind == partita.OpMerge || kind == partita.OpDelete {
				cond.Kind = partita.IfExists
			}
		} else {
			kind = []partita.OpKind{partita.OpInsert, partita.OpInsertOrReplace, partita.OpInsertOrMerge}[w.rng.IntN(3)]
		}
		if kind == partita.OpMerge || kind == partita.OpInsertOrMerge {
			props[fmt.Sprintf("M%d", seq&3)] = fmt.Sprintf("s:m%d", seq)
		}
		e := &partita.Entity{PartitionKey: k.PartitionKey, RowKey: k.RowKey}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			e.Properties = append(e.Properties, partita.Property{Name: name, Value: plValue(props[name])})
		}
		op.ops = append(op.ops, partita.Op{Kind: kind, Entity: e, If: cond})
		switch kind {
		case partita.OpDelete:
			delete(w.state, k)
		case partita.OpMerge, partita.OpInsertOrMerge:
			m := maps.Clone(cur)
			if m == nil {
				m = plEntity{}
			}
			maps.Copy(m, props)
			w.state[k] = m
		default:
			w.state[k] = props
		}
	}
	return op
}

// plPad is a string of 200 to 2,000 characters that depends on seq, so
// that several values share a 4 KiB block or one value fills half of it.
func plPad(seq int64) string {
	n := 200 + int(uint64(seq)%1800)
	return strings.Repeat(fmt.Sprintf("%016x", seq), n/16+1)[:n]
}

func plValue(s string) edm.Value {
	if v, ok := strings.CutPrefix(s, "i:"); ok {
		var i int64
		fmt.Sscan(v, &i)
		return edm.Int64Value(i)
	}
	return edm.StringValue(strings.TrimPrefix(s, "s:"))
}

// judge reads every entity of the recovered store and checks each writer's
// entities against the prefixes of its log that may have survived cut; it
// then makes the recovered state the writers' model.
func judge(s *tablestore.Store, ws []*plWriter, cut int) error {
	got := make([]map[partita.Key]plEntity, len(ws))
	for i := range got {
		got[i] = map[partita.Key]plEntity{}
	}
	var next *partita.Key
	for {
		info, err := s.QueryEntities(ctx, "acct", "power", partita.Query{Next: next}, func(e *partita.Entity) error {
			var id int
			if _, err := fmt.Sscanf(e.PartitionKey, "w%02dp", &id); err != nil || id >= len(ws) {
				return fmt.Errorf("an entity no writer wrote: %q/%q", e.PartitionKey, e.RowKey)
			}
			m := plEntity{}
			for _, p := range e.Properties {
				switch p.Value.Type {
				case edm.Int64:
					m[p.Name] = fmt.Sprintf("i:%d", p.Value.Int)
				default:
					m[p.Name] = "s:" + p.Value.Str
				}
			}
			got[id][e.Key()] = m
			return nil
		})
		if err != nil {
			return fmt.Errorf("after cut %d: read the table: %w", cut, err)
		}
		if next = info.Next; next == nil {
			break
		}
	}
	for i, w := range ws {
		model := maps.Clone(w.base)
		match := -1
		for j := 0; j <= w.hi; j++ {
			if j > 0 {
				applyOp(model, w.log[j-1])
			}
			if j >= w.lo && plEqual(model, got[i]) {
				match = j
				break
			}
		}
		if match < 0 {
			model := maps.Clone(w.base)
			for _, op := range w.log[:w.lo] {
				applyOp(model, op)
			}
			return fmt.Errorf("after cut %d, writer %d: the store matches no prefix of the log between %d (acknowledged) and %d (started) operations; against the acknowledged prefix: %s",
				cut, i, w.lo, w.hi, plDiff(model, got[i]))
		}
		w.lost += w.hi - match
		w.state = got[i]
		w.base = maps.Clone(got[i])
		w.log = nil
	}
	return nil
}

func applyOp(m map[partita.Key]plEntity, op *plOp) {
	for _, o := range op.ops {
		k := o.Entity.Key()
		props := plEntity{}
		for _, p := range o.Entity.Properties {
			switch p.Value.Type {
			case edm.Int64:
				props[p.Name] = fmt.Sprintf("i:%d", p.Value.Int)
			default:
				props[p.Name] = "s:" + p.Value.Str
			}
		}
		switch o.Kind {
		case partita.OpDelete:
			delete(m, k)
		case partita.OpMerge, partita.OpInsertOrMerge:
			n := maps.Clone(m[k])
			if n == nil {
				n = plEntity{}
			}
			maps.Copy(n, props)
			m[k] = n
		default:
			m[k] = props
		}
	}
}

func plEqual(a, b map[partita.Key]plEntity) bool {
	return maps.EqualFunc(a, b, func(x, y plEntity) bool { return maps.Equal(x, y) })
}

func plDiff(want, got map[partita.Key]plEntity) string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s/%s missing", k.PartitionKey, k.RowKey))
		case !maps.Equal(w, g):
			out = append(out, fmt.Sprintf("%s/%s is Seq %s, want Seq %s", k.PartitionKey, k.RowKey, g["Seq"], w["Seq"]))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s/%s present, never acknowledged", k.PartitionKey, k.RowKey))
		}
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}
