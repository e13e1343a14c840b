package pebblekv

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FatalMessage is the one line the default Options.OnFatal logs before
// the process exits (FatalMessageFor: unless the store's files were
// removed or replaced under it).
const FatalMessage = "fatal storage error: partita stops; a restart recovers every acknowledged write from the write-ahead log"

// FatalMessageFor is the line to log for err: FatalMessage, except when
// the store's directory or files were removed or replaced while it ran,
// when a restart cannot promise the writes acknowledged since.
func FatalMessageFor(err error) string {
	if errors.Is(err, ErrFilesRemoved) || errors.Is(err, ErrDirReplaced) {
		return "fatal storage error: partita stops; the store's files were removed or replaced while it ran, so the writes acknowledged since may be lost: restore from a backup, or the files, before starting again"
	}
	return FatalMessage
}

// fataler is where every error the store cannot go on from ends up:
// Pebble's Fatalf, a failed write to the write-ahead log, a background
// error that retrying will not cure, a panic in a commit. Before the store
// is open it fails the Open instead; while it closes, errors are Close's.
type fataler struct {
	log      *slog.Logger
	onFatal  func(error)
	guardOff bool // the free-space guard is off: a full disk is fatal

	once       sync.Once
	opened     atomic.Bool
	quiet      sync.Mutex // guards the three below
	lastErr    string     // without its digits
	lastLogged time.Time
	repeated   int
	closing    atomic.Bool
	openFailed chan error // buffered, one
}

// stop fails stop and never returns.
func (f *fataler) stop(err error) {
	if !f.opened.Load() {
		select {
		case f.openFailed <- err:
		default:
		}
		select {}
	}
	err = fmt.Errorf("%w: %w", ErrFatal, err)
	f.once.Do(func() {
		if f.onFatal != nil {
			f.onFatal(err)
			return
		}
		f.log.Error(FatalMessageFor(err), "err", err.Error())
		os.Exit(1)
	})
	select {}
}

// hopeless reports whether retrying err (as Pebble does with failed
// flushes and compactions) cannot succeed until someone intervenes. An
// I/O error is: a flush that keeps failing on it leaves the memtables
// full and every later write stalled, a live process that cannot write.
func hopeless(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// background is Pebble's BackgroundError listener. A flush that fails for
// want of permission never succeeds, and the memtables it leaves behind
// stall every write, so that is fatal; one that fails for want of space
// is left to Pebble's retries while the free-space guard refuses writes
// (they resume with the space), and fatal when the guard is off.
func (f *fataler) background(err error) {
	f.logBackground(err)
	if !hopeless(err) || f.closing.Load() {
		return
	}
	if f.opened.Load() && noSpace(err) && !f.guardOff {
		return
	}
	f.stop(err)
}

// logBackground logs a background error, the same one at most every
// repeatEvery: Pebble retries a failed flush at once, and on a full disk
// that was some 80 lines a second.
func (f *fataler) logBackground(err error) {
	msg := err.Error()
	// The same error names a new file at every retry.
	key := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, msg)
	f.quiet.Lock()
	now := time.Now()
	if key == f.lastErr && now.Sub(f.lastLogged) < repeatEvery {
		f.repeated++
		f.quiet.Unlock()
		return
	}
	repeated := f.repeated
	if key != f.lastErr {
		repeated = 0
	}
	f.lastErr, f.lastLogged, f.repeated = key, now, 0
	f.quiet.Unlock()
	if repeated > 0 {
		f.log.Error("background error: "+msg, "component", "pebble", "repeated", repeated)
		return
	}
	f.log.Error("background error: "+msg, "component", "pebble")
}

const repeatEvery = 10 * time.Second

// CorruptionMessage is the line logged, before the fatal one, when a read
// finds a corrupt block: the restart the fatal line promises recovers the
// write-ahead log, not a damaged file.
const CorruptionMessage = "on-disk corruption: a block of the store fails its checksum, and a restart does not repair it (the next read of it stops partita again); stop partita, run partita check, and restore the data directory from a backup"

// corruption is Pebble's DataCorruption listener (called on the read that
// found it). A store known to hold a corrupt sstable stops, as Pebble
// does by default: its compactions cannot rewrite the damaged range, and
// serving on would leave the writes into it stalled behind them.
func (f *fataler) corruption(info pebble.DataCorruptionInfo) {
	f.log.Error(CorruptionMessage, "path", info.Path, "err", fmt.Sprint(info.Details))
	f.stop(fmt.Errorf("%w in %s: %v", ErrCorruption, info.Path, info.Details))
}

// corruptFile is corruption for a damaged file found by partita rather
// than reported by Pebble (unopenableBlob); err wraps ErrCorruption.
func (f *fataler) corruptFile(path string, err error) {
	f.log.Error(CorruptionMessage, "path", path, "err", err.Error())
	f.stop(err)
}

// walError handles an error writing the write-ahead log once the store is
// open. Pebble cannot go on from one: it panics where it rotates the log
// (on a permission error that became a Go runtime "unlock of unlocked
// mutex" crash) and calls Fatalf where it commits.
func (f *fataler) walError(err error) {
	if err == nil || !f.opened.Load() || f.closing.Load() {
		return
	}
	f.stop(fmt.Errorf("write-ahead log: %w", err))
}

// errAbandoned marks an error of openPebble that left pebble.Open
// running; its message is empty.
var errAbandoned = errors.New("")

// openPebble is pebble.Open, except that it returns an error when the
// store cannot be recovered: Pebble flushes the replayed WAL within Open
// and retries a failed flush forever, so on a full disk (or a data
// directory it may not write) Open never returns.
func openPebble(dir string, po *pebble.Options, f *fataler) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := pebble.Open(dir, po)
		if err == nil {
			f.opened.Store(true)
		}
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			// A background error Pebble hit while Open was still
			// running went to openFailed, and the goroutine that hit it
			// is parked: the store cannot go on, whatever Open says.
			select {
			case err := <-f.openFailed:
				return nil, fmt.Errorf("%w: %w", ErrCannotRecover, err)
			default:
			}
		}
		return r.db, r.err
	case err := <-f.openFailed:
		select {
		case r := <-done:
			return r.db, r.err
		default:
		}
		// Pebble's Open goes on (retrying, or waiting on the disk) in
		// its goroutine, with po's cache: the caller is expected to exit
		// and must not release what it uses (errAbandoned).
		return nil, cannotRecover(fmt.Errorf("%w%w", err, errAbandoned))
	}
}

// cannotRecover is the error of an Open that failed with the store's
// fatal error (err) while it recovered: for want of space or permission
// unless the error says otherwise.
func cannotRecover(err error) error {
	if errors.Is(err, ErrDiskStalled) {
		return fmt.Errorf("%w: %w", ErrCannotRecover, err)
	}
	if errors.Is(err, ErrCorruption) {
		// A read during the open (a compaction, the replay's flush)
		// found a damaged file: space and permissions are not the
		// cause, and a retry does not cure it.
		return fmt.Errorf("%w: %w; restore the data directory from a backup", ErrCannotRecover, err)
	}
	return fmt.Errorf("%w: %w (recovery writes the replayed write-ahead log to new files: it needs free space, free files (inodes) and write permission in the data directory)", ErrCannotRecover, err)
}

// commit commits b. A panic in Pebble's commit leaves its pipeline in an
// unknown state, so it is fatal rather than a failed request.
func (d *DB) commit(b *pebble.Batch) error {
	defer func() {
		if v := recover(); v != nil {
			d.fatal.stop(fmt.Errorf("pebble panicked in commit: %v", v))
		}
	}()
	return b.Commit(d.wo)
}

func (d *DB) deleteRange(start, end []byte) error {
	defer func() {
		if v := recover(); v != nil {
			d.fatal.stop(fmt.Errorf("pebble panicked in delete range: %v", v))
		}
	}()
	return d.db.DeleteRange(start, end, pebble.NoSync)
}

// walFS reports the write-ahead log's write errors to the fataler before
// Pebble sees them, and makes table files bufferedFiles: the store's own
// files, in dirs (the data directory, and the WAL's when apart). Pebble
// also writes a checkpoint (partita backup) through this file system, and
// a backup's target that fills up or fails must fail the backup, not stop
// the store as its own log would.
type walFS struct {
	vfs.FS
	fatal  *fataler
	tables *tableFiles
	dirs   []string // cleaned
}

// inStore reports whether name is a file of the store's own directories.
func (fs walFS) inStore(name string) bool {
	dir := filepath.Clean(fs.FS.PathDir(name))
	for _, d := range fs.dirs {
		if dir == d {
			return true
		}
	}
	return false
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs walFS) Unwrap() vfs.FS { return fs.FS }

func (fs walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs walFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if !fs.inStore(name) {
		return f, err
	}
	if isTableFile(name) {
		if err != nil {
			fs.tables.failed()
			return nil, err
		}
		b, err := fs.tables.open(name, f)
		if err != nil {
			fs.tables.failed()
			return nil, err
		}
		return b, nil
	}
	if !isWAL(name) {
		return f, err
	}
	if err != nil {
		fs.fatal.walError(err)
		return nil, err
	}
	return newWALFile(f, fs.fatal), nil
}

func newWALFile(f vfs.File, fatal *fataler) *walFile {
	w := &walFile{File: f, fatal: fatal, ahead: true}
	if st, err := f.Stat(); err == nil {
		w.end = st.Size() // a recycled log holds its old bytes: no need to zero them
	}
	return w
}

// walAhead is how far a write-ahead log is zeroed ahead of its writes.
//
// fdatasync of a file whose size changed must also commit the size (on
// ext4 a journal commit), and on this project's VMs that made a WAL sync
// cost ~95 µs of CPU (~180 µs of wall time) against ~64 µs (~120 µs) for
// one that only writes data into the file (BenchmarkWALSync,
// docs/PERFORMANCE.md). Pebble
// recycles old logs, which are full-sized, but a new store's logs and a
// recycled log's part past its old size grow with every sync; Pebble's
// own preallocation keeps the size (FALLOC_FL_KEEP_SIZE). So the WAL is
// extended by writing zeros a MiB at a time, ahead of where Pebble
// writes: one sync per MiB of log (~800 single-entity writes) changes the
// size instead of every one. A zeroed tail is what Pebble's reader expects of a
// preallocated log (record.ErrZeroedChunk): on the newest log it ends the
// replay as a torn tail does, and an older log ends with its EOF trailer
// before the zeros, as a recycled log's older bytes are.
const walAhead = 1 << 20

var walZeros = make([]byte, walAhead) // never written

type walFile struct {
	vfs.File
	fatal *fataler

	// off is where Pebble's next Write goes, end the size the file has
	// been given (by zeros, or by a recycled log's old bytes). ahead is
	// cleared by the first failed extension: the extension is an
	// optimization, and a real want of space fails Pebble's own write.
	// No lock: Pebble's log writer writes a log from one goroutine at a
	// time (its flush loop, then Close once the loop has ended).
	off, end int64
	ahead    bool
}

// extend zeroes the file past need.
func (f *walFile) extend(need int64) {
	for f.ahead && f.end < need+walAhead/2 {
		n, err := f.File.WriteAt(walZeros, f.end)
		f.end += int64(n)
		if err != nil {
			f.ahead = false
		}
	}
}

func (f *walFile) Write(p []byte) (int, error) {
	if f.ahead && f.off+int64(len(p)) > f.end {
		f.extend(f.off + int64(len(p)))
	}
	n, err := f.File.Write(p)
	f.off += int64(n)
	f.fatal.walError(err)
	return n, err
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	// Pebble writes its logs in order; a positioned write only stops the
	// zeroing, which must never land on bytes written here.
	f.ahead = false
	n, err := f.File.WriteAt(p, off)
	f.fatal.walError(err)
	return n, err
}

func (f *walFile) Sync() error {
	err := f.File.Sync()
	f.fatal.walError(err)
	return err
}

func (f *walFile) SyncData() error {
	err := f.File.SyncData()
	f.fatal.walError(err)
	return err
}

func (f *walFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	f.fatal.walError(err)
	return full, err
}

func (f *walFile) Close() error {
	err := f.File.Close()
	f.fatal.walError(err)
	return err
}
