package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita"
)

// Options configure a copy.
type Options struct {
	From, To string
	// Tables selects tables by name or glob (path.Match syntax); empty
	// selects all.
	Tables []string
	Filter string
	// Parallel is 1 to maxParallel; 0 means 4.
	Parallel int
	// Checkpoint is a file recording per-range progress; a re-run with the
	// same flags resumes from it.
	Checkpoint string
	// SkipRefused goes on past entities the destination refuses (each is
	// reported); otherwise the first one stops the copy.
	SkipRefused bool
	Verify      bool // only compare, copy nothing
	// Progress receives progress lines; Terminal rewrites one line.
	Progress         io.Writer
	Terminal         bool
	ProgressInterval time.Duration
	// Out receives per-table summaries, refusals and differences.
	Out io.Writer
}

// ErrRefused is returned at the end of a copy that skipped refused entities.
var ErrRefused = errors.New("the destination refused some entities")

// ErrDiffer is returned by a verify that found differences.
var ErrDiffer = errors.New("source and destination differ")

// maxParallel bounds --parallel: a million writers took 2.7 GB.
const maxParallel = 256

// maxTables bounds the tables one run handles (names come from the source).
const maxTables = 10000

// side is one end of a copy.
type side struct {
	spec   string
	remote *client   // endpoint
	files  []string  // file source
	sink   *fileSink // file destination
}

// tableName is the name of table on this side: a table SAS's own table
// whatever the other side calls it.
func (s *side) tableName(table string) string {
	if s.remote != nil && s.remote.ep.Table != "" {
		return s.remote.ep.Table
	}
	return table
}

// oneTable refuses a second table for a table SAS side, which holds one.
func (s *side) oneTable(n int) error {
	if n > 1 && s.remote != nil && s.remote.ep.Table != "" {
		return fmt.Errorf("%s: a table SAS is for one table (%s), and the copy has %d; select one with --tables", s.remote.side, s.remote.ep.Table, n)
	}
	return nil
}

func openSide(spec, name string, conns int) (*side, error) {
	if spec == "" {
		return nil, fmt.Errorf("%s: missing (--from / --to)", name)
	}
	if IsEndpoint(spec) {
		ep, err := ParseEndpoint(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &side{spec: spec, remote: newClient(ep, name, conns)}, nil
	}
	return &side{spec: spec}, nil
}

// stats counts progress.
type stats struct {
	entities atomic.Int64
	bytes    atomic.Int64
	retries  atomic.Int64
	refused  atomic.Int64
	// srcDone/srcTotal give the ETA for file sources.
	srcDone  func() int64
	srcTotal int64
}

// Run performs the copy (or, with Verify, the comparison) in o.
func Run(ctx context.Context, o Options) error {
	if o.Parallel == 0 {
		o.Parallel = 4 // Options' zero value
	}
	if o.Parallel < 1 {
		return fmt.Errorf("--parallel %d: at least 1", o.Parallel)
	}
	if o.Parallel > maxParallel {
		// Each holds a batch (up to 4 MiB) and a page in memory.
		return fmt.Errorf("--parallel %d: at most %d", o.Parallel, maxParallel)
	}
	if o.Verify && o.Checkpoint != "" {
		// A verify compares everything each time: the checkpoint would be
		// neither read nor written, which the user should know.
		return errors.New("--checkpoint is for a copy; --verify compares every table whole")
	}
	for _, p := range o.Tables {
		// A typo in a table name is better told as such than as a
		// selection of nothing.
		if isTableName(p) {
			if err := checkTable("--tables", p); err != nil {
				return err
			}
		}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 10 * time.Second
		if o.Terminal {
			o.ProgressInterval = 500 * time.Millisecond
		}
	}
	src, err := openSide(o.From, "source", o.Parallel)
	if err != nil {
		return err
	}
	dst, err := openSide(o.To, "destination", o.Parallel)
	if err != nil {
		return err
	}
	st := &stats{}
	for _, s := range []*side{src, dst} {
		if s.remote != nil {
			s.remote.retries = func() { st.retries.Add(1) }
		}
	}
	// Credentials and reachability first, before any data moves.
	if src.remote != nil {
		if err := src.remote.Check(ctx); err != nil {
			return err
		}
	} else {
		if src.files, err = sourceFiles(src.spec); err != nil {
			return err
		}
	}
	if dst.remote != nil {
		if err := dst.remote.Check(ctx); err != nil {
			return err
		}
	}
	if o.Filter != "" && src.remote == nil {
		return errors.New("--filter selects the entities of an endpoint source; a file source is copied whole (select its tables with --tables)")
	}
	if o.Filter != "" && o.Verify && dst.remote == nil {
		// A file side is read whole: comparing it with a filtered
		// endpoint reports every entity the filter left out.
		return errors.New("--filter with --verify needs an endpoint on both sides; a file is compared whole (select its tables with --tables)")
	}
	if o.Verify {
		return verify(ctx, o, src, dst)
	}
	if dst.remote == nil {
		if o.Checkpoint != "" {
			return errors.New("--checkpoint needs an endpoint destination (a file export starts over)")
		}
		if dst.sink, err = newFileSink(dst.spec); err != nil {
			return err
		}
	}

	var cp *checkpoint
	if o.Checkpoint != "" {
		if src.remote == nil {
			return errors.New("--checkpoint needs an endpoint source (a file import is idempotent: run it again)")
		}
		if cp, err = openCheckpoint(o.Checkpoint, o); err != nil {
			return err
		}
	}

	stop := startProgress(o, st)
	start := time.Now()
	if src.remote != nil {
		err = copyFromRemote(ctx, o, src, dst, cp, st)
	} else {
		err = copyFromFiles(ctx, o, src, dst, st)
	}
	stop()
	if dst.sink != nil {
		if cerr := dst.sink.close(err == nil); err == nil {
			err = cerr
		}
	}
	el := time.Since(start)
	fmt.Fprintf(o.Out, "total: %d entities, %s, %s, %.0f entities/s, %d retries\n",
		st.entities.Load(), humanBytes(st.bytes.Load()), el.Round(time.Millisecond), float64(st.entities.Load())/el.Seconds(), st.retries.Load())
	if err == nil && cp != nil && cp.refusedTotal() > st.refused.Load() {
		// The checkpoint's earlier runs skipped entities that this run,
		// resuming past them, does not copy either.
		return fmt.Errorf("%w: %d (in this checkpoint's runs; remove %s to copy them again)", ErrRefused, cp.refusedTotal(), o.Checkpoint)
	}
	if err == nil && st.refused.Load() > 0 {
		return fmt.Errorf("%w: %d", ErrRefused, st.refused.Load())
	}
	return err
}

// selectTables filters names by the patterns. Table names are
// case-insensitive, so the match is too.
func selectTables(names, patterns []string) ([]string, error) {
	if len(patterns) == 0 {
		return names, nil
	}
	var out []string
	for _, n := range names {
		for _, p := range patterns {
			ok, err := path.Match(strings.ToLower(p), strings.ToLower(n))
			if err != nil {
				return nil, fmt.Errorf("--tables: bad pattern %q", p)
			}
			if ok {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}

// missingTables returns the patterns without glob characters (table
// names) that match none of names, the whole list of a side's tables: a
// name mistyped in a list is told, not skipped while the others are
// copied.
func missingTables(names, patterns []string) string {
	var missing []string
	for _, p := range patterns {
		if !isTableName(p) {
			continue
		}
		if got, _ := selectTables(names, []string{p}); len(got) == 0 {
			missing = append(missing, p)
		}
	}
	return strings.Join(missing, ", ")
}

// isTableName reports whether a --tables pattern has no glob characters:
// it names one table.
func isTableName(p string) bool { return !strings.ContainsAny(p, `*?[\`) }

// tableStats is one table's summary.
type tableStats struct {
	entities, bytes atomic.Int64
	start           time.Time
}

func (ts *tableStats) print(w io.Writer, table string) {
	el := time.Since(ts.start)
	fmt.Fprintf(w, "table %s: %d entities, %s, %s, %.0f entities/s\n", table, ts.entities.Load(), humanBytes(ts.bytes.Load()), el.Round(time.Millisecond), float64(ts.entities.Load())/el.Seconds())
}

// writer writes entities of one partition of one table to the destination,
// in batches of up to 100, handling refusals.
type writer struct {
	o   Options
	dst *side
	st  *stats
	out sync.Mutex
}

// write writes es; refused, when not nil, counts the entities refused and
// skipped (a checkpoint records them with the page's progress).
func (w *writer) write(ctx context.Context, table string, es []*partita.Entity, ts *tableStats, refused *int64) error {
	if w.dst.sink != nil {
		n, err := w.dst.sink.write(table, es)
		if err != nil {
			return err
		}
		w.count(len(es), n, ts)
		return nil
	}
	return w.writePrepared(ctx, table, prepare(es), ts, refused)
}

// writePrepared writes entities of one partition of table to an endpoint
// destination.
func (w *writer) writePrepared(ctx context.Context, table string, ps []prepared, ts *tableStats, refused *int64) error {
	for len(ps) > 0 {
		// Up to 100 operations and maxBatchBytes of bodies (counted twice
		// over, to stay clear of the service's 4 MiB), one partition.
		n, size := 0, 0
		for n < len(ps) && n < 100 && ps[n].pk == ps[0].pk {
			sz := len(ps[n].body) * 2
			if n > 0 && size+sz > maxBatchBytes {
				break
			}
			size += sz
			n++
		}
		chunk := ps[:n]
		for len(chunk) > 0 {
			nb, err := w.dst.remote.writeBatch(ctx, w.dst.tableName(table), chunk)
			if err == nil {
				w.count(len(chunk), nb, ts)
				break
			}
			var ref *Refused
			var unnamed *unnamedRefusal
			if errors.As(err, &unnamed) && w.o.SkipRefused && len(chunk) > 1 {
				// A refusal that names no entity (a key-range SAS refuses
				// the whole batch): each entity alone, so that a refusal
				// names it and the others are written. It stopped the
				// copy at the first batch that held one.
				for i := range chunk {
					if err := w.writePrepared(ctx, table, chunk[i:i+1], ts, refused); err != nil {
						return err
					}
				}
				break
			}
			if !errors.As(err, &ref) {
				return err
			}
			if !w.o.SkipRefused {
				return ref
			}
			w.st.refused.Add(1)
			if refused != nil {
				*refused++
			}
			w.out.Lock()
			fmt.Fprintf(w.o.Out, "refused: %s\n", ref.Error())
			w.out.Unlock()
			// Drop the refused entity and send the rest again.
			rest := make([]prepared, 0, len(chunk)-1)
			for _, p := range chunk {
				if p.pk != ref.PartitionKey || p.rk != ref.RowKey {
					rest = append(rest, p)
				}
			}
			if len(rest) == len(chunk) {
				return ref // should not happen: the refused entity is not in the batch
			}
			chunk = rest
		}
		ps = ps[n:]
	}
	return nil
}

func (w *writer) count(n, bytes int, ts *tableStats) {
	w.st.entities.Add(int64(n))
	w.st.bytes.Add(int64(bytes))
	if ts != nil {
		ts.entities.Add(int64(n))
		ts.bytes.Add(int64(bytes))
	}
}

// copyFromRemote copies each selected table by key ranges in parallel.
func copyFromRemote(ctx context.Context, o Options, src, dst *side, cp *checkpoint, st *stats) error {
	names, err := src.remote.ListTables(ctx) // at most maxTables
	if err != nil {
		return err
	}
	tables, err := selectTables(names, o.Tables)
	if err != nil {
		return err
	}
	if len(tables) == 0 && len(o.Tables) > 0 {
		// A typo must not replace an export with an empty file.
		return fmt.Errorf("--tables %s matches no table of the source", strings.Join(o.Tables, ","))
	}
	if m := missingTables(names, o.Tables); m != "" {
		return fmt.Errorf("--tables: the source has no table %s", m)
	}
	if err := dst.oneTable(len(tables)); err != nil {
		return err
	}
	// A bad --filter fails here, before any table is created.
	if o.Filter != "" && len(tables) > 0 {
		if _, err := src.remote.queryPage(ctx, tables[0], o.Filter, "", "", 1, ""); err != nil {
			return fmt.Errorf("--filter: %w", err)
		}
	}
	w := &writer{o: o, dst: dst, st: st}
	for _, table := range tables {
		if cp != nil && cp.tableDone(table) {
			fmt.Fprintf(o.Out, "table %s: done in the checkpoint\n", table)
			continue
		}
		if dst.remote != nil {
			if err := dst.remote.CreateTable(ctx, table); err != nil {
				return err
			}
		} else if err := dst.sink.ensure(table); err != nil {
			return err
		}
		ts := &tableStats{start: time.Now()}
		var ranges []*rangeState
		if cp != nil {
			ranges = cp.ranges(table)
		}
		if ranges == nil {
			var pks []string
			if o.Parallel > 1 {
				// The last range is open-ended, however many there are.
				if pks, _, err = src.remote.partitions(ctx, table, 64*o.Parallel); err != nil {
					return err
				}
			}
			for _, r := range splitRanges(pks, o.Parallel) {
				ranges = append(ranges, &rangeState{Lo: r.Lo, Hi: r.Hi})
			}
			if cp != nil {
				if err := cp.setRanges(table, ranges); err != nil {
					return err
				}
			}
		}
		ctx2, cancel := context.WithCancel(ctx)
		errc := make(chan error, len(ranges))
		var wg sync.WaitGroup
		for _, r := range ranges {
			if r.Done {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := copyRange(ctx2, o, src, w, cp, table, r, ts); err != nil {
					errc <- err
					cancel()
				}
			}()
		}
		wg.Wait()
		cancel()
		close(errc)
		if err := <-errc; err != nil {
			return err
		}
		if cp != nil {
			if err := cp.finishTable(table); err != nil {
				return err
			}
		}
		ts.print(o.Out, table)
	}
	return nil
}

// copyRange copies one key range page by page; the next page is read while
// the current one is written. The checkpoint records a page's continuation
// only after the destination acknowledged all of it.
func copyRange(ctx context.Context, o Options, src *side, w *writer, cp *checkpoint, table string, r *rangeState, ts *tableStats) error {
	type item struct {
		p   *page
		err error
	}
	pages := make(chan item, 1)
	filter := keyRange{Lo: r.Lo, Hi: r.Hi}.filter(o.Filter)
	go func() {
		defer close(pages)
		npk, nrk := r.NextPK, r.NextRK
		var order scanOrder
		for {
			var p *page
			var err error
			if w.dst.sink != nil {
				p, err = src.remote.queryRecords(ctx, table, filter, npk, nrk)
			} else {
				p, err = src.remote.queryPrepared(ctx, table, filter, npk, nrk)
			}
			if err == nil {
				err = order.next(src.remote, table, npk, nrk, p)
			}
			if err == nil {
				err = keyRange{Lo: r.Lo, Hi: r.Hi}.holds(src.remote.side, table, p)
			}
			select {
			case pages <- item{p, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || p.nextPK == "" && p.nextRK == "" {
				return
			}
			npk, nrk = p.nextPK, p.nextRK
		}
	}()
	for it := range pages {
		if it.err != nil {
			return it.err
		}
		var refused int64 // this page's, recorded with its progress
		if it.p.records != nil {
			if err := w.dst.sink.writeRecords(table, it.p.records); err != nil {
				return err
			}
			w.count(it.p.count, len(it.p.records), ts)
		}
		for ps := it.p.prepared; len(ps) > 0; {
			n := 1
			for n < len(ps) && ps[n].pk == ps[0].pk {
				n++
			}
			if err := w.writePrepared(ctx, table, ps[:n], ts, &refused); err != nil {
				return err
			}
			ps = ps[n:]
		}
		es := it.p.entities
		for len(es) > 0 {
			n := 1
			for n < len(es) && es[n].PartitionKey == es[0].PartitionKey {
				n++
			}
			if err := w.write(ctx, table, es[:n], ts, &refused); err != nil {
				return err
			}
			es = es[n:]
		}
		done := it.p.nextPK == "" && it.p.nextRK == ""
		if cp != nil {
			// The page's refusals with its progress, in one write: a run
			// killed before it copies the page again, and counts them
			// then (they were counted twice when recorded one by one
			// ahead of the progress).
			if err := cp.advance(table, r, it.p.nextPK, it.p.nextRK, done, refused); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// copyFromFiles reads the JSONL files in order and writes batches of
// consecutive entities of one partition through Parallel writers.
func copyFromFiles(ctx context.Context, o Options, src, dst *side, st *stats) error {
	var total int64
	for _, f := range src.files {
		if fi, err := os.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	var doneBefore atomic.Int64
	var cur atomic.Pointer[countingReader]
	st.srcTotal = total
	st.srcDone = func() int64 {
		n := doneBefore.Load()
		if c := cur.Load(); c != nil {
			n += c.N()
		}
		return n
	}
	w := &writer{o: o, dst: dst, st: st}
	type job struct {
		table string
		es    []*partita.Entity // file destination
		ps    []prepared        // endpoint destination
		ts    *tableStats
	}
	jobs := make(chan job, o.Parallel)
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err; cancel() }) }
	tstats := map[string]*tableStats{} // bounded by maxTables
	var order []string
	var wg sync.WaitGroup
	for range o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx2.Err() != nil {
					continue
				}
				var err error
				if j.ps != nil {
					err = w.writePrepared(ctx2, j.table, j.ps, j.ts, nil)
				} else {
					err = w.write(ctx2, j.table, j.es, j.ts, nil)
				}
				if err != nil {
					fail(err)
				}
			}
		}()
	}
	// A batch in the making: entities for a file destination, request
	// bodies (made here, from the line) for an endpoint.
	var pending []*partita.Entity
	var pendingP []prepared
	pendTable, pendPK := "", ""
	pendBytes, pendN := 0, 0
	pendLastRK, pendAscending := "", false // the batch's last RowKey; whether its keys ascend
	flush := func() {
		if pendN == 0 {
			return
		}
		select {
		case jobs <- job{pendTable, pending, pendingP, tstats[pendTable]}:
		case <-ctx2.Done():
		}
		pending, pendingP, pendBytes, pendN = nil, nil, 0, 0
	}
	created := map[string]bool{} // bounded by maxTables
	var readErr error
	// chosen reports whether --tables selects a table of the files; its
	// answers are kept for maxTables names. A bad pattern fails here, as
	// for an endpoint source, not as a selection of nothing.
	if _, err := selectTables([]string{""}, o.Tables); err != nil {
		return err
	}
	choice := map[string]bool{}
	chosen := func(table string) bool {
		if len(o.Tables) == 0 {
			return true
		}
		if c, ok := choice[table]; ok {
			return c
		}
		c, _ := selectTables([]string{table}, o.Tables)
		if len(choice) < maxTables {
			choice[table] = len(c) > 0
		}
		return len(c) > 0
	}
files:
	for _, f := range src.files {
		lr, err := openLines(f)
		if err != nil {
			readErr = err
			break
		}
		cur.Store(lr.counted)
		for ctx2.Err() == nil {
			var rec Record
			var pp prepared
			var err error
			if dst.remote != nil {
				rec.Table, pp, err = lr.nextPrepared()
			} else {
				rec, err = lr.next()
				if err == nil {
					pp.pk = rec.Entity.PartitionKey
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				lr.close()
				readErr = err
				break files
			}
			if !chosen(rec.Table) {
				continue // every line is still read: a malformed one stops the copy
			}
			if !created[rec.Table] {
				if err := dst.oneTable(len(created) + 1); err != nil {
					lr.close()
					readErr = err
					break files
				}
				if len(created) >= maxTables {
					lr.close()
					readErr = fmt.Errorf("source: more than %d tables", maxTables)
					break files
				}
				flush()
				// Writers may still hold batches of other tables; the new
				// table's map entry is set before any of its batches.
				if dst.remote != nil {
					if err := dst.remote.CreateTable(ctx2, rec.Table); err != nil {
						lr.close()
						readErr = err
						break files
					}
				} else if err := dst.sink.ensure(rec.Table); err != nil {
					lr.close()
					readErr = err
					break files
				}
				created[rec.Table] = true
				tstats[rec.Table] = &tableStats{start: time.Now()}
				order = append(order, rec.Table)
			}
			// The line's length stands for the body's (the writer bounds
			// the batches by the bodies themselves): Entity.Size counts
			// UTF-16, which cost more than the rest of the batching.
			sz := lr.lastLen * 2
			rk := pp.rk
			if rec.Entity != nil {
				rk = rec.Entity.RowKey
			}
			// A key after every key of the batch repeats none of them (an
			// export's lines come in key order): only otherwise is the
			// batch searched.
			if pendN > 0 && (rec.Table != pendTable || pp.pk != pendPK || pendN == 100 || pendBytes+sz > maxBatchBytes ||
				!(pendAscending && rk > pendLastRK) && pendingHas(pending, pendingP, rk)) {
				flush()
			}
			pendAscending = pendN == 0 || pendAscending && rk > pendLastRK
			pendLastRK = rk
			pendTable, pendPK = rec.Table, pp.pk
			if rec.Entity != nil {
				pending = append(pending, rec.Entity)
			} else {
				pendingP = append(pendingP, pp)
			}
			pendBytes += sz
			pendN++
		}
		if fi, err := os.Stat(f); err == nil {
			doneBefore.Add(fi.Size())
		}
		cur.Store(nil)
		lr.close()
	}
	// Everything before a malformed line is written; nothing of it.
	flush()
	close(jobs)
	wg.Wait()
	for _, t := range order {
		tstats[t].print(o.Out, t)
	}
	if readErr != nil {
		return readErr
	}
	if len(o.Tables) > 0 && len(created) == 0 && firstErr == nil && ctx.Err() == nil {
		return fmt.Errorf("--tables %s matches no table of the source's lines", strings.Join(o.Tables, ","))
	}
	if m := missingTables(order, o.Tables); m != "" && firstErr == nil && ctx.Err() == nil {
		// Known only at the end of the files: the other tables are written.
		return fmt.Errorf("--tables: the source's lines have no table %s", m)
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// pendingHas reports whether the batch in the making already holds RowKey
// rk (its partition is the batch's). A batch may hold a key once (the
// service refuses the whole batch otherwise), so the line starts the next
// batch: of a file's two lines of one key, one is kept, whichever batch
// lands last (docs/COPY.md).
func pendingHas(pending []*partita.Entity, pendingP []prepared, rk string) bool {
	for _, x := range pending {
		if x.RowKey == rk {
			return true
		}
	}
	for i := range pendingP {
		if pendingP[i].rk == rk {
			return true
		}
	}
	return false
}

// startProgress prints progress lines until the returned func is called.
func startProgress(o Options, st *stats) func() {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(o.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				if o.Terminal {
					fmt.Fprintln(o.Progress)
				}
				return
			case <-t.C:
			}
			el := time.Since(start)
			n := st.entities.Load()
			line := fmt.Sprintf("%d entities, %.0f entities/s, %s, %s elapsed", n, float64(n)/el.Seconds(), humanBytes(st.bytes.Load()), el.Round(time.Second))
			if st.srcDone != nil && st.srcTotal > 0 {
				d := st.srcDone()
				if d > 0 {
					eta := time.Duration(float64(el) * float64(st.srcTotal-d) / float64(d))
					line += fmt.Sprintf(", %d%%, ETA %s", 100*d/st.srcTotal, eta.Round(time.Second))
				}
			}
			if r := st.retries.Load(); r > 0 {
				line += fmt.Sprintf(", %d retries", r)
			}
			if o.Terminal {
				fmt.Fprintf(o.Progress, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(o.Progress, line)
			}
		}
	}()
	return func() { close(done); <-finished }
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// sortEntities orders es by PartitionKey then RowKey (byte order; used to
// pair entities up, not to match a service's order).
func sortEntities(es []*partita.Entity) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].PartitionKey != es[j].PartitionKey {
			return es[i].PartitionKey < es[j].PartitionKey
		}
		return es[i].RowKey < es[j].RowKey
	})
}
