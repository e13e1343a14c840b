package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partita/partita/internal/changeset"
)

// Workloads in the order "all" runs them: insert first so that the reads
// and updates have data, delete last so that it removes what insert made.
var AllWorkloads = []string{"insert", "get", "upsert", "merge", "batch", "range", "partition-scan", "table-scan", "mixed", "delete"}

// extraWorkloads are accepted by --workload but not part of "all".
var extraWorkloads = []string{"batch-upsert", "drop-table"}

// countBound workloads run exactly --count entities (unless --duration
// ends them first); the others run for --duration, at most --max-ops ops.
var countBound = map[string]bool{"insert": true, "batch": true, "batch-upsert": true, "delete": true, "drop-table": true, "load": true}

// needsData workloads read or update existing entities.
var needsData = map[string]bool{"get": true, "upsert": true, "merge": true, "range": true, "partition-scan": true, "mixed": true, "delete": true}

// Config is what `partita bench` was asked to do.
type Config struct {
	Endpoint    string
	Account     string
	Key         string
	Workloads   []string
	Concurrency int
	EntitySize  int
	Partitions  int
	Count       int
	// BatchCount, when set, is the entities of the batch workload instead
	// of Count: more, so that $batch is measured over seconds, not a few
	// hundred requests. Run measures it after the other workloads, in a
	// table of its own that it then deletes; at the batch workload's place
	// the bench's table still gets Count entities by $batch (not
	// measured), so every other workload sees the table it would have seen
	// without BatchCount.
	BatchCount int
	Duration   time.Duration
	Warmup     time.Duration
	BatchSize  int
	RangeSize  int
	MaxOps     int
	Table      string // "" = a fresh table, deleted at the end
	Preloaded  int
	Timeout    time.Duration
	// CountCap caps insert, batch and delete (0: Duration).
	CountCap time.Duration
	// ServerPID, when set, is the server process whose CPU use is reported.
	ServerPID int
	Progress  string // auto, bar, plain, none
	Seed      uint64
}

// Defaults are the flag defaults.
var Defaults = Config{
	Endpoint:    "http://127.0.0.1:10002/devstoreaccount1",
	Account:     "devstoreaccount1",
	Key:         "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
	Concurrency: 16,
	EntitySize:  1024,
	Partitions:  16,
	Count:       10000,
	Duration:    20 * time.Second,
	Warmup:      time.Second,
	BatchSize:   100,
	RangeSize:   500,
	MaxOps:      10_000_000,
	Timeout:     60 * time.Second,
	Progress:    "auto",
}

// ParseWorkloads splits a comma list; "all" (or empty) is AllWorkloads.
func ParseWorkloads(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return slices.Clone(AllWorkloads), nil
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if w == "all" {
			out = append(out, AllWorkloads...)
			continue
		}
		if !slices.Contains(AllWorkloads, w) && !slices.Contains(extraWorkloads, w) {
			return nil, fmt.Errorf("--workload: unknown workload %q (want a comma list of %s, or all)", w, strings.Join(append(slices.Clone(AllWorkloads), extraWorkloads...), ", "))
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, errors.New("--workload: empty")
	}
	return out, nil
}

func (c *Config) validate() error {
	switch {
	case c.Concurrency < 1 || c.Concurrency > 4096:
		return errors.New("--concurrency: want 1..4096")
	case c.EntitySize < 0 || c.EntitySize > 900_000:
		return errors.New("--entity-size: want 0..900000 bytes")
	case c.Partitions < 1 || c.Partitions > 9999:
		return errors.New("--partitions: want 1..9999")
	case c.Count < 0:
		return errors.New("--count: want >= 0")
	case c.Duration <= 0:
		return errors.New("--duration: want > 0")
	case c.Warmup < 0:
		return errors.New("--warmup: want >= 0")
	case c.BatchSize < 1 || c.BatchSize > 100:
		return errors.New("--batch-size: want 1..100 (the service's limit per changeset)")
	case c.EntitySize*c.BatchSize > 3_500_000:
		return errors.New("--batch-size × --entity-size: a $batch body must stay under 4 MiB")
	case c.RangeSize < 1:
		return errors.New("--range-size: want >= 1")
	case c.MaxOps < 1:
		return errors.New("--max-ops: want >= 1")
	case c.Preloaded < 0:
		return errors.New("--preloaded: want >= 0")
	case c.BatchCount < 0:
		return errors.New("--batch-count: want >= 0")
	case c.CountCap < 0:
		return errors.New("--count-cap: want >= 0")
	}
	if c.Table != "" && !validTableName(c.Table) {
		return fmt.Errorf("--table %q: want 3-63 letters and digits, starting with a letter", c.Table)
	}
	switch c.Progress {
	case "auto", "bar", "plain", "none":
	default:
		return fmt.Errorf("--progress %q: want auto, bar, plain or none", c.Progress)
	}
	return nil
}

func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 63 || strings.EqualFold(s, "tables") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// Runner runs workloads against one table.
type Runner struct {
	cfg    Config
	c      *Client
	table  string
	ks     keyspace
	runTag string
	prog   *progress
	log    io.Writer

	// The entities known to exist: 0..preloaded-1 of the key layout, then
	// inserted (entity numbers), in that order.
	preloaded uint64
	inserted  []uint64
	nextNew   uint64 // next entity number insert uses
	batchNext uint64 // next batch sequence number
	tableSize atomic.Int64
	dropped   bool

	loadFrom, loadTo uint64 // the "load" workload's entity numbers
}

// NewRunner checks cfg and returns a Runner; log gets progress and notes.
func NewRunner(cfg Config, log io.Writer, progressIsTerminal bool) (*Runner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c, err := NewClient(cfg.Endpoint, cfg.Account, cfg.Key, cfg.Concurrency, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		cfg:       cfg,
		c:         c,
		table:     cfg.Table,
		ks:        keyspace{partitions: cfg.Partitions},
		runTag:    randomHex(6),
		log:       log,
		preloaded: uint64(cfg.Preloaded),
		nextNew:   uint64(cfg.Preloaded),
	}
	r.tableSize.Store(int64(cfg.Preloaded))
	if r.table == "" {
		r.table = "bench" + randomHex(10)
	}
	mode := cfg.Progress
	if mode == "auto" {
		mode = "plain"
		if progressIsTerminal {
			mode = "bar"
		}
	}
	r.prog = &progress{mode: mode, w: log}
	return r, nil
}

// Table is the table the runner uses.
func (r *Runner) Table() string { return r.table }

// existing is the number of entities known to exist.
func (r *Runner) existing() uint64 { return r.preloaded + uint64(len(r.inserted)) }

// existingAt returns the j-th known entity number.
func (r *Runner) existingAt(j uint64) uint64 {
	if j < r.preloaded {
		return j
	}
	return r.inserted[j-r.preloaded]
}

// Report is the machine-readable result of a run (--json).
type Report struct {
	Tool      string    `json:"tool"`
	Endpoint  string    `json:"endpoint"`
	Account   string    `json:"account"`
	Table     string    `json:"table"`
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	GoVersion string    `json:"go_version"`
	NumCPU    int       `json:"num_cpu"`
	Settings  Settings  `json:"settings"`
	Results   []Result  `json:"results"`
}

// Settings echoes the configuration in a report.
type Settings struct {
	Workloads   []string `json:"workloads"`
	Concurrency int      `json:"concurrency"`
	EntitySize  int      `json:"entity_size"`
	Partitions  int      `json:"partitions"`
	Count       int      `json:"count"`
	BatchCount  int      `json:"batch_count,omitempty"`
	Duration    string   `json:"duration"`
	Warmup      string   `json:"warmup"`
	BatchSize   int      `json:"batch_size"`
	RangeSize   int      `json:"range_size"`
	MaxOps      int      `json:"max_ops"`
	Preloaded   int      `json:"preloaded"`
	CountCap    string   `json:"count_cap,omitempty"`
}

// Result is one workload's outcome. Ops count successful operations only;
// latencies are of successful operations, in milliseconds.
type Result struct {
	Workload       string  `json:"workload"`
	Ops            int64   `json:"ops"`
	Requests       int64   `json:"requests"` // HTTP requests, continuation pages included
	Entities       int64   `json:"entities"` // written, read or returned
	Examined       int64   `json:"examined,omitempty"`
	Errors         int64   `json:"errors"`
	FirstError     string  `json:"first_error,omitempty"`
	Seconds        float64 `json:"seconds"`
	OpsPerSec      float64 `json:"ops_per_sec"`
	EntitiesPerSec float64 `json:"entities_per_sec"`
	ExaminedPerSec float64 `json:"examined_per_sec,omitempty"`
	P50Ms          float64 `json:"p50_ms"`
	P90Ms          float64 `json:"p90_ms"`
	P99Ms          float64 `json:"p99_ms"`
	P999Ms         float64 `json:"p999_ms"`
	MaxMs          float64 `json:"max_ms"`
	MeanMs         float64 `json:"mean_ms"`
	StoppedBy      string  `json:"stopped_by"` // count, duration, max-ops, interrupted
	// Cores kept busy on average during the measured part (Linux /proc):
	// by the bench client, by the server (with --server-pid), by the whole
	// machine (everyone, including other processes).
	CPUClient  float64 `json:"cpu_client,omitempty"`
	CPUServer  float64 `json:"cpu_server,omitempty"`
	CPUMachine float64 `json:"cpu_machine,omitempty"`
	// The server's CPU time (all threads) during the measured part, with
	// --server-pid: in total, in µs per operation answered (errors too),
	// and in µs per entity (written by batch, returned by range, examined
	// by the scans). The source is "schedstat" (ns) or "stat" (10 ms
	// ticks).
	ServerCPUSeconds     float64 `json:"server_cpu_seconds,omitempty"`
	ServerCPUUsPerOp     float64 `json:"server_cpu_us_per_op,omitempty"`
	ServerCPUUsPerEntity float64 `json:"server_cpu_us_per_entity,omitempty"`
	ServerCPUSource      string  `json:"server_cpu_source,omitempty"`
	Note                 string  `json:"note,omitempty"`
}

// Run sets up the table, runs cfg.Workloads in order and cleans up.
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	rep := &Report{
		Tool:      "partita bench",
		Endpoint:  r.c.Base(),
		Account:   r.cfg.Account,
		Table:     r.table,
		Started:   time.Now().UTC(),
		GoVersion: runtime.Version(),
		NumCPU:    runtime.NumCPU(),
		Settings: Settings{
			Workloads: r.cfg.Workloads, Concurrency: r.cfg.Concurrency, EntitySize: r.cfg.EntitySize,
			Partitions: r.cfg.Partitions, Count: r.cfg.Count, BatchCount: r.cfg.BatchCount, Duration: r.cfg.Duration.String(),
			Warmup: r.cfg.Warmup.String(), BatchSize: r.cfg.BatchSize, RangeSize: r.cfg.RangeSize,
			MaxOps: r.cfg.MaxOps, Preloaded: r.cfg.Preloaded,
		},
	}
	if r.cfg.CountCap > 0 {
		rep.Settings.CountCap = r.cfg.CountCap.String()
	}
	t0 := time.Now()
	fresh := r.cfg.Table == ""
	if err := r.c.CreateTable(ctx, r.table, !fresh); err != nil {
		return nil, fmt.Errorf("create table %s: %w", r.table, err)
	}
	defer func() {
		if fresh && !r.dropped {
			// A fresh table goes away even after an interrupt.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := r.c.DeleteTable(dctx, r.table); err != nil {
				fmt.Fprintf(r.log, "partita bench: delete table %s: %v\n", r.table, err)
			}
		}
	}()
	r.prime(ctx)
	sideBatch := -1 // index of the batch result measured last, if any
	for _, w := range r.cfg.Workloads {
		if ctx.Err() != nil {
			break
		}
		if needsData[w] && r.existing() == 0 || w == "table-scan" && r.tableSize.Load() == 0 {
			n := r.cfg.Count
			if n == 0 {
				n = 1000
			}
			fmt.Fprintf(r.log, "partita bench: %s needs data: loading %d entities first (not reported)\n", w, n)
			limit := max(r.cfg.Duration, r.cfg.CountCap)
			r.runWorkload(ctx, "insert", uint64(n), limit, true)
			if got := r.existing(); got < uint64(n) && ctx.Err() == nil {
				// The workloads then run on a smaller table than asked
				// for; say so, or a scan's figures pass for --count's.
				fmt.Fprintf(r.log, "partita bench: %s: only %d of %d entities loaded within %s (raise --count-cap)\n", w, got, n, limit)
			}
		}
		if w == "batch" && r.cfg.BatchCount > 0 {
			// The table gets what the batch workload writes without
			// --batch-count (not reported), so the workloads after it
			// see the same table; the measured batch runs last.
			fmt.Fprintf(r.log, "partita bench: batch: writing %d entities by $batch first (not reported); the measured %d run after the other workloads, in a table of their own\n", r.cfg.Count, r.cfg.BatchCount)
			r.runWorkload(ctx, "batch", uint64(r.cfg.Count), r.countDuration(), true)
			sideBatch = len(rep.Results)
			rep.Results = append(rep.Results, Result{Workload: "batch", StoppedBy: "interrupted"}) // until it runs
			continue
		}
		res := r.RunWorkload(ctx, w)
		rep.Results = append(rep.Results, res)
	}
	if sideBatch >= 0 && ctx.Err() == nil {
		rep.Results[sideBatch] = r.runSideBatch(ctx)
	}
	rep.Seconds = time.Since(t0).Seconds()
	return rep, ctx.Err()
}

// prime opens the keep-alive connections before the first measured
// request, so that no workload pays for connection setup.
func (r *Runner) prime(ctx context.Context) {
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			r.c.do(ctx, &call{method: http.MethodGet, path: "/Tables", rawQuery: "%24top=1"}, &buf)
		}()
	}
	wg.Wait()
}

// RunWorkload runs one workload with the configured bounds.
func (r *Runner) RunWorkload(ctx context.Context, name string) Result {
	limit := uint64(r.cfg.MaxOps)
	dur := r.cfg.Duration
	if countBound[name] {
		limit, dur = uint64(r.cfg.Count), r.countDuration()
	}
	return r.runWorkload(ctx, name, limit, dur, false)
}

// countDuration is the time cap of the count-bound workloads.
func (r *Runner) countDuration() time.Duration {
	if r.cfg.CountCap > 0 {
		return r.cfg.CountCap
	}
	return r.cfg.Duration
}

// runSideBatch runs the batch workload for --batch-count entities in a
// fresh table of its own, deleted afterwards (Run calls it after the other
// workloads, so that neither the table nor its purge affects them).
func (r *Runner) runSideBatch(ctx context.Context) Result {
	main, size := r.table, r.tableSize.Load()
	side := "bench" + randomHex(10) + "b"
	if err := r.c.CreateTable(ctx, side, false); err != nil {
		return Result{Workload: "batch", Errors: 1, FirstError: fmt.Sprintf("create table %s: %v", side, err)}
	}
	r.table = side
	res := r.runWorkload(ctx, "batch", uint64(r.cfg.BatchCount), r.countDuration(), false)
	r.table = main
	r.tableSize.Store(size)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := r.c.DeleteTable(dctx, side); err != nil {
		fmt.Fprintf(r.log, "partita bench: delete table %s: %v\n", side, err)
	}
	return res
}

// worker is one load goroutine's state.
type worker struct {
	rng      *mrand.Rand
	hist     *Histogram
	buf      bytes.Buffer // response body
	body     []byte       // request body
	path     []byte
	pk, rk   []byte
	reqs     []changeset.Request
	ops      int64
	ents     int64
	examined int64
	requests int64
	errs     int64
	firstErr error
	errAt    time.Time
	ok       []uint64 // entity numbers inserted (insert)
}

// opResult is what one operation did.
type opResult struct {
	entities int64
	requests int64
	examined int64
}

// runWorkload runs limit operations of name, for at most dur after the
// warmup. setup runs are silent and not measured for a report.
func (r *Runner) runWorkload(ctx context.Context, name string, limit uint64, dur time.Duration, setup bool) Result {
	res := Result{Workload: name}
	defer r.c.CloseIdle()
	if name == "drop-table" {
		return r.dropTable(ctx)
	}
	var op func(w *worker, i uint64) (opResult, error)
	warmup := r.cfg.Warmup
	if countBound[name] || setup {
		warmup = 0 // load-like workloads are measured whole
	}
	base := r.nextNew
	n := r.existing()
	switch name {
	case "insert":
		// Loading a named table (--table) that a run before this one
		// left: its entities of the key layout are there already (409),
		// which is what the load is for.
		existsOK := setup && r.cfg.Table != ""
		op = func(w *worker, i uint64) (opResult, error) { return r.opInsert(ctx, w, base+i, existsOK) }
	case "load":
		// Batches of up to --batch-size rows of one partition, covering
		// entity numbers [loadFrom, loadTo) of the key layout (both
		// multiples of --partitions).
		P := uint64(r.cfg.Partitions)
		bs := uint64(r.cfg.BatchSize)
		row0, row1 := r.loadFrom/P, r.loadTo/P
		blocks := (row1 - row0 + bs - 1) / bs
		limit = blocks * P
		op = func(w *worker, i uint64) (opResult, error) {
			lo := row0 + (i/P)*bs
			return r.opLoad(ctx, w, i%P, lo, min(lo+bs, row1))
		}
	case "batch", "batch-upsert":
		total := limit
		limit = (total + uint64(r.cfg.BatchSize) - 1) / uint64(r.cfg.BatchSize)
		bs := r.batchNext
		upsert := name == "batch-upsert"
		op = func(w *worker, i uint64) (opResult, error) {
			size := min(uint64(r.cfg.BatchSize), total-i*uint64(r.cfg.BatchSize))
			return r.opBatch(ctx, w, bs+i, size, upsert)
		}
		defer func() { r.batchNext = bs + limit }()
	case "delete":
		limit = min(limit, n)
		op = func(w *worker, i uint64) (opResult, error) { return r.opDelete(ctx, w, r.existingAt(n-1-i)) }
	case "get":
		op = func(w *worker, i uint64) (opResult, error) { return r.opGet(ctx, w, r.pick(w, n)) }
	case "upsert":
		op = func(w *worker, i uint64) (opResult, error) { return r.opWrite(ctx, w, r.pick(w, n), false) }
	case "merge":
		op = func(w *worker, i uint64) (opResult, error) { return r.opWrite(ctx, w, r.pick(w, n), true) }
	case "range":
		op = func(w *worker, i uint64) (opResult, error) { return r.opRange(ctx, w, n) }
	case "partition-scan":
		op = func(w *worker, i uint64) (opResult, error) { return r.opPartitionScan(ctx, w) }
	case "table-scan":
		op = func(w *worker, i uint64) (opResult, error) { return r.opTableScan(ctx, w) }
	case "mixed":
		op = func(w *worker, i uint64) (opResult, error) {
			switch x := w.rng.IntN(100); {
			case x < 70:
				return r.opGet(ctx, w, r.pick(w, n))
			case x < 80:
				return r.opWrite(ctx, w, r.pick(w, n), false)
			case x < 90:
				return r.opWrite(ctx, w, r.pick(w, n), true)
			default:
				return r.opRange(ctx, w, n)
			}
		}
	default:
		res.Errors = 1
		res.FirstError = "unknown workload"
		return res
	}
	if needsData[name] && n == 0 {
		res.Note = "no entities to work on"
		res.StoppedBy = "count"
		return res
	}

	start := time.Now()
	measureFrom := start.Add(warmup)
	stopAt := measureFrom.Add(dur)
	var next atomic.Uint64
	var stoppedByTime, anyDone atomic.Bool
	workers := make([]*worker, r.cfg.Concurrency)
	seed := r.cfg.Seed // fixed keys choice with --seed, fresh otherwise
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	if !setup {
		r.prog.begin(name, limit, countBound[name], warmup, dur)
	}
	cpu0 := takeCPU(r.cfg.ServerPID)
	var cpuMu sync.Mutex
	cpuTimer := time.AfterFunc(warmup, func() {
		cpuMu.Lock()
		cpu0 = takeCPU(r.cfg.ServerPID)
		cpuMu.Unlock()
	})
	var wg sync.WaitGroup
	for k := range workers {
		w := &worker{
			rng:  mrand.New(mrand.NewPCG(seed, uint64(k)*0x9e3779b97f4a7c15+1)),
			hist: NewHistogram(),
		}
		workers[k] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(stopAt) {
					stoppedByTime.Store(true)
					return
				}
				i := next.Add(1) - 1
				if i >= limit {
					return
				}
				or, err := op(w, i)
				t1 := time.Now()
				if ctx.Err() != nil && err != nil {
					return // interrupted: not the server's fault
				}
				if err == nil && name == "insert" {
					w.ok = append(w.ok, base+i)
				}
				if !setup {
					r.prog.add(err != nil)
				}
				if t0.Before(measureFrom) {
					continue
				}
				anyDone.Store(true)
				w.requests += or.requests
				if err != nil {
					w.errs++
					if w.firstErr == nil {
						w.firstErr, w.errAt = err, t1
					}
					continue
				}
				w.ops++
				w.ents += or.entities
				w.examined += or.examined
				w.hist.Record(int64(t1.Sub(t0)))
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	cpu1 := takeCPU(r.cfg.ServerPID)
	cpuTimer.Stop() // if it never fired, the window is the whole run
	cpuMu.Lock()
	res.CPUClient, res.CPUServer, res.CPUMachine = cores(cpu0, cpu1)
	srvCPU, srvSrc := serverCPU(cpu0, cpu1)
	cpuMu.Unlock()
	if !setup {
		r.prog.end()
	}

	h := NewHistogram()
	var firstAt time.Time
	for _, w := range workers {
		h.Merge(w.hist)
		res.Ops += w.ops
		res.Entities += w.ents
		res.Examined += w.examined
		res.Requests += w.requests
		res.Errors += w.errs
		if w.firstErr != nil && (firstAt.IsZero() || w.errAt.Before(firstAt)) {
			firstAt, res.FirstError = w.errAt, w.firstErr.Error()
		}
	}
	// Bookkeeping of the key space.
	switch name {
	case "insert":
		var got []uint64
		for _, w := range workers {
			got = append(got, w.ok...)
		}
		slices.Sort(got)
		r.inserted = append(r.inserted, got...)
		issued := min(next.Load(), limit)
		r.nextNew = base + issued
	case "delete":
		done := min(next.Load(), limit)
		// Forget the entities delete was issued for (from the end).
		keep := n - done
		if keep <= r.preloaded {
			r.preloaded, r.inserted = keep, r.inserted[:0]
		} else {
			r.inserted = r.inserted[:keep-r.preloaded]
		}
	}

	window := end.Sub(measureFrom)
	if window <= 0 || !anyDone.Load() {
		window = end.Sub(start)
	}
	res.Seconds = window.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
		res.EntitiesPerSec = float64(res.Entities) / res.Seconds
		res.ExaminedPerSec = float64(res.Examined) / res.Seconds
	}
	if srvSrc != "" {
		res.ServerCPUSeconds, res.ServerCPUSource = srvCPU.Seconds(), srvSrc
		res.ServerCPUUsPerOp = perUnit(srvCPU, res.Ops+res.Errors)
		switch name {
		case "batch", "batch-upsert", "load", "range":
			res.ServerCPUUsPerEntity = perUnit(srvCPU, res.Entities)
		case "partition-scan", "table-scan":
			res.ServerCPUUsPerEntity = perUnit(srvCPU, res.Examined)
		}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms = ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999))
	res.MaxMs, res.MeanMs = ms(h.Max()), h.Mean()/1e6
	switch {
	case ctx.Err() != nil:
		res.StoppedBy = "interrupted"
	case stoppedByTime.Load():
		res.StoppedBy = "duration"
	case countBound[name] || setup:
		res.StoppedBy = "count"
	default:
		res.StoppedBy = "max-ops"
	}
	switch name {
	case "table-scan":
		res.Note = "examined = full scans × table size (client-side count)"
	case "partition-scan":
		res.Note = "examined ≈ scans × table size / partitions"
	case "batch", "batch-upsert", "load":
		res.Note = "entities = operations in successful changesets"
	}
	return res
}

// pick returns a random existing entity number.
func (r *Runner) pick(w *worker, n uint64) uint64 { return r.existingAt(w.rng.Uint64N(n)) }

func (r *Runner) keysOf(w *worker, e uint64) {
	w.pk = appendPK(w.pk[:0], r.ks.pkOf(e))
	w.rk = appendRK(w.rk[:0], r.ks.rowOf(e))
}

// opInsert inserts entity e; with existsOK, an entity already there
// (409) counts as inserted.
func (r *Runner) opInsert(ctx context.Context, w *worker, e uint64, existsOK bool) (opResult, error) {
	r.keysOf(w, e)
	w.body = appendEntityJSON(w.body[:0], w.pk, w.rk, e, r.cfg.EntitySize, w.rng, "")
	cl := &call{method: http.MethodPost, path: "/" + r.table, body: w.body, contentType: contentJSON, prefer: "return-no-content"}
	resp, err := r.c.do(ctx, cl, &w.buf)
	if err == nil && !(existsOK && resp.status == http.StatusConflict) {
		err = expect(cl, resp, http.StatusNoContent, http.StatusCreated)
	}
	if err != nil {
		return opResult{requests: 1}, err
	}
	r.tableSize.Add(1)
	return opResult{entities: 1, requests: 1}, nil
}

func (r *Runner) opGet(ctx context.Context, w *worker, e uint64) (opResult, error) {
	r.keysOf(w, e)
	w.path = appendEntityPath(w.path[:0], r.table, w.pk, w.rk)
	cl := &call{method: http.MethodGet, path: string(w.path)}
	resp, err := r.c.do(ctx, cl, &w.buf)
	if err == nil {
		err = expect(cl, resp, http.StatusOK)
	}
	if err != nil {
		return opResult{requests: 1}, err
	}
	return opResult{entities: 1, requests: 1}, nil
}

// opWrite is upsert (PUT, no If-Match: insert or replace) or merge (PATCH
// with If-Match: *: the entity must exist).
func (r *Runner) opWrite(ctx context.Context, w *worker, e uint64, merge bool) (opResult, error) {
	r.keysOf(w, e)
	w.path = appendEntityPath(w.path[:0], r.table, w.pk, w.rk)
	extra := `"Upserted":true`
	if merge {
		extra = `"Merged":true`
	}
	w.body = appendEntityJSON(w.body[:0], w.pk, w.rk, e, r.cfg.EntitySize, w.rng, extra)
	cl := &call{method: http.MethodPut, path: string(w.path), body: w.body, contentType: contentJSON}
	if merge {
		cl.method, cl.ifMatch = http.MethodPatch, "*"
	}
	resp, err := r.c.do(ctx, cl, &w.buf)
	if err == nil {
		err = expect(cl, resp, http.StatusNoContent)
	}
	if err != nil {
		return opResult{requests: 1}, err
	}
	return opResult{entities: 1, requests: 1}, nil
}

func (r *Runner) opDelete(ctx context.Context, w *worker, e uint64) (opResult, error) {
	r.keysOf(w, e)
	w.path = appendEntityPath(w.path[:0], r.table, w.pk, w.rk)
	cl := &call{method: http.MethodDelete, path: string(w.path), ifMatch: "*"}
	resp, err := r.c.do(ctx, cl, &w.buf)
	if err == nil {
		err = expect(cl, resp, http.StatusNoContent)
	}
	if err != nil {
		return opResult{requests: 1}, err
	}
	r.tableSize.Add(-1)
	return opResult{entities: 1, requests: 1}, nil
}

// opBatch inserts size new entities into one partition in one changeset,
// or, when upsert, writes them by insert-or-replace (PUT without If-Match,
// what partita copy and import send).
func (r *Runner) opBatch(ctx context.Context, w *worker, b, size uint64, upsert bool) (opResult, error) {
	pk := appendPK(nil, b%uint64(r.cfg.Partitions))
	if cap(w.reqs) < int(size) {
		w.reqs = make([]changeset.Request, size)
	}
	reqs := w.reqs[:size]
	target := r.tableURL()
	for k := range reqs {
		seq := b*uint64(r.cfg.BatchSize) + uint64(k)
		w.rk = append(w.rk[:0], 'b')
		w.rk = append(w.rk, r.runTag...)
		w.rk = itoaPad(w.rk, seq, rkWidth)
		reqs[k] = r.batchInsert(reqs[k], target, pk, w.rk, seq, w.rng)
		if upsert {
			w.path = appendEntityPath(w.path[:0], r.table, pk, w.rk)
			reqs[k].Method = http.MethodPut
			reqs[k].Target = r.c.Base() + string(w.path)
		}
	}
	return r.sendBatch(ctx, w, reqs)
}

// opLoad inserts rows [lo, hi) of partition p (entity numbers p + P*row)
// in one changeset: the bulk loader of Load (growth runs).
func (r *Runner) opLoad(ctx context.Context, w *worker, p, lo, hi uint64) (opResult, error) {
	P := uint64(r.cfg.Partitions)
	pk := appendPK(nil, p)
	n := hi - lo
	if cap(w.reqs) < int(n) {
		w.reqs = make([]changeset.Request, n)
	}
	reqs := w.reqs[:n]
	target := r.tableURL()
	for k := range reqs {
		e := p + P*(lo+uint64(k))
		w.rk = appendRK(w.rk[:0], lo+uint64(k))
		reqs[k] = r.batchInsert(reqs[k], target, pk, w.rk, e, w.rng)
	}
	return r.sendBatch(ctx, w, reqs)
}

// tableURL is the URL of the table the workloads use (a changeset's
// inserts target it).
func (r *Runner) tableURL() string { return r.c.Base() + "/" + r.table }

// batchInsert fills req (reusing its buffers) with an insert of entity seq
// into target, the table's URL (built once per changeset).
func (r *Runner) batchInsert(req changeset.Request, target string, pk, rk []byte, seq uint64, rng *mrand.Rand) changeset.Request {
	body := appendEntityJSON(req.Body[:0], pk, rk, seq, r.cfg.EntitySize, rng, "")
	h := req.Header
	if h == nil {
		h = http.Header{
			"Accept":             {acceptMinimal},
			"Content-Type":       {contentJSON},
			"Prefer":             {"return-no-content"},
			"Dataserviceversion": {"3.0"},
			"Content-Length":     {""},
		}
	}
	h["Content-Length"][0] = strconv.Itoa(len(body))
	return changeset.Request{Method: http.MethodPost, Target: target, Header: h, Body: body}
}

// sendBatch posts reqs as one changeset and checks every sub-response.
func (r *Runner) sendBatch(ctx context.Context, w *worker, reqs []changeset.Request) (opResult, error) {
	bb, cb := "batch_"+newUUID(w.rng), "changeset_"+newUUID(w.rng)
	w.body = changeset.AppendRequest(w.body[:0], bb, cb, &changeset.Batch{Requests: reqs, Changeset: true})
	cl := &call{method: http.MethodPost, path: "/$batch", body: w.body, contentType: changeset.ContentType(bb)}
	resp, err := r.c.do(ctx, cl, &w.buf)
	if err == nil {
		err = expect(cl, resp, http.StatusAccepted)
	}
	if err == nil {
		if f := batchFailure(resp.body); f != "" {
			err = fmt.Errorf("POST /$batch: 202 with a failed changeset: %s", f)
		}
	}
	if err != nil {
		return opResult{requests: 1}, err
	}
	r.tableSize.Add(int64(len(reqs)))
	return opResult{entities: int64(len(reqs)), requests: 1}, nil
}

func newUUID(rng *mrand.Rand) string {
	var b [16]byte
	x, y := rng.Uint64(), rng.Uint64()
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(x>>(8*i)), byte(y>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// maxPages bounds the pages of one query (a loop must end even if a server
// keeps sending continuation tokens).
const maxPages = 1_000_000

// query runs a Query Entities with filter, following continuation tokens,
// and returns the entities returned and the pages read.
func (r *Runner) query(ctx context.Context, w *worker, filter string) (int64, int64, error) {
	q := "%24filter=" + queryEscape(filter)
	var ents, pages int64
	rawQuery := q
	for pages < maxPages {
		cl := &call{method: http.MethodGet, path: "/" + r.table + "()", rawQuery: rawQuery}
		resp, err := r.c.do(ctx, cl, &w.buf)
		pages++
		if err == nil {
			err = expect(cl, resp, http.StatusOK)
		}
		if err != nil {
			return ents, pages, err
		}
		n := countEntities(resp.body)
		if n < 0 {
			return ents, pages, fmt.Errorf("GET %s: 200 without a value array: %.200s", cl.path, resp.body)
		}
		ents += int64(n)
		npk := resp.header.Get("x-ms-continuation-NextPartitionKey")
		nrk := resp.header.Get("x-ms-continuation-NextRowKey")
		if npk == "" && nrk == "" {
			return ents, pages, nil
		}
		rawQuery = q + "&NextPartitionKey=" + queryEscape(npk)
		if nrk != "" {
			rawQuery += "&NextRowKey=" + queryEscape(nrk)
		}
	}
	return ents, pages, fmt.Errorf("query %q: more than %d pages", filter, maxPages)
}

// opRange reads about --range-size consecutive rows of a random partition.
func (r *Runner) opRange(ctx context.Context, w *worker, n uint64) (opResult, error) {
	p := w.rng.Uint64N(uint64(r.cfg.Partitions))
	rows := (n + uint64(r.cfg.Partitions) - 1) / uint64(r.cfg.Partitions)
	span := uint64(r.cfg.RangeSize)
	var lo uint64
	if rows > span {
		lo = w.rng.Uint64N(rows - span + 1)
	}
	f := "PartitionKey eq '" + pkString(p) + "' and RowKey ge '" + rkString(lo) + "' and RowKey lt '" + rkString(lo+span) + "'"
	ents, pages, err := r.query(ctx, w, f)
	return opResult{entities: ents, requests: pages}, err
}

// opPartitionScan filters one partition on a non-key property (10% match).
func (r *Runner) opPartitionScan(ctx context.Context, w *worker) (opResult, error) {
	p := w.rng.Uint64N(uint64(r.cfg.Partitions))
	size := r.tableSize.Load() / int64(r.cfg.Partitions)
	ents, pages, err := r.query(ctx, w, "PartitionKey eq '"+pkString(p)+"' and Bucket lt 100")
	return opResult{entities: ents, requests: pages, examined: size}, err
}

// opTableScan filters the whole table on a non-key property (0.1% match).
func (r *Runner) opTableScan(ctx context.Context, w *worker) (opResult, error) {
	size := r.tableSize.Load()
	ents, pages, err := r.query(ctx, w, "Bucket eq 7")
	return opResult{entities: ents, requests: pages, examined: size}, err
}

// dropTable deletes the table as one timed operation.
func (r *Runner) dropTable(ctx context.Context) Result {
	res := Result{Workload: "drop-table", StoppedBy: "count"}
	t0 := time.Now()
	err := r.c.DeleteTable(ctx, r.table)
	d := time.Since(t0)
	res.Requests = 1
	res.Seconds = d.Seconds()
	if err != nil {
		res.Errors, res.FirstError = 1, err.Error()
		return res
	}
	r.dropped = true
	res.Ops = 1
	res.Entities = r.tableSize.Load()
	res.OpsPerSec = 1 / res.Seconds
	res.EntitiesPerSec = float64(res.Entities) / res.Seconds
	ms := float64(d) / 1e6
	res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms, res.MaxMs, res.MeanMs = ms, ms, ms, ms, ms, ms
	res.Note = "entities = table size dropped; the server may purge them in the background"
	r.preloaded, r.inserted = 0, nil
	r.tableSize.Store(0)
	return res
}
