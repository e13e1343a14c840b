package pebblekv

import (
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

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

var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, writeBufferSize); return &b }}

// isTableFile reports whether name is a file that Pebble writes once,
// front to back, and syncs and closes before it refers to it: an sstable
// or a blob file.
func isTableFile(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// bufferedFile gathers a table file's writes. Every other operation
// first writes what is gathered, so reads, syncs, stats and closes see
// the file as Pebble wrote it; a write error surfaces at the latest at
// the Sync or Close that Pebble makes before it uses the file.
type bufferedFile struct {
	vfs.File
	buf *[]byte
	err error
}

func newBufferedFile(f vfs.File) *bufferedFile {
	return &bufferedFile{File: f, buf: writeBuffers.Get().(*[]byte)}
}

func (f *bufferedFile) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.buf == nil {
		return f.File.Write(p)
	}
	b := *f.buf
	if len(b)+len(p) > cap(b) {
		if err := f.flush(); err != nil {
			return 0, err
		}
		b = *f.buf
		if len(p) >= cap(b) {
			return f.File.Write(p)
		}
	}
	*f.buf = append(b, p...)
	return len(p), nil
}

// flush writes what is gathered.
func (f *bufferedFile) flush() error {
	if f.err != nil {
		return f.err
	}
	if f.buf == nil || len(*f.buf) == 0 {
		return nil
	}
	_, err := f.File.Write(*f.buf)
	*f.buf = (*f.buf)[:0]
	if err != nil {
		f.err = err
	}
	return err
}

func (f *bufferedFile) Close() error {
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
	return f.File.WriteAt(p, off)
}

func (f *bufferedFile) Stat() (vfs.FileInfo, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *bufferedFile) Sync() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *bufferedFile) SyncData() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *bufferedFile) SyncTo(n int64) (bool, error) {
	if err := f.flush(); err != nil {
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
