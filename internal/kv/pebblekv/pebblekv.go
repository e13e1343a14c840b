// Package pebblekv is the kv.DB engine on Pebble, partita's embedded
// default. Update commits one Pebble batch with Sync, so concurrent
// transactions are grouped into shared WAL syncs by Pebble's commit
// pipeline; this package holds no lock across a commit.
package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
)

// Options tune the engine. The zero value is usable.
type Options struct {
	// CacheSize is the block cache size in bytes (default 64 MiB).
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes (default 32 MiB).
	MemTableSize uint64
	// MaxOpenFiles bounds the sstable and blob files Pebble keeps open
	// (its file cache; 0: Pebble's default, 1,000).
	MaxOpenFiles int
	// FS replaces the file system, for tests (default the OS).
	FS vfs.FS
	// Logger receives Pebble's background errors (default slog.Default()).
	Logger *slog.Logger
	// NoSync skips the WAL sync on commit (tests and benchmarks only).
	NoSync bool
	// MinFreeBytes is the free disk space below which writes are refused
	// with kv.ErrUnavailable (clients see 503 ServerBusy and retry) instead
	// of running the disk full, which Pebble treats as fatal. Writes resume
	// by themselves when space returns. Default 128 MiB; negative disables.
	MinFreeBytes int64
	// WALDir puts the write-ahead log in this directory instead of dir: on
	// a device of its own, a faster sync there is what a durable write
	// waits for (docs/PERFORMANCE.md). Empty keeps the WAL beside the data.
	// Pebble records it in the store's OPTIONS file and refuses to open
	// the store with another WALDir, so that no unreplayed log is missed.
	// A relative WALDir is relative to the working directory, as in Pebble.
	WALDir string
	// ReadOnly opens an existing store for reading only (partita check):
	// Open fails when dir holds no store, writes fail, and nothing in dir
	// changes. The store's lock is still taken, so a store in use by a
	// running server is refused with ErrInUse.
	ReadOnly bool
	// MaxSyncDuration is how long one write, sync or file operation of
	// the store may go unanswered by the disk before the store gives up
	// with a fatal error (ErrDiskStalled); 0 never gives up. A stalled
	// disk otherwise leaves every write waiting for ever, each holding a
	// request slot, in a process that looks alive. Operations that take a
	// quarter of it (at most 5 s) are logged as slow.
	MaxSyncDuration time.Duration
	// OnFatal is called once when the store cannot go on: a write to the
	// write-ahead log or the MANIFEST failed (Pebble's commit pipeline is
	// then broken), the data directory lost its permissions, or, with the
	// free-space guard off, the disk is full, or an operation on the disk
	// stalled beyond MaxSyncDuration. Nothing acknowledged is lost:
	// a restart recovers it from the WAL. It must not return; the default
	// logs one line at error level and exits the process with status 1.
	// If it does return (tests), the goroutine that hit the error blocks
	// forever, so that Pebble never carries on with a broken pipeline.
	OnFatal func(err error)
	// SeparateValues keeps values of 256 bytes or more in blob files, as
	// every store written before 2026-11-27 did (valueSeparation). Off by
	// default; tests use it to make stores of that shape.
	SeparateValues bool
}

// ErrFatal wraps the error given to Options.OnFatal.
var ErrFatal = errors.New("pebblekv: fatal storage error")

// ErrDiskStalled is wrapped by the error given to Options.OnFatal when
// the disk has not answered one operation within Options.MaxSyncDuration.
var ErrDiskStalled = errors.New("the disk stopped answering")

// ErrDirReplaced is wrapped by the error given to Options.OnFatal when
// the data directory (or the WAL's) is removed, or replaced by another
// one, while the store is open.
var ErrDirReplaced = errors.New("the store's directory was removed or replaced while it was open")

// ErrFilesRemoved is wrapped by the error given to Options.OnFatal when
// the store's files are deleted from its directory while it is open (its
// LOCK file is gone or replaced): the writes it acknowledged since went to
// files no directory holds any more.
var ErrFilesRemoved = errors.New("the store's files were removed from its directory while it was open")

// ErrCorruption is wrapped by the error given to Options.OnFatal when a
// read finds a block of the store that fails its checksum.
var ErrCorruption = errors.New("on-disk corruption")

// ErrInUse is wrapped by Open when another process holds the store's lock.
var ErrInUse = errors.New("in use by another partita process")

// ErrNoStore is wrapped by a read-only Open of a directory that holds no
// store.
var ErrNoStore = errors.New("holds no partita store")

// ErrCannotRecover is wrapped by Open when replaying the write-ahead log
// fails for want of space or permission: Pebble would retry forever.
var ErrCannotRecover = errors.New("cannot recover the store")

// valueSeparation is the policy of stores opened with
// Options.SeparateValues (benchmarks vary it: export_test.go). Pebble v2.1
// lists value separation under Options.Experimental. Values of 256 bytes
// or more (most entities) would go to blob files that compactions
// reference instead of rewriting.
//
// partita kept values apart until 2026-11-27 and no longer does by
// default: measured at the server once the block cache held blocks
// (docs/PERFORMANCE.md, "Value separation, measured again"), a table scan
// after the bench's upserts and merges ran at 0.62-0.80 of the fresh rate
// with values inline against 0.49-0.56 with them apart (the newest values
// of a rewritten table lie one to a block in older blob files, a block
// cache lookup each), gets on a table larger than the cache cost 12-17%
// less CPU and the directory was 6-25% smaller; compactions now rewrite
// the values, so upserts cost up to ~10% more CPU over a minute of them
// and a bulk load of a million entities ~15% more. The figures that once
// justified separation were taken while the block cache held nothing, or
// by one scanning thread.
//
// Stores written before then hold blob files; Pebble reads them whatever
// the policy (the format pins what it can read: StoreVersion 1), and a
// compaction that rewrites an sstable referring to them writes the values
// it keeps inline (TestStoreWithBlobFilesReadAndCompacted).
var valueSeparation = pebble.ValueSeparationPolicy{
	Enabled:               true,
	MinimumSize:           256,
	MaxBlobReferenceDepth: 10,
	RewriteMinimumAge:     5 * time.Minute,
	TargetGarbageRatio:    0.2,
}

// blockSize is the target size of Pebble's blocks: sstable data and index
// blocks and, since Pebble sizes them alike (Options.MakeBlobWriterOptions),
// the value blocks of blob files (SeparateValues). It is Pebble's default,
// 4 KiB, three or four of partita's ~1 KiB entities; benchmarks vary it
// (export_test.go).
// 16 KiB blocks were measured at the server and not adopted
// (docs/PERFORMANCE.md, "Table scans after rewrites, side by side"): a
// table scan that misses the block cache pays per block read, so on a
// 100,000-entity table (larger than the cache) it cost 49% less CPU per
// entity fresh and 24% less after rewrites, but the after/fresh ratio the
// hardening issue sets fell from 0.66 to 0.42, and a point get that misses
// the cache, reading 16 KiB instead of 4, cost ~7% more.
var blockSize = 4 << 10

// ErrLowDiskSpace is wrapped (with kv.ErrUnavailable) by writes refused
// because the disk is nearly full.
var ErrLowDiskSpace = errors.New("pebblekv: free disk space (bytes, or files: inodes) below the minimum")

// DB is a kv.DB on Pebble.
type DB struct {
	db    *pebble.DB
	cache interface{ Unref() }
	wo    *pebble.WriteOptions

	closeMu sync.RWMutex // held shared by operations, exclusively by Close
	closed  bool

	dirs     []string      // the data directory, and the WAL's when apart
	dirInfos []os.FileInfo // dirs as opened (checkDirs); nil: not watched
	minFree  int64
	lowSpace atomic.Bool
	stop     chan struct{}
	watching sync.WaitGroup

	fatal   *fataler
	watcher *stallWatch // the disk-stall monitor of Options.MaxSyncDuration
	fs      vfs.FS      // Options.FS, unwrapped

	walClaim *walClaim  // the lock of Options.WALDir, when apart
	dirLocks []*os.File // lockDir's locks of dirs, held until Close
	// lockInfo is the data directory's LOCK file as opened (checkDirs):
	// gone or replaced, the store's files were deleted under it.
	lockInfo os.FileInfo

	readOnly  bool
	scanFlush scanFlusher
}

var _ kv.DB = (*DB)(nil)

// Open opens (creating if needed) a store in dir.
func Open(dir string, o *Options) (*DB, error) {
	if o == nil {
		o = &Options{}
	}
	cacheSize := o.CacheSize
	if cacheSize <= 0 {
		cacheSize = 64 << 20
	}
	fatal := &fataler{log: orDefault(o.Logger), onFatal: o.OnFatal, openFailed: make(chan error, 1)}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if o.ReadOnly {
		// Pebble would create the LOCK file before it finds no store.
		desc, err := pebble.Peek(dir, fs)
		if err != nil {
			return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
		}
		if !desc.Exists {
			return nil, fmt.Errorf("pebblekv: directory %s %w", dir, ErrNoStore)
		}
	}
	memTableSize := o.MemTableSize
	if memTableSize == 0 {
		memTableSize = 32 << 20
	}
	// Pebble charges the memtables it allocates against the block cache
	// (Cache.Reserve): the active one, the one it keeps for reuse after a
	// flush, and more while flushes queue up. A cache of exactly CacheSize
	// held nothing at all once two 32 MiB memtables had existed (64 MiB
	// reserved of 64), so every block read went to the file system. The
	// cache is CacheSize on top of two memtables: the blocks it keeps are
	// what --cache-mb says (TestBlockCacheHoldsBlocks).
	cache := pebble.NewCache(cacheSize + 2*int64(memTableSize))
	tables := &tableFiles{fs: fs, fatal: fatal}
	if o.MaxSyncDuration > 0 {
		tables.maxWait = o.MaxSyncDuration / 4
	}
	storeDirs := []string{filepath.Clean(dir)}
	if o.WALDir != "" {
		storeDirs = append(storeDirs, filepath.Clean(o.WALDir))
	}
	pfs, watcher := watchDisk(walFS{FS: fs, fatal: fatal, tables: tables, dirs: storeDirs}, o, fatal)
	opened := false
	defer func() {
		if !opened {
			watcher.Close()
		}
	}()
	po := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                memTableSize,
		MaxOpenFiles:                o.MaxOpenFiles,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       24,
		FS:                          pfs,
		Logger:                      pebbleLogger{log: orDefault(o.Logger), fatal: fatal},
		WALDir:                      o.WALDir,
		EventListener:               &pebble.EventListener{BackgroundError: fatal.background, DataCorruption: fatal.corruption},
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].BlockSize = blockSize
	}
	// The on-disk format is named, not FormatNewest: a newer Pebble must not
	// move the format of users' directories just because it was linked in.
	// Columnar blocks (Options.Experimental.EnableColumnarBlocks) are not
	// set here: EnsureDefaults turns them on, Pebble v2's default at this
	// format, and value separation needs them (stores written before
	// 2026-11-27, and SeparateValues). A read-only open (check)
	// leaves the format as the directory has it.
	if !o.ReadOnly {
		po.FormatMajorVersion = formatMajorVersion
	}
	po.ReadOnly = o.ReadOnly
	po.ErrorIfNotExists = o.ReadOnly
	if o.SeparateValues {
		vs := valueSeparation
		po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return vs }
	}
	po.EnsureDefaults()
	// The directories' own locks first, before Pebble or partita writes
	// anything in them (a second server that found no LOCK file wrote a
	// MANIFEST into a live store before it was refused).
	var dirLocks []*os.File
	abandoned := false // an Open left running (errAbandoned) may still use the directories
	defer func() {
		if !opened && !abandoned {
			for _, f := range dirLocks {
				f.Close()
			}
		}
	}()
	if o.FS == nil {
		for i, ld := range storeDirs {
			if o.ReadOnly {
				if _, err := os.Stat(ld); errors.Is(err, os.ErrNotExist) {
					continue // nothing to lock, nor to read (Pebble says so)
				}
			} else {
				if err := os.MkdirAll(ld, 0o755); err != nil {
					cache.Unref()
					return nil, fmt.Errorf("pebblekv: %w", err)
				}
			}
			what := "data directory"
			if i > 0 {
				what = "WAL directory"
			}
			f, ok, err := lockDir(ld, what)
			switch {
			case errors.Is(err, ErrInUse):
				cache.Unref()
				return nil, err
			case !ok:
				orDefault(o.Logger).Warn("the store's directory cannot be locked on this file system: only Pebble's LOCK file keeps a second server out", "dir", ld, "err", err)
			default:
				dirLocks = append(dirLocks, f)
			}
		}
	}
	if err := checkStoreVersion(po.FS, dir); err != nil {
		cache.Unref()
		return nil, err
	}
	if err := checkManifest(fs, dir); err != nil {
		cache.Unref()
		return nil, err
	}
	var claim *walClaim
	if o.WALDir != "" {
		c, err := claimWALDir(fs, dir, o.WALDir, o.ReadOnly)
		if err != nil {
			cache.Unref()
			return nil, err
		}
		claim = c
	}
	defer func() {
		if !opened && !abandoned {
			claim.release() // an abandoned Open may still use the directory
		}
	}()
	fatal.guardOff = o.MinFreeBytes < 0
	db, err := openPebble(dir, po, fatal)
	abandoned = errors.Is(err, errAbandoned)
	if !abandoned {
		// The DB holds its own reference. An Open left running may
		// still take one: the cache then stays, for a process that is
		// about to exit anyway.
		cache.Unref()
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("pebblekv: data directory %s is %w (%v)", dir, ErrInUse, err)
	}
	var walMoved pebble.ErrMissingWALRecoveryDir
	if errors.As(err, &walMoved) {
		// Pebble's own text is four lines of its options.
		was := "--wal-dir " + walMoved.Dir
		if filepath.Clean(walMoved.Dir) == filepath.Clean(dir) {
			was = "no --wal-dir: beside the data"
		}
		now := "--wal-dir " + o.WALDir
		if o.WALDir == "" {
			now = "no --wal-dir"
		}
		return nil, fmt.Errorf("pebblekv: open %s: the store's write-ahead log is in %s, where it was last served from (%s), not where this start says (%s): serve it as it was", dir, walMoved.Dir, was, now)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	if err := checkBlobFiles(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("pebblekv: open %s: %w; the store cannot be served as it is: restore the data directory from a backup", dir, err)
	}
	if !o.ReadOnly {
		if err := writeStoreVersion(po.FS, dir); err != nil {
			db.Close()
			return nil, err
		}
		if claim != nil {
			if err := claim.finish(fs, dir, o.WALDir); err != nil {
				db.Close()
				return nil, err
			}
		}
	}
	wo := pebble.Sync
	if o.NoSync {
		wo = pebble.NoSync
	}
	d := &DB{db: db, wo: wo, dirs: []string{dir}, minFree: o.MinFreeBytes, stop: make(chan struct{}), fatal: fatal, watcher: watcher, fs: fs, walClaim: claim, readOnly: o.ReadOnly}
	opened = true
	if o.WALDir != "" {
		d.dirs = append(d.dirs, o.WALDir)
	}
	if d.minFree == 0 {
		d.minFree = 128 << 20
	}
	if o.ReadOnly {
		d.minFree = -1
	}
	if d.minFree > 0 {
		d.checkSpace()
	}
	d.dirLocks = dirLocks
	if !o.ReadOnly && o.FS == nil {
		d.dirInfos = statDirs(d.dirs)
		if fi, err := os.Stat(filepath.Join(dir, lockFileName)); err == nil {
			d.lockInfo = fi
		}
	}
	if d.minFree > 0 || d.dirInfos != nil {
		d.watching.Add(1)
		go d.watch()
	}
	return d, nil
}

// statDirs returns what each of dirs is at open, for checkDirs; nil when
// one cannot be read.
func statDirs(dirs []string) []os.FileInfo {
	infos := make([]os.FileInfo, len(dirs))
	for i, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil {
			return nil
		}
		infos[i] = fi
	}
	return infos
}

// checkDirs reports a directory of the store that is gone or is no
// longer the directory the store opened. Pebble creates its next files
// by path: into a directory restored from a backup while the server ran,
// it would write its next log and tables among another store's files of
// the same numbers, and its own files, open but unlinked, vanish at exit.
// Only stopping at once keeps the new directory intact.
func (d *DB) checkDirs() error {
	for i, dir := range d.dirs {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s is gone", ErrDirReplaced, dir)
		case err != nil:
			// Unreadable for now (a permission lost, a slow volume):
			// the store's own operations report what matters.
		case !os.SameFile(d.dirInfos[i], fi):
			return fmt.Errorf("%w: %s is another directory than the one opened (moved away, restored or re-linked)", ErrDirReplaced, dir)
		}
	}
	// The files deleted from the directory (rm DIR/*, a "stale" LOCK
	// removed): Pebble writes on into files no directory holds, and went
	// on acknowledging writes for seconds, none of which a restart finds.
	if d.lockInfo != nil {
		lock := filepath.Join(d.dirs[0], lockFileName)
		fi, err := os.Stat(lock)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s is gone", ErrFilesRemoved, lock)
		case err == nil && !os.SameFile(d.lockInfo, fi):
			return fmt.Errorf("%w: %s is another file than the one opened", ErrFilesRemoved, lock)
		}
	}
	return nil
}

// lockFileName is Pebble's lock file in the data directory.
const lockFileName = "LOCK"

// space is what a file system has left (freeSpace).
type space struct {
	bytes      uint64 // available to unprivileged writers
	files      uint64 // free files (inodes)
	totalFiles uint64 // 0 where the file system does not count files (btrfs)
}

// minFreeFiles is how many free files (inodes) the guard keeps on a file
// system that has total: a thousand, or an eighth of a small one's. Pebble
// needs a new file for each log, flush and compaction output, and a log it
// cannot create is as fatal as one it cannot write: a disk out of inodes,
// with bytes to spare, took a server down on its next log
// ("no space left on device"), and a restart could not replay.
func minFreeFiles(total uint64) uint64 { return min(1024, total/8) }

// low reports whether sp is under the guard's minimum of bytes or files.
func (sp space) low(minBytes int64) bool {
	return sp.bytes < uint64(minBytes) || sp.totalFiles > 0 && sp.files < minFreeFiles(sp.totalFiles)
}

// checkSpace samples the free space (bytes and files) of the data
// directory and of the WAL's: running out on either is fatal to Pebble.
//
// The guard's turning on and off is logged, once each way: an operator
// who starts partita with more --min-free-mb than the disk has, or whose
// disk fills, learns why writes get 503 from the log, not only from
// /readyz.
func (d *DB) checkSpace() {
	low, known := false, false
	var where string
	var at space
	for _, dir := range d.dirs {
		if sp, ok := freeSpace(dir); ok {
			known = true
			if sp.low(d.minFree) && !low {
				low, where, at = true, dir, sp
			}
		}
	}
	if !known {
		return
	}
	if was := d.lowSpace.Swap(low); was != low {
		if low {
			d.fatal.log.Warn("free disk space below the minimum: writes get 503 ServerBusy until room returns (--min-free-mb)", "dir", where, "free_mb", at.bytes>>20, "min_free_mb", d.minFree>>20, "free_files", at.files)
		} else {
			d.fatal.log.Info("free disk space back above the minimum: writes accepted again")
		}
	}
}

// watch samples the free space (with the guard on) and the directories'
// identity every 250 ms.
func (d *DB) watch() {
	defer d.watching.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			if d.minFree > 0 {
				d.checkSpace()
			}
			if d.dirInfos == nil {
				continue
			}
			if err := d.checkDirs(); err != nil {
				// stop never returns, and Close waits for this loop.
				go d.fatal.stop(err)
				return
			}
		}
	}
}

func (d *DB) enter() error {
	d.closeMu.RLock()
	if d.closed {
		d.closeMu.RUnlock()
		return kv.ErrClosed
	}
	return nil
}

func (d *DB) leave() { d.closeMu.RUnlock() }

func (d *DB) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	r := readers.Get().(*reader)
	r.g, r.d = d.db, d
	defer r.release()
	return fn(r)
}

func (d *DB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if d.lowSpace.Load() {
		if d.checkSpace(); d.lowSpace.Load() {
			return fmt.Errorf("%w: %w", kv.ErrUnavailable, ErrLowDiskSpace)
		}
	}
	b := d.db.NewIndexedBatch()
	defer b.Close()
	// Deferred after b.Close, so it runs first: the values Get returned
	// are released before their batch is.
	t := readers.Get().(*reader)
	t.g, t.d = b, d
	defer t.release()
	if err := fn(&txn{reader: t, b: b}); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := d.commit(b); err != nil {
		return fmt.Errorf("pebblekv: commit: %w", err)
	}
	return nil
}

func (d *DB) DeleteRange(ctx context.Context, start, end []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if err := d.deleteRange(start, end); err != nil {
		return fmt.Errorf("pebblekv: delete range: %w", err)
	}
	return nil
}

// Metrics exposes Pebble's metrics (for diagnostics).
func (d *DB) Metrics() *pebble.Metrics { return d.db.Metrics() }

func (d *DB) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.fatal.closing.Store(true)
	close(d.stop)
	d.watching.Wait()
	err := d.db.Close()
	d.walClaim.release()
	for _, f := range d.dirLocks {
		f.Close()
	}
	d.watcher.Close()
	if err != nil {
		return fmt.Errorf("pebblekv: close: %w", err)
	}
	return nil
}

// getter is satisfied by *pebble.DB and *pebble.Batch.
type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// reader is the kv.Reader of one View or Update. Get returns Pebble's own
// slice, not a copy: it stays valid until the transaction ends (kv.Reader's
// contract), when release closes what pins it (a memtable or a cached
// block). Readers are pooled.
type reader struct {
	g       getter
	d       *DB // the store g reads (unopenableBlob)
	closers []io.Closer
}

var readers = sync.Pool{New: func() any { return new(reader) }}

func (r *reader) Get(key []byte) ([]byte, error) {
	// A blob file Pebble cannot open panics in Get (blobOpenPanic).
	defer func() {
		if v := recover(); v != nil {
			if !blobOpenPanic(v) {
				panic(v)
			}
			r.d.unopenableBlob()
		}
	}()
	v, closer, err := r.g.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebblekv: get: %w", err)
	}
	// Pebble v2.1's Get reads a separated value with Iterator.Value,
	// which drops the error of a blob read that fails (a checksum
	// mismatch, EIO) and gives nil, as if the value were empty: callers
	// took an unreadable entity for a malformed one, and a merge into it
	// for a merge into nothing. The error stays on the iterator Get
	// returns as its closer.
	if it, ok := closer.(*pebble.Iterator); ok && v == nil {
		if err := it.Error(); err != nil {
			closer.Close()
			return nil, fmt.Errorf("pebblekv: get: %w", err)
		}
	}
	r.closers = append(r.closers, closer)
	return v, nil
}

func (r *reader) NewIter(o kv.IterOptions) (kv.Iterator, error) {
	it, err := newIter(r.g, o)
	if err != nil {
		return nil, err
	}
	it.d = r.d
	return it, nil
}

// release closes what Get pinned and returns r to the pool.
func (r *reader) release() {
	for i, c := range r.closers {
		c.Close()
		r.closers[i] = nil
	}
	r.closers = r.closers[:0]
	r.g, r.d = nil, nil
	readers.Put(r)
}

func newIter(g getter, o kv.IterOptions) (*iter, error) {
	it, err := g.NewIter(&pebble.IterOptions{LowerBound: o.LowerBound, UpperBound: o.UpperBound})
	if err != nil {
		return nil, fmt.Errorf("pebblekv: new iterator: %w", err)
	}
	return &iter{Iterator: it}, nil
}

// txn reads through its indexed batch, so it sees its own writes.
type txn struct {
	*reader
	b *pebble.Batch
}

func (t *txn) Set(key, value []byte) error { return t.b.Set(key, value, nil) }
func (t *txn) Delete(key []byte) error     { return t.b.Delete(key, nil) }

// iter is a Pebble iterator whose errors stay, as kv.Iterator promises.
// Pebble's do not: a seek clears the error a failed block or value read
// left, so a caller that seeks on (readMany's SeekGE per key) would take
// the unreadable entity for absent and see no error at the end; a batch
// merging into it then replaced it. Once a read fails, every positioning
// call returns false and Error returns that first error.
type iter struct {
	*pebble.Iterator
	err error // the first read that failed
	d   *DB   // the store read (unopenableBlob)
}

// Value returns nil when a separated value cannot be read from its blob
// file; the error is kept (Error), and the iterator stays exhausted:
// positioning calls return false (TestIteratorReportsValueReadErrors,
// TestIteratorValueErrorIsSticky).
func (it *iter) Value() []byte {
	// A blob file Pebble cannot open panics here (blobOpenPanic).
	defer func() {
		if v := recover(); v != nil {
			if !blobOpenPanic(v) {
				panic(v)
			}
			it.d.unopenableBlob()
		}
	}()
	v, err := it.Iterator.ValueAndErr()
	if err != nil {
		if it.err == nil {
			it.err = err
		}
		return nil
	}
	return v
}

// Close tells the store how many dead versions the iterator stepped over
// (scanFlusher) before closing it.
func (it *iter) Close() error {
	if it.d != nil {
		st := it.Iterator.Stats()
		it.d.steppedOver(st.ForwardStepCount[pebble.InternalIterCall], st.ForwardStepCount[pebble.InterfaceCall])
	}
	return it.Iterator.Close()
}

func (it *iter) Error() error {
	if it.err != nil {
		return it.err
	}
	return it.Iterator.Error()
}

func (it *iter) First() bool {
	return it.err == nil && it.moved(it.Iterator.First())
}

func (it *iter) Last() bool {
	return it.err == nil && it.moved(it.Iterator.Last())
}

func (it *iter) SeekGE(key []byte) bool {
	return it.err == nil && it.moved(it.Iterator.SeekGE(key))
}

func (it *iter) Next() bool {
	return it.err == nil && it.moved(it.Iterator.Next())
}

// moved keeps the error of a positioning call that found nothing because
// a read failed (the next seek would clear it in Pebble's iterator).
func (it *iter) moved(ok bool) bool {
	if !ok {
		it.err = it.Iterator.Error()
	}
	return ok
}

func (it *iter) Valid() bool {
	return it.err == nil && it.Iterator.Valid()
}

func orDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// pebbleLogger sends Pebble's log to slog: errors (failed flushes and
// compactions, which Pebble retries) at error level, the rest at debug.
type pebbleLogger struct {
	log   *slog.Logger
	fatal *fataler
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called by Pebble when it cannot go on, chiefly when its commit
// pipeline is broken (a WAL write failed). Pebble requires it not to
// return. It used to panic, and the HTTP handler's recover turned that
// into a 500 and a live process whose every later write hung; now the
// store fails stop.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.fatal.stop(fmt.Errorf("%s", fmt.Sprintf(format, args...)))
}
