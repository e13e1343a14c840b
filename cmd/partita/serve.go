package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/console"
	"github.com/partita/partita/internal/httpapi"
	"github.com/partita/partita/internal/kv"
	"github.com/partita/partita/internal/kv/memkv"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/kv/pgkv"
	"github.com/partita/partita/internal/tablestore"
)

// DevAccounts is the well-known development account (also Azurite's).
const DevAccounts = "devstoreaccount1:Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// defaultGCPercent is the GC target of `serve` when neither --gc-percent
// nor GOGC says otherwise. Side by side (docs/PERFORMANCE.md, "What each
// change bought"): 200% instead of Go's 100% bought ~8% $batch throughput;
// 400% bought ~9% more sustained $batch and 7-14% more point gets for
// ~30 MiB more peak RSS; 800% bought nothing more and cost another
// 25-80 MiB. The soft memory limit (--go-mem-limit-mb) bounds the heap
// whatever the target.
const defaultGCPercent = 400

// Config is the server configuration, from flags and PARTITA_* variables.
type Config struct {
	Addr     string
	Data     string
	Store    string
	Accounts string
	Cert     string
	Key      string
	LogLevel string
	// ScanBudget is the time one query page may examine entities.
	ScanBudget time.Duration
	// MaxRequestTimeout is the longest server timeout: the `timeout`
	// query parameter is reduced to it, and with PostgreSQL it is the
	// deadline of a request that gives none.
	MaxRequestTimeout time.Duration
	// PprofAddr, when set, serves net/http/pprof on a separate listener.
	PprofAddr string
	// CacheMB is Pebble's block cache in MiB (0 or less: the engine's default).
	CacheMB int64
	// RowCacheMB bounds the cache of recently read entities (0: none).
	RowCacheMB int64
	// MinFreeMB is the free disk space (MiB) below which Pebble writes get
	// 503 ServerBusy.
	MinFreeMB int64
	// WALDir, when set, holds Pebble's write-ahead log instead of Data.
	WALDir string
	// ReadHeaderTimeout and IdleTimeout bound slow and idle clients.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxInFlight and QueueWait bound concurrent requests (overload → 503).
	MaxInFlight int
	QueueWait   time.Duration
	// MaxConnections bounds open client connections (fitted under the
	// open-file limit, beside the store's files).
	MaxConnections int
	// MaxBodyMB, ClientShare, BodyTimeout and BodyMinRateKB bound request
	// bodies: bytes in memory at once, one client's share of them and of
	// the slots, and how slowly a body may arrive.
	MaxBodyMB     int64
	ClientShare   int
	BodyTimeout   time.Duration
	BodyMinRateKB int64
	// GCPercent and GoMemLimitMB tune Go's garbage collector (GOGC and
	// GOMEMLIMIT give their defaults); negative leaves Go's own setting.
	GCPercent    int64
	GoMemLimitMB int64
	// MaxSyncDuration is how long the disk may leave one operation of the
	// embedded store unanswered before partita stops (0: never).
	MaxSyncDuration time.Duration
	// ShutdownTimeout bounds how long in-flight requests may take to
	// finish after SIGINT or SIGTERM; the process exits at most
	// shutdownGrace later whatever is left.
	ShutdownTimeout time.Duration
	// AdminAddr serves the admin handler (health, readiness, online
	// backup) when not empty; BackupRoot, when set, is the only place
	// backups may be written.
	AdminAddr, BackupRoot string
	// Metrics and Advisor turn the Prometheus metrics and the key-design
	// advisor on (the default) or off.
	Metrics, Advisor bool
	// StoreWait is how long a PostgreSQL store that cannot be reached at
	// start is tried again before serve gives up (0: not at all).
	StoreWait time.Duration
}

// shutdownGrace is how long closing the store may take after the
// in-flight requests (--shutdown-timeout): then the process exits without
// waiting any more. A store that is not closed loses nothing
// acknowledged (the crash test kills it at random).
const shutdownGrace = 4 * time.Second

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envGC is the default of a GC flag whose Go variable is name: def when
// the variable is unset, its value when it is a plain integer, and -1
// ("leave Go's own setting", which Go took from the variable at start-up)
// for anything else, such as GOGC=off or GOMEMLIMIT=1GiB.
func envGC(name string, def int64) int64 {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if name == "GOMEMLIMIT" {
			return n >> 20 // bytes there, MiB here
		}
		return n
	}
	return -1
}

// defaultGoMemLimitMB is the soft limit when neither the flag nor
// GOMEMLIMIT gives one. With cgo, Pebble allocates its block cache and
// memtables outside the Go heap, so 160 MiB bounds the rest; without cgo
// they are on the Go heap and such a limit would make the GC run
// constantly, so there is none.
func defaultGoMemLimitMB() int64 {
	if pebbleOffHeap {
		return 160
	}
	return 0
}

// flagDef is one row of the serve flags table: the flag, the environment
// variable that gives its default (shown in --help and README.md), where
// the value goes (*string, *int, *int64, *time.Duration or *bool) and its
// default.
type flagDef struct {
	name, env string
	ptr       any
	def       any
	usage     string
}

// serveFlags is every flag of `partita serve`, in --help's order. README.md's
// flag table lists the same flags (TestServeFlagsInREADME).
func serveFlags(c *Config) []flagDef {
	return []flagDef{
		{"addr", "PARTITA_ADDR", &c.Addr, envOr("PARTITA_ADDR", "127.0.0.1:10002"), "listen address"},
		{"data", "PARTITA_DATA", &c.Data, envOr("PARTITA_DATA", "./partita-data"), "data directory for the embedded store"},
		{"store", "PARTITA_STORE", &c.Store, envOr("PARTITA_STORE", "pebble"), "storage engine: pebble (embedded, durable; default), mem (in memory, lost on exit), or a postgres:// URL (PostgreSQL, shared by any number of partita front ends)"},
		{"store-wait", "", &c.StoreWait, 60 * time.Second, "with --store postgres://: how long to keep trying to reach the database at start (one not up yet, starting up, or out of connections), with pauses from 250ms doubling to 5s and a warning at most every 5s, before exiting with status 2; 0 tries once. A refusal that waiting does not cure (a wrong password, a database that does not exist, a bad URL, a schema newer than this partita) exits at once"},
		{"accounts", "PARTITA_ACCOUNTS, else AZURITE_ACCOUNTS", &c.Accounts, envOr("PARTITA_ACCOUNTS", envOr("AZURITE_ACCOUNTS", DevAccounts)), `accounts and base64 keys, "name:key1[:key2];name2:key1"`},
		{"cert", "PARTITA_CERT", &c.Cert, envOr("PARTITA_CERT", ""), "TLS certificate file (PEM); serve HTTPS when set with --key"},
		{"key", "PARTITA_KEY", &c.Key, envOr("PARTITA_KEY", ""), "TLS private key file (PEM)"},
		{"log-level", "PARTITA_LOG_LEVEL", &c.LogLevel, envOr("PARTITA_LOG_LEVEL", "info"), "log level: debug, info, warn, error"},
		{"scan-budget", "", &c.ScanBudget, 5 * time.Second, "time one query page may examine entities before it returns a continuation"},
		{"max-request-timeout", "", &c.MaxRequestTimeout, httpapi.DefaultMaxTimeout, "the longest server timeout (the service's is 30s): a larger timeout= query parameter is reduced to it, and with --store postgres:// it is also the deadline of a request that gives none; a store call still running at the deadline is abandoned and the request gets 500 OperationTimedOut"},
		{"max-inflight", "", &c.MaxInFlight, 256, "requests served at once; more wait up to --queue-wait, then get 503 ServerBusy"},
		{"max-connections", "", &c.MaxConnections, 10000, "client connections open at once; at the cap a new client takes the place of the connections that have sent nothing for 2s (all of them), or else of the connection idle the longest, or else of the oldest one that has sent part of a request for 2s, else waits in the kernel's accept queue. Lowered to fit the process's open-file limit (ulimit -n) less 2,048 files kept for the store (or to half the limit, when that is more), so that connections can never take the files the store needs; 0: as many as the limit allows"},
		{"queue-wait", "", &c.QueueWait, time.Second, "how long a request waits for a free slot before 503 ServerBusy"},
		{"max-body-mb", "", &c.MaxBodyMB, int64(64), "request bodies held in memory at once (MiB); a request reserves its Content-Length (or its operation's maximum, 4 MiB for $batch, when chunked) before its body is read, and one that finds no room within --queue-wait gets 503 ServerBusy; a query page past its first 256 KiB takes room without waiting and ends early (with a continuation) when there is none"},
		{"client-share", "", &c.ClientShare, 50, "percentage of --max-inflight, of --max-body-mb, of the advisor's 256 tracked tables and, with --store postgres://, of the store calls in flight (at most the pool's size) that one account may hold when more than one is configured, and that one shared access signature may hold of its account's part; the rest stays for the others"},
		{"body-timeout", "", &c.BodyTimeout, 10 * time.Second, "a request body must arrive within this time plus its length at --body-min-rate-kb, or the request gets 400 InvalidInput and its connection is closed"},
		{"body-min-rate-kb", "", &c.BodyMinRateKB, int64(64), "the slowest rate (KiB/s) a request body is waited for, on top of --body-timeout"},
		{"read-header-timeout", "", &c.ReadHeaderTimeout, 30 * time.Second, "a client must send a request's headers within this time, or its connection is closed"},
		{"idle-timeout", "", &c.IdleTimeout, 2 * time.Minute, "an idle keep-alive connection is closed after this time"},
		{"cache-mb", "", &c.CacheMB, int64(64), "with --store pebble: Pebble's block cache (MiB, beside its two 32 MiB memtables); more keeps more of a large table's blocks in memory (resident memory grows by as much); 0 or less: 64"},
		{"row-cache-mb", "", &c.RowCacheMB, int64(32), "keep recently read entities (MiB, 0 disables), so point reads of hot entities skip the engine; not with a shared --store, whose other front ends' writes it would not see"},
		{"wal-dir", "PARTITA_WAL_DIR", &c.WALDir, envOr("PARTITA_WAL_DIR", ""), "with --store pebble: keep the write-ahead log in this directory, e.g. on a faster device of its own (every durable write waits for its sync); default beside the data. The store remembers the path and will not open with another one; the directory is locked while in use and records its store, and a second store is refused it"},
		{"min-free-mb", "", &c.MinFreeMB, int64(128), "with --store pebble: below this much free disk space (MiB), or under 1,024 free files (inodes; an eighth of a small file system's), writes get 503 ServerBusy until room returns; 0 disables"},
		{"max-sync-duration", "", &c.MaxSyncDuration, 20 * time.Second, "with --store pebble: when the disk leaves one write, sync or file operation of the store unanswered this long (a frozen file system, a lost volume), partita closes its listeners and connections and exits with status 1 instead of leaving every write waiting; operations slower than a quarter of it (at most 5s) are logged; 0 never gives up"},
		{"shutdown-timeout", "", &c.ShutdownTimeout, 10 * time.Second, "after SIGINT or SIGTERM, in-flight requests get this long to finish; the process exits at most 4s later in any case"},
		{"pprof", "PARTITA_PPROF", &c.PprofAddr, envOr("PARTITA_PPROF", ""), "serve Go's pprof profiles on this address (e.g. 127.0.0.1:6060); off by default"},
		{"gc-percent", "GOGC", &c.GCPercent, envGC("GOGC", defaultGCPercent), "Go's GC target (default from GOGC when set): the heap may grow this many percent over live data between collections; higher costs memory and saves CPU on writes; negative leaves Go's own setting"},
		{"go-mem-limit-mb", "GOMEMLIMIT", &c.GoMemLimitMB, envGC("GOMEMLIMIT", defaultGoMemLimitMB()), "soft limit (MiB) on the Go runtime's memory (default from GOMEMLIMIT when set): past it the GC runs more often, whatever --gc-percent says; with cgo, Pebble's 64 MiB block cache and 32 MiB memtables are outside it, and without cgo the default is 0; 0 or negative leaves Go's own setting"},
		{"admin-addr", "PARTITA_ADMIN_ADDR", &c.AdminAddr, envOr("PARTITA_ADMIN_ADDR", "127.0.0.1:10012"), "admin listener: /healthz, /readyz and POST /backup (partita backup); unauthenticated, so keep it on loopback; empty disables. Requests a web page could make are refused: writes with Origin or a cross-site Sec-Fetch-Site, and on loopback a Host that is not an IP address or localhost"},
		{"backup-root", "PARTITA_BACKUP_ROOT", &c.BackupRoot, envOr("PARTITA_BACKUP_ROOT", ""), "when set, online backups may be written only under this directory"},
		{"metrics", "", &c.Metrics, true, "keep Prometheus metrics (served at /metrics on the admin listener); --metrics=false turns them off"},
		{"advisor", "", &c.Advisor, true, "watch the traffic for key-design anti-patterns (served at /advisor and /heat on the admin listener, and to each signed-in account for its own tables as comp=partita-advisor and comp=partita-heat, which the console shows); --advisor=false turns it off"},
	}
}

// register adds the table's flags to fs.
func register(fs *flag.FlagSet, defs []flagDef) {
	for _, d := range defs {
		usage := d.usage
		if d.env != "" {
			usage += " (" + d.env + ")"
		}
		switch p := d.ptr.(type) {
		case *string:
			fs.StringVar(p, d.name, d.def.(string), usage)
		case *int:
			fs.IntVar(p, d.name, d.def.(int), usage)
		case *int64:
			fs.Int64Var(p, d.name, d.def.(int64), usage)
		case *time.Duration:
			fs.DurationVar(p, d.name, d.def.(time.Duration), usage)
		case *bool:
			fs.BoolVar(p, d.name, d.def.(bool), usage)
		default:
			panic(fmt.Sprintf("serve flag --%s: unsupported type %T", d.name, d.ptr))
		}
	}
}

const serveUsage = `Usage: partita serve [flags]

Serve the Azure Table storage REST API. Defaults: 127.0.0.1:10002, data in ./partita-data,
account devstoreaccount1 with the well-known development key.

Flags:
`

func parseConfig(args []string, stdout, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("partita serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	register(fs, serveFlags(&c))
	if err := parseFlags(fs, serveUsage, args, stdout); err != nil {
		return c, err
	}
	if (c.Cert == "") != (c.Key == "") {
		return c, errors.New("--cert and --key go together")
	}
	if c.ClientShare < 1 || c.ClientShare > 100 {
		return c, fmt.Errorf("--client-share %d: want a percentage from 1 to 100", c.ClientShare)
	}
	if c.MaxRequestTimeout <= 0 {
		return c, errors.New("--max-request-timeout must be positive")
	}
	if c.MaxBodyMB < 1 || c.BodyTimeout <= 0 || c.BodyMinRateKB < 1 {
		return c, errors.New("--max-body-mb, --body-timeout and --body-min-rate-kb must be positive")
	}
	// Values that the server would otherwise take for "unset" and replace
	// by a default without a word, or that overflow once scaled to bytes.
	for _, v := range []struct {
		name string
		bad  bool
		want string
	}{
		{"max-inflight", c.MaxInFlight < 1, "at least 1"},
		{"max-connections", c.MaxConnections < 0, "0 (as many as the open-file limit allows) or more"},
		{"queue-wait", c.QueueWait <= 0, "positive"},
		{"scan-budget", c.ScanBudget <= 0, "positive"},
		{"read-header-timeout", c.ReadHeaderTimeout <= 0, "positive"},
		{"idle-timeout", c.IdleTimeout <= 0, "positive"},
		{"shutdown-timeout", c.ShutdownTimeout < 0, "0 or more"},
		{"store-wait", c.StoreWait < 0, "0 (try once) or more"},
		{"max-sync-duration", c.MaxSyncDuration < 0, "0 (never give up) or more"},
		{"min-free-mb", c.MinFreeMB < 0, "0 (no guard) or more"},
		{"row-cache-mb", c.RowCacheMB < 0, "0 (off) or more"},
		{"max-body-mb", c.MaxBodyMB > 1<<20, "at most 1048576 (1 TiB)"},
		{"cache-mb", c.CacheMB > 1<<30, "at most 1073741824"},
		{"body-min-rate-kb", c.BodyMinRateKB > 1<<30, "at most 1073741824"},
	} {
		if v.bad {
			return c, fmt.Errorf("--%s: want %s", v.name, v.want)
		}
	}
	return c, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseConfig(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// A batch of 100 1 KiB inserts allocates ~1.4 MB of short-lived
	// buffers; see defaultGCPercent for what the GC target buys.
	if c.GCPercent >= 0 {
		debug.SetGCPercent(int(c.GCPercent))
	}
	if c.GoMemLimitMB > 0 {
		debug.SetMemoryLimit(c.GoMemLimitMB << 20)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	keys, err := auth.ParseAccounts(c.Accounts)
	if err != nil {
		return err
	}
	fx := &fatalExit{log: log}
	// listenAndServe arms the shutdown's hard deadline when SIGINT or
	// SIGTERM comes; it is stopped here, deferred before the closes below
	// and so run after them: a store close that hangs (waiting for a
	// backup onto a frozen target) is under the deadline too.
	var hard *time.Timer
	defer func() {
		if hard != nil {
			hard.Stop()
		}
	}()
	db, shared, err := openEngine(ctx, c, log, fx)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := tablestore.Open(ctx, db, tablestore.Options{Logger: log, ScanTimeBudget: c.ScanBudget, Shared: shared, RowCacheBytes: c.RowCacheMB << 20})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := startPprof(c.PprofAddr, log, fx); err != nil {
		return err
	}
	obs := newObservability(c, keys, db, store)
	stopAdmin, err := startAdmin(c, db, store, obs, log, stdout, fx)
	if err != nil {
		return err
	}
	defer stopAdmin()
	// Each store call on PostgreSQL holds a pool connection while it
	// runs: bound them to the pool, by account and SAS as the request
	// slots are, so that one client's slow calls cannot take every
	// connection.
	storeCalls := 0
	if p, ok := db.(interface{ MaxConns() int }); ok {
		storeCalls = p.MaxConns()
	}
	handler := httpapi.New(httpapi.Options{Store: store, Accounts: keys, Logger: log, MaxInFlight: c.MaxInFlight, QueueWait: c.QueueWait, MaxBodyBytes: c.MaxBodyMB << 20, ClientShare: c.ClientShare, BodyTimeout: c.BodyTimeout, BodyMinRate: c.BodyMinRateKB << 10, Console: console.Handler(), Metrics: obs.metrics, Advisor: obs.advisor,
		MaxTimeout: c.MaxRequestTimeout, DeadlineByDefault: shared, StoreCalls: storeCalls})
	return listenAndServe(ctx, c, handler, keys, log, stdout, fx, &hard)
}

// openEngine opens the storage engine --store names; shared is true for
// PostgreSQL, which other front ends may write to as well.
func openEngine(ctx context.Context, c Config, log *slog.Logger, fx *fatalExit) (db kv.DB, shared bool, err error) {
	if c.WALDir != "" && c.Store != "pebble" {
		return nil, false, fmt.Errorf("--wal-dir %q: only the embedded engine (--store pebble) has a write-ahead log of partita's", c.WALDir)
	}
	switch c.Store {
	case "pebble":
		if err := os.MkdirAll(c.Data, 0o755); err != nil {
			return nil, false, err
		}
		minFree := c.MinFreeMB << 20
		if minFree == 0 {
			minFree = -1
		}
		walDir := c.WALDir
		if walDir != "" {
			// Pebble records the path as given and checks it at
			// every open: an absolute one names the same directory
			// wherever the server is started from.
			if walDir, err = filepath.Abs(walDir); err != nil {
				return nil, false, err
			}
		}
		log.Debug("C allocator", "arenas_capped", mallocArenasCapped())
		db, err := openPebble(ctx, c.Data, &pebblekv.Options{MinFreeBytes: minFree, CacheSize: c.CacheMB << 20, Logger: log, WALDir: walDir, MaxOpenFiles: storeOpenFiles(openFileLimit()), MaxSyncDuration: c.MaxSyncDuration, OnFatal: fx.exit})
		if err != nil {
			return nil, false, err
		}
		return db, false, nil
	case "mem":
		return memkv.New(), false, nil
	}
	if engineName(c.Store) != "postgres" {
		return nil, false, fmt.Errorf("--store %q: want pebble, mem or a postgres:// URL", c.Store)
	}
	pg, err := openPostgres(ctx, c.Store, c.StoreWait, log)
	if err != nil {
		return nil, false, err
	}
	return pg, true, nil
}

// Pauses between attempts to reach the database at start, and between
// the warnings that say so.
const (
	storeRetryFirst = 250 * time.Millisecond
	storeRetryMax   = 5 * time.Second
	storeWaitLogged = 5 * time.Second
)

// openPostgres opens the PostgreSQL store, trying again for up to wait
// while the database cannot be reached (kv.ErrUnavailable: refused or
// unanswered connections, "the database system is starting up", too many
// connections), as when the database and partita start together. Any
// other failure (a wrong password, a missing database, a bad DSN, a newer
// schema) is returned at once: waiting would not cure it. When ctx ends
// (SIGINT or SIGTERM) it returns at once, without waiting for the pause or
// the attempt in progress.
func openPostgres(ctx context.Context, dsn string, wait time.Duration, log *slog.Logger) (*pgkv.DB, error) {
	start := time.Now()
	deadline := start.Add(wait)
	pause := storeRetryFirst
	var logged time.Time
	var prev error // the previous attempt's
	for {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			// An attempt that hangs (a host that does not answer) ends
			// with the wait.
			actx, cancel = context.WithDeadline(ctx, deadline)
		}
		db, err := pgkv.Open(actx, dsn, nil)
		cut := actx.Err() != nil // the end of the wait (or a signal) stopped the attempt
		cancel()
		if err == nil {
			if !logged.IsZero() {
				log.Info("database reachable; store opened", "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return db, nil
		}
		if ctx.Err() != nil {
			return nil, errors.New("interrupted while waiting for the database (opening the store)")
		}
		if !errors.Is(err, kv.ErrUnavailable) && !cut {
			return nil, err // waiting would not cure it
		}
		if wait == 0 {
			return nil, err
		}
		if cut || !time.Now().Before(deadline) {
			if cut && prev != nil {
				err = prev // the last attempt was cut short: say why the others failed
			}
			return nil, fmt.Errorf("the database was not reachable within --store-wait %s: %w", wait, err)
		}
		prev = err
		left := time.Until(deadline)
		if now := time.Now(); logged.IsZero() || now.Sub(logged) >= storeWaitLogged {
			log.Warn("database not reachable yet; trying again until --store-wait runs out", "err", err,
				"waited", now.Sub(start).Round(time.Millisecond).String(), "gives_up_in", left.Round(time.Second).String())
			logged = now
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, errors.New("interrupted while waiting for the database (opening the store)")
		}
		pause = min(2*pause, storeRetryMax)
	}
}

// startPprof serves net/http/pprof on addr, when it is set.
func startPprof(addr string, log *slog.Logger, fx *fatalExit) error {
	if addr == "" {
		return nil
	}
	pl, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	fx.onFatal(func() { pl.Close() })
	srv := &http.Server{Handler: pprofHandler(pl), ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(log), ConnState: connState}
	go srv.Serve(newCapListener(pl, adminConnections))
	log.Info("pprof listening", "addr", pl.Addr().String())
	return nil
}

// pprofHandler serves net/http/pprof on ln to the machine's operators
// (operatorOnly, noCrossSiteReads).
func pprofHandler(ln net.Listener) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return operatorOnly(noCrossSiteReads(mux), ln)
}

// listenAndServe serves handler on --addr until ctx ends (SIGINT or
// SIGTERM), then shuts down within --shutdown-timeout plus shutdownGrace.
//
// The deadline's timer is left in *hard, running: the caller stops it once
// the store is closed.
func listenAndServe(ctx context.Context, c Config, handler http.Handler, keys auth.Keyring, log *slog.Logger, stdout io.Writer, fx *fatalExit, hard **time.Timer) error {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	conns, fitted := fitConnections(c.MaxConnections, openFileLimit())
	if fitted {
		log.Warn("--max-connections lowered to fit the open-file limit beside the store's files; raise the limit (ulimit -n, LimitNOFILE=) to allow more", "max_connections", conns, "open_file_limit", openFileLimit(), "kept_for_store", int(openFileLimit())-conns)
	}
	ln = newCapListener(ln, conns)
	srv := &http.Server{
		Handler:           handler,
		ConnState:         connState, // for the listener's reclaim
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          httpErrorLog(log),
		Protocols:         http1Only(),
	}
	fx.onFatal(func() { srv.Close() })
	scheme := "http"
	if c.Cert != "" {
		scheme = "https"
	}
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	engine := engineName(c.Store)
	attrs := []any{"addr", ln.Addr().String(), "scheme", scheme, "store", engine}
	if c.Store == "pebble" {
		attrs = append(attrs, "data", c.Data) // the other engines keep nothing there
	}
	log.Info("partita listening", append(attrs, "accounts", strings.Join(names, ","))...)
	fmt.Fprintf(stdout, "partita: serving %s://%s (store %s)\n", scheme, ln.Addr(), engine)

	errc := make(chan error, 1)
	go func() {
		if c.Cert != "" {
			errc <- srv.ServeTLS(ln, c.Cert, c.Key)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		if fx.dying.Load() {
			// The listener closed for a fatal store error: fatalExit
			// ends the process with its status, not serve's return.
			select {}
		}
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	// Whatever hangs (a request, a store that cannot close), the process
	// ends: a supervisor that sent SIGTERM expects it to.
	*hard = time.AfterFunc(c.ShutdownTimeout+shutdownGrace, func() {
		log.Error("shutdown did not finish in time; exiting without closing the store (every acknowledged write is already durable: a restart finds it)", "limit", (c.ShutdownTimeout + shutdownGrace).String())
		os.Exit(1)
	})
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	return nil
}

// openPebble opens the embedded store, giving up when ctx ends (SIGINT or
// SIGTERM): replaying a long write-ahead log can take a while, and a store
// left half-opened loses nothing acknowledged.
func openPebble(ctx context.Context, dir string, o *pebblekv.Options) (*pebblekv.DB, error) {
	type result struct {
		db  *pebblekv.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := pebblekv.Open(dir, o)
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		return r.db, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("interrupted while opening the store in %s", dir)
	}
}

// http1Only is the protocols partita serves: HTTP/1.1 (and 1.0), over TLS
// too. Azure Storage's REST API does not support HTTP/2 (the service's
// "HTTP version support" page), so no SDK needs it, and Go's HTTP/2 server
// lets each connection park up to 1 MiB of request body in its flow-control
// window, across up to 250 streams, before a handler has authenticated
// anything or taken a slot: memory that --max-body-mb does not see.
func http1Only() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	return &p
}
