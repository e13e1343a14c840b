package transfer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/partita/partita"
)

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isFileSpec reports whether spec names one JSONL file (rather than a folder).
func isFileSpec(spec string) bool {
	return strings.HasSuffix(spec, ".jsonl") || strings.HasSuffix(spec, ".jsonl.gz")
}

// sourceFiles lists the files of a file or folder source.
func sourceFiles(spec string) ([]string, error) {
	st, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if !st.IsDir() {
		return []string{spec}, nil
	}
	var files []string
	ents, err := os.ReadDir(spec)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() && isFileSpec(e.Name()) {
			files = append(files, filepath.Join(spec, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("source: folder %s holds no *.jsonl or *.jsonl.gz files", spec)
	}
	return files, nil
}

// lineReader reads JSONL records of one file with line numbers.
type lineReader struct {
	path string
	f    *os.File
	gz   *gzip.Reader
	br   *bufio.Reader
	line int
	// lastLen is the length of the line next returned last.
	lastLen int
	// lastTable is the last table name checked (checkTable).
	lastTable string
	// arena holds the request bodies nextPrepared cuts.
	arena []byte
	// counted tracks the bytes read of the (compressed) file for the ETA.
	counted *countingReader
}

type countingReader struct {
	r  io.Reader
	n  int64
	mu sync.Mutex
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	c.n += int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *countingReader) N() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func openLines(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	lr := &lineReader{path: path, f: f, counted: &countingReader{r: f}}
	var r io.Reader = lr.counted
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(bufio.NewReaderSize(lr.counted, 1<<20))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("source: %s: %w", path, err)
		}
		lr.gz, r = gz, gz
	}
	lr.br = bufio.NewReaderSize(r, 1<<20)
	return lr, nil
}

// ErrMalformed wraps every malformed-line error (with file and line).
var ErrMalformed = errors.New("malformed JSONL")

// maxLine bounds one JSONL line: an entity is at most 1 MiB as the
// service counts it, which its record's escaped text stays well within.
const maxLine = 16 << 20

// readLine is ReadBytes('\n') that refuses a line longer than maxLine
// instead of reading a file without newlines whole into memory.
func (lr *lineReader) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := lr.br.ReadSlice('\n')
		if err != bufio.ErrBufferFull && line == nil {
			// The whole line in the reader's buffer (the usual case): read
			// in place; callers copy what they keep before the next read.
			return frag, err
		}
		line = append(line, frag...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: %s:%d: a line longer than %d MiB", ErrMalformed, lr.path, lr.line+1, maxLine>>20)
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// next returns the next record, or io.EOF. Blank lines are skipped.
func (lr *lineReader) next() (Record, error) {
	for {
		line, err := lr.readLine()
		if len(line) == 0 && err == io.EOF {
			return Record{}, io.EOF
		}
		if errors.Is(err, ErrMalformed) {
			return Record{}, err // readLine named the file and line
		}
		if err != nil && err != io.EOF {
			return Record{}, fmt.Errorf("source: %s: %w", lr.path, err)
		}
		lr.line++
		// ReadBytes returns a fresh slice, and DecodeRecord copies what it
		// keeps: the line is read in place.
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		lr.lastLen = len(line)
		rec, derr := DecodeRecord(line)
		if derr != nil {
			return Record{}, fmt.Errorf("%w: %s:%d: %v", ErrMalformed, lr.path, lr.line, derr)
		}
		if err := lr.checkTable(rec.Table); err != nil {
			return Record{}, err
		}
		return rec, nil
	}
}

// nextPrepared returns the next record's table and its entity ready for a
// $batch, or io.EOF, as next does (same errors). Bodies are cut from an
// arena of the reader's: no allocation per entity.
func (lr *lineReader) nextPrepared() (string, prepared, error) {
	for {
		line, err := lr.readLine()
		if len(line) == 0 && err == io.EOF {
			return "", prepared{}, io.EOF
		}
		if errors.Is(err, ErrMalformed) {
			return "", prepared{}, err // readLine named the file and line
		}
		if err != nil && err != io.EOF {
			return "", prepared{}, fmt.Errorf("source: %s: %w", lr.path, err)
		}
		lr.line++
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		lr.lastLen = len(line)
		if need := 2*len(line) + 256; cap(lr.arena)-len(lr.arena) < need {
			lr.arena = make([]byte, 0, max(1<<20, need))
		}
		out, table, pk, rk, ok := appendImportFast(lr.arena, line)
		if ok {
			if err := lr.checkTable(string(table)); err != nil {
				return "", prepared{}, err
			}
			body := out[len(lr.arena):len(out):len(out)]
			lr.arena = out
			return string(table), prepared{pk: string(pk), rk: string(rk), body: body}, nil
		}
		rec, derr := DecodeRecord(line)
		if derr != nil {
			return "", prepared{}, fmt.Errorf("%w: %s:%d: %v", ErrMalformed, lr.path, lr.line, derr)
		}
		if err := lr.checkTable(rec.Table); err != nil {
			return "", prepared{}, err
		}
		return rec.Table, prepared{pk: rec.Entity.PartitionKey, rk: rec.Entity.RowKey, body: appendRequestEntity(nil, rec.Entity)}, nil
	}
}

// checkTable refuses a record whose table is not a valid table name: it
// would become a file name (a folder destination) or a URL path.
func (lr *lineReader) checkTable(table string) error {
	if table == lr.lastTable {
		return nil // the lines of a table come together: check it once
	}
	if err := checkTable("table", table); err != nil {
		return fmt.Errorf("%w: %s:%d: %v", ErrMalformed, lr.path, lr.line, err)
	}
	lr.lastTable = table
	return nil
}

func (lr *lineReader) close() {
	if lr.gz != nil {
		lr.gz.Close()
	}
	lr.f.Close()
}

// fileSink writes JSONL: one file, or a folder with one file per table.
// Each file is written under a hidden temporary name beside it
// (".NAME.partial-*") and renamed to its name only once the whole copy
// succeeded and the file is synced; a copy that fails removes it. So a
// file under the name asked for is always a complete export: a disk that
// filled up left a truncated export under the final name, with nothing
// but the exit status to tell it from a whole one, and a failed re-export
// no longer destroys the previous one.
type fileSink struct {
	spec   string
	folder bool
	gz     bool
	mu     sync.Mutex
	files  map[string]*sinkFile // by file path; one per table at most
}

type sinkFile struct {
	f    *os.File // the temporary file
	path string   // the name it gets
	gz   *gzip.Writer
	w    *bufio.Writer
	// keep is the mode of the regular file the export replaces, which
	// the new one takes (keepMode); else it has what the umask leaves of
	// 0666, as os.Create gives.
	keep     os.FileMode
	keepMode bool
}

func newFileSink(spec string) (*fileSink, error) {
	s := &fileSink{spec: spec, folder: !isFileSpec(spec), files: map[string]*sinkFile{}}
	if s.folder {
		if err := os.MkdirAll(spec, 0o755); err != nil {
			return nil, fmt.Errorf("destination: %w", err)
		}
	} else {
		s.gz = strings.HasSuffix(spec, ".gz")
		if dir := filepath.Dir(spec); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("destination: %w", err)
			}
		}
		// The file exists even when no table is copied.
		if _, err := s.file(""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *fileSink) pathOf(table string) string {
	if s.folder {
		return filepath.Join(s.spec, table+".jsonl")
	}
	return s.spec
}

// file opens (truncating) the file of table on first use. s.mu is held.
func (s *fileSink) file(table string) (*sinkFile, error) {
	if s.folder {
		// The name becomes a file name: whatever let it through, it must
		// not name a path.
		if err := checkTable("destination", table); err != nil {
			return nil, err
		}
	}
	p := s.pathOf(table)
	if sf := s.files[p]; sf != nil {
		return sf, nil
	}
	if len(s.files) >= maxTables {
		return nil, fmt.Errorf("destination: more than %d tables", maxTables)
	}
	f, err := createPartial(p)
	if err != nil {
		return nil, fmt.Errorf("destination: %w", err)
	}
	sf := &sinkFile{f: f, path: p}
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		sf.keep, sf.keepMode = fi.Mode().Perm(), true
	}
	var w io.Writer = f
	if s.gz {
		sf.gz = gzip.NewWriter(f)
		w = sf.gz
	}
	sf.w = bufio.NewWriterSize(w, 1<<20)
	s.files[p] = sf
	return sf, nil
}

// createPartial creates the temporary file that becomes p, beside it, with
// the mode os.Create gives (0666 less the umask: os.CreateTemp's 0600,
// widened to 0644 when the export ended, ignored a umask of 077).
func createPartial(p string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".partial-"+newID())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, os.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", p)
}

// write appends the records of es in table.
func (s *fileSink) write(table string, es []*partita.Entity) (int, error) {
	var buf []byte
	for _, e := range es {
		buf = AppendRecord(buf, table, e)
	}
	return len(buf), s.writeRecords(table, buf)
}

// writeRecords appends buf, JSONL records of table.
func (s *fileSink) writeRecords(table string, buf []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.file(table)
	if err != nil {
		return err
	}
	if _, err := sf.w.Write(buf); err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	return nil
}

// ensure creates the (empty) file of table, so that an empty table exports
// as an empty file.
func (s *fileSink) ensure(table string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.file(table)
	return err
}

// close ends the files: with ok (the copy succeeded) each is flushed and
// synced, and once all are, renamed to its name and the directories
// synced; otherwise, or when a flush or sync fails, the temporary files
// are removed and no file takes its name. The renames of a folder's files
// are one at a time: should one fail (the disk gone between two), the
// files renamed before it keep their names, each of them whole.
func (s *fileSink) close(ok bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, sf := range s.files {
		var err error
		if ok && first == nil {
			err = sf.w.Flush()
			if sf.gz != nil && err == nil {
				err = sf.gz.Close()
			}
			if err == nil && sf.keepMode {
				err = sf.f.Chmod(sf.keep)
			}
			if err == nil {
				err = sf.f.Sync()
			}
		}
		if cerr := sf.f.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("destination: %w", err)
		}
	}
	dirs := map[string]bool{}
	for _, sf := range s.files {
		if ok && first == nil {
			if err := os.Rename(sf.f.Name(), sf.path); err != nil {
				first = fmt.Errorf("destination: %w", err)
			}
			dirs[filepath.Dir(sf.path)] = true
		}
		if !ok || first != nil {
			os.Remove(sf.f.Name())
		}
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil && first == nil {
			first = fmt.Errorf("destination: %w", err)
		}
	}
	s.files = map[string]*sinkFile{}
	return first
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
