package pebblekv

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Table files (sstables and blob files) pass through here on their way to
// the disk: gathered into large writes while the disk has room, written
// straight through with space reserved ahead when it does not, and their
// failures paced, because Pebble retries at once.

// writeBufferSize is how much of a new sstable or blob file is gathered
// before one write(2). Pebble (v2.1) hands a file it builds to the file
// system one block (~4 KiB) at a time, through a bufio.Writer of 4 KiB
// (objstorageprovider's fileBufferedWritable), so every flush and
// compaction made a system call per block. On this machine's ext4, 64 MiB
// written 4 KiB at a time costs ~62 ms of CPU, 256 KiB at a time 15-23
// ms; the process CPU of flushing and compacting 60,000 1 KiB values fell
// from 3.5-5.5 to 2.1-2.3 µs per value (BenchmarkTableWrites), and at the
// server $batch from −3 to −10% per entity, insert-or-replace batches
// −7 to −17%, single writes −1 to −3%, medians (docs/PERFORMANCE.md).
const writeBufferSize = 256 << 10

// bufferTableWrites is false only in benchmarks that compare.
var bufferTableWrites = true

// bufferMinFree is the free space below which new table files are written
// straight through, as Pebble writes them. A write that fails for want of
// space must fail as a write: Pebble then aborts the file and retries
// later. Failing only at the sync, where gathered bytes are written, it
// would go on to abort a file it has already closed, a nil-pointer panic
// in Pebble v2.1 (fileBufferedWritable.Abort after a failed Finish). With
// a gigabyte free a file's last quarter MiB does not run out of space;
// one that fails anyway is an I/O error, and fatal (see sync).
const bufferMinFree = 1 << 30

var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, writeBufferSize); return &b }}

// isTableFile reports whether name is a file that Pebble writes once,
// front to back, and syncs and closes before it refers to it: an sstable
// or a blob file.
func isTableFile(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// tableFiles is what a store's table files share: the file system (for
// its free space), the fataler, and the recent failures that pace
// Pebble's retries.
type tableFiles struct {
	fs    vfs.FS
	fatal *fataler
	// maxWait caps the pacing wait (0: a second). The wait happens inside
	// the file operation that failed, which the stall watch times, so
	// under a short MaxSyncDuration it must stay well inside it: a full
	// disk is not a stalled one.
	maxWait time.Duration

	mu       sync.Mutex
	failures int       // failed creates and writes in the current run
	last     time.Time // of the latest
}

// open wraps a new table file. Straight through, it reserves the file's
// first bytes at once, and fails as Create when there is no room for them.
func (t *tableFiles) open(name string, f vfs.File) (*bufferedFile, error) {
	b := &bufferedFile{File: f, name: name, tables: t}
	if bufferTableWrites && t.roomy(name) {
		b.buf = writeBuffers.Get().(*[]byte)
		return b, nil
	}
	if err := b.reserve(finishSlack); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

// roomy reports whether the file system holding name has bufferMinFree
// free, or does not say.
func (t *tableFiles) roomy(name string) bool {
	u, err := t.fs.GetDiskUsage(t.fs.PathDir(name))
	return err != nil || u.AvailBytes >= bufferMinFree
}

// failed paces a failed create or write of a table file. Pebble retries a
// failed flush at once and has no backoff of its own: on a full disk a
// server took more than a core making and deleting ~500 files a second,
// and the small files that still completed in between would have reset
// any count of failures in a row. So a run of failures ends only after
// failureQuiet without one, and the wait grows with the run, 5 ms
// doubling to a second. Pebble's flushes and compactions create and
// write files without its DB mutex, so only the failing job waits; a
// closing store does not.
func (t *tableFiles) failed() {
	t.mu.Lock()
	now := time.Now()
	if now.Sub(t.last) > failureQuiet {
		t.failures = 0
	}
	t.failures++
	t.last = now
	n := t.failures
	t.mu.Unlock()
	wait := t.maxWait
	if wait <= 0 {
		wait = time.Second
	}
	if n <= 8 {
		wait = min(wait, 5*time.Millisecond<<(n-1))
	}
	for end := now.Add(wait); time.Now().Before(end) && !t.fatal.closing.Load(); {
		time.Sleep(min(50*time.Millisecond, time.Until(end)))
	}
}

// failureQuiet is how long without a failure ends a run of them.
const failureQuiet = 10 * time.Second

// bufferedFile is a table file. With room on the disk it gathers the
// file's writes; every other operation first writes what is gathered, so
// reads, syncs and stats see the file as Pebble wrote it. Without room it
// writes straight through, with finishSlack reserved beyond every write
// (reserve). Either way a failed write is reported by the write that
// Pebble made, paced (tableFiles.failed), and sticks.
type bufferedFile struct {
	vfs.File
	name   string
	tables *tableFiles
	buf    *[]byte // nil: straight through
	err    error   // the first failure reported to Pebble

	off      int64 // bytes written, straight through
	reserved int64 // the end of the space reserved, straight through; -1: the file system cannot
}

// finishSlack is reserved beyond the bytes written straight through: more
// than Pebble's own 4 KiB write buffer can hold when it finishes a file.
// Those last bytes are written by Finish, and a Finish that fails for want
// of space makes Pebble v2.1 abort the file it has just closed, a
// nil-pointer panic (fixed upstream in July 2026, after v2.1.7: "sstable/
// blob: fix illegal Abort after Finish error"). With the slack reserved,
// space runs out at an earlier write, which Pebble handles: it abandons
// the file and retries the flush later.
const finishSlack = 8 << 10

// reserveChunk is how far ahead reserve reaches at a time; Close gives
// back what was not written.
const reserveChunk = 64 << 10

// reserve makes sure the space up to end is the file's (fallocate, size
// kept). Only a want of space is an error; a file system that cannot
// reserve is written without.
func (f *bufferedFile) reserve(end int64) error {
	if f.reserved < 0 || end <= f.reserved {
		return nil
	}
	n := max(end-f.reserved, reserveChunk)
	err := f.File.Preallocate(f.reserved, n)
	switch {
	case err == nil:
		f.reserved += n
	case noSpace(err):
		return err
	default:
		f.reserved = -1
	}
	return nil
}

func (f *bufferedFile) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.buf == nil {
		if err := f.reserve(f.off + int64(len(p)) + finishSlack); err != nil {
			f.fail(err)
			return 0, err
		}
		n, err := f.File.Write(p)
		f.off += int64(n)
		if err != nil {
			f.fail(err)
		}
		return n, err
	}
	b := *f.buf
	if len(b)+len(p) > cap(b) {
		if err := f.flush(); err != nil {
			f.tables.failed()
			return 0, err
		}
		b = *f.buf
		if len(p) >= cap(b) {
			n, err := f.File.Write(p)
			if err != nil {
				f.fail(err)
			}
			return n, err
		}
	}
	*f.buf = append(b, p...)
	return len(p), nil
}

// fail records err as the file's failure and paces the caller.
func (f *bufferedFile) fail(err error) {
	f.err = err
	f.tables.failed()
}

// flush writes what is gathered. A failure sticks: the gathered bytes
// are gone, so nothing after may pass for the file Pebble wrote.
func (f *bufferedFile) flush() error {
	if f.err != nil {
		return f.err
	}
	if f.buf == nil || len(*f.buf) == 0 {
		return nil
	}
	_, err := f.File.Write(*f.buf)
	*f.buf = (*f.buf)[:0]
	f.err = err
	return err
}

// sync makes what Pebble wrote durable with do. A failure that Pebble has
// not been told of (gathered bytes that would not write, or a sync that
// fails) is fatal: returned, it would reach Pebble as a failed Finish of
// the file, which Pebble v2.1 answers by aborting the file it has just
// closed, a nil-pointer panic that takes the process down with no word
// of why. A failure Pebble has been told of is returned again; that is
// the close of a file it aborts.
func (f *bufferedFile) sync(do func() error) error {
	if f.err != nil {
		return f.err
	}
	err := f.flush()
	if err == nil {
		err = do()
	}
	if err != nil {
		f.err = err
		f.tables.fatal.stop(fmt.Errorf("writing %s: %w", f.name, err)) // does not return
	}
	return nil
}

func (f *bufferedFile) Close() error {
	if f.buf == nil && f.reserved > f.off {
		if fd := f.File.Fd(); fd != vfs.InvalidFd {
			trimTo(fd, f.off)
		}
	}
	err := f.flush()
	if f.buf != nil {
		*f.buf = (*f.buf)[:0]
		writeBuffers.Put(f.buf)
		f.buf = nil
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *bufferedFile) Read(p []byte) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *bufferedFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *bufferedFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	f.off = max(f.off, off+int64(n)) // Close trims to it
	return n, err
}

func (f *bufferedFile) Stat() (vfs.FileInfo, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *bufferedFile) Sync() error { return f.sync(f.File.Sync) }

func (f *bufferedFile) SyncData() error { return f.sync(f.File.SyncData) }

// SyncTo writes what is gathered and asks for a prefix of the file to be
// synced. Pebble calls it as it writes (BytesPerSync), not as a promise.
func (f *bufferedFile) SyncTo(n int64) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	if err := f.flush(); err != nil {
		f.tables.failed() // Pebble hears of it as a failed write
		return false, err
	}
	return f.File.SyncTo(n)
}

func (f *bufferedFile) Prefetch(off, n int64) error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Prefetch(off, n)
}
