// Package admin is partita's administrative HTTP handler, served on a
// listener of its own (serve --admin-addr, loopback by default):
//
//	GET  /healthz  200 while the process runs
//	GET  /readyz   200 when the store answers a real read and a synced
//	               write, 503 with the reason otherwise; calls at the same
//	               time share one probe, and its answer serves the calls
//	               of the next second (ReadyWindow), so a client
//	               hammering the unauthenticated listener makes at most
//	               about one synced write a second
//	POST /backup   an online backup of the embedded store into a directory
//
// The listener is not authenticated: anyone who can reach it can make the
// server write a copy of every table into any directory the server may
// write (or under Options.BackupRoot only). It is meant for the machine's
// own operators, hence loopback. The server (cmd/partita's operatorOnly)
// refuses what a web page the operator has open could make a browser
// send: writes carrying Origin, and loopback requests under another name
// (DNS rebinding).
//
// POST /backup takes {"dir": "/absolute/path"}. The directory must not
// exist or must be empty; its parents are created. A relative path is
// refused: the server's working directory is not the caller's (partita
// backup makes --to absolute against its own). The answer is 200 with
// {"dir", "seconds", "bytes"} once the copy is complete and synced, or an
// error status with {"error": "..."}: 400 for a malformed request or a
// directory inside the store's own, 403
// for a directory outside the backup root, 409 for a directory that is
// not empty, a path through a file, or a backup already running, 501 for an engine that has no
// online backup, 500 for a failed copy (which leaves no directory
// behind).
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/partita/partita/internal/kv"
)

// Prober answers a real read and write of the store (tablestore.Store).
type Prober interface {
	Probe(ctx context.Context) error
}

// Options configure the handler.
type Options struct {
	// DB is the storage engine; backups need it to be a kv.Checkpointer.
	DB kv.DB
	// Engine names the engine in messages: "pebble", "mem", "postgres".
	Engine string
	// Store answers /readyz.
	Store Prober
	// BackupRoot, when set, is the only directory under which backups
	// may be written.
	BackupRoot string
	// StoreDirs are the store's own directories (data, write-ahead log):
	// no backup may be written inside them.
	StoreDirs []string
	// Logger records backups. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of /readyz's window. Default time.Now.
	Now func() time.Time
}

// ReadyWindow is how long the answer of one /readyz probe, ready or not,
// serves later calls: a store that stops writing turns /readyz not-ready
// within about that long.
const ReadyWindow = time.Second

// readyTimeout bounds one probe.
const readyTimeout = 5 * time.Second

// BackupRequest is the body of POST /backup.
type BackupRequest struct {
	Dir string `json:"dir"`
}

// BackupResult is the answer to a successful POST /backup.
type BackupResult struct {
	Dir     string  `json:"dir"`
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"` // the size of the files in Dir (hard links count in full)
}

// ErrorBody is the answer to every failed request.
type ErrorBody struct {
	Error string `json:"error"`
}

type handler struct {
	o       Options
	mux     *http.ServeMux
	backing sync.Mutex // one backup at a time
	ready   readiness
}

// readiness runs one probe at a time for /readyz and keeps the last
// answer for ReadyWindow.
type readiness struct {
	mu     sync.Mutex
	flight *probe // running, or nil
	last   *probe // the latest finished, or nil
	joined int    // calls that waited on a probe another started (tests)
}

type probe struct {
	done  chan struct{} // closed when err is set
	err   error
	start time.Time
}

// check answers whether the store is ready: the last probe's answer if it
// started less than ReadyWindow ago, else the running probe's, else a new
// probe's. The probe does not run under ctx, which only bounds this call's
// wait, so one caller that gives up does not fail the others.
func (h *handler) check(ctx context.Context) error {
	rd := &h.ready
	now := h.o.Now()
	rd.mu.Lock()
	if l := rd.last; l != nil {
		if age := now.Sub(l.start); age >= 0 && age < ReadyWindow {
			rd.mu.Unlock()
			return l.err
		}
	}
	p := rd.flight
	if p == nil {
		p = &probe{done: make(chan struct{}), start: now}
		rd.flight = p
		go h.run(p)
	} else {
		rd.joined++
	}
	rd.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *handler) run(p *probe) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	err := h.o.Store.Probe(ctx)
	rd := &h.ready
	rd.mu.Lock()
	p.err = err
	rd.last, rd.flight = p, nil
	rd.mu.Unlock()
	close(p.done)
}

// New returns the admin handler.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handler{o: o, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	h.mux.HandleFunc("GET /readyz", h.readyz)
	h.mux.HandleFunc("POST /backup", h.backup)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := h.check(ctx); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, ErrorBody{Error: fmt.Sprintf(format, args...)})
}

func (h *handler) backup(w http.ResponseWriter, r *http.Request) {
	var req BackupRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, `the body must be JSON {"dir": "/absolute/path"}: %v`, err)
		return
	}
	cp, ok := h.o.DB.(kv.Checkpointer)
	if !ok {
		switch h.o.Engine {
		case "postgres":
			fail(w, http.StatusNotImplemented, "the PostgreSQL engine has no online backup of partita's: back the database up with PostgreSQL's own tools (pg_basebackup, pg_dump; see docs/SCALE-OUT.md), or export tables with partita copy")
		default:
			fail(w, http.StatusNotImplemented, "the %s engine has no online backup: only the embedded Pebble store (--store pebble) has one", h.o.Engine)
		}
		return
	}
	dir := req.Dir
	switch {
	case dir == "":
		fail(w, http.StatusBadRequest, `the body must name a directory: {"dir": "/absolute/path"}`)
		return
	case strings.ContainsRune(dir, 0):
		fail(w, http.StatusBadRequest, "the directory %q contains a NUL byte", dir)
		return
	case !filepath.IsAbs(dir):
		fail(w, http.StatusBadRequest, "the directory %q is relative: give an absolute path (the server's working directory is not yours)", dir)
		return
	}
	// Every check and the checkpoint itself see one path, symbolic links
	// followed: a link named as the target would otherwise pass the
	// checks as where it points, then be removed as an empty directory
	// and replaced by the backup at the link's own place, outside
	// --backup-root. A backup "into" a link goes where the link points.
	dir, err := resolve(filepath.Clean(dir))
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	for _, sd := range h.o.StoreDirs {
		if sd != "" && (under(sd, dir) == nil || sameDir(sd, dir)) {
			fail(w, http.StatusBadRequest, "the directory %s is inside the store's own directory %s: write the backup elsewhere", dir, sd)
			return
		}
	}
	if h.o.BackupRoot != "" {
		if err := under(h.o.BackupRoot, dir); err != nil {
			fail(w, http.StatusForbidden, "%v", err)
			return
		}
	}
	if !h.backing.TryLock() {
		fail(w, http.StatusConflict, "a backup is already running; try again when it ends")
		return
	}
	defer h.backing.Unlock()
	// An empty directory given as the target is replaced by the backup
	// (claim), which keeps its mode where that is the stricter: made 0700
	// for the backup, it became 0755.
	var keep os.FileMode
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		keep = fi.Mode().Perm()
	}
	if err := claim(dir); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, errNotEmpty) || errors.Is(err, errNotDir) || errors.Is(err, errParentNotDir) || errors.Is(err, errMountPoint):
			status = http.StatusConflict
		case errors.Is(err, syscall.ENAMETOOLONG):
			status = http.StatusBadRequest // the path the client gave
		}
		fail(w, status, "%v", err)
		return
	}
	start := time.Now()
	if err := cp.Checkpoint(r.Context(), dir); err != nil {
		h.o.Logger.Error("backup failed", "dir", dir, "err", err)
		fail(w, http.StatusInternalServerError, "backup into %s failed: %v", dir, err)
		return
	}
	if keep != 0 {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&^keep != 0 {
			if err := os.Chmod(dir, fi.Mode().Perm()&keep); err != nil {
				h.o.Logger.Error("backup written, its directory's mode not restored", "dir", dir, "err", err)
				fail(w, http.StatusInternalServerError, "backup into %s written, but its mode was not restored to %v: %v", dir, keep, err)
				return
			}
		}
	}
	secs := time.Since(start).Seconds()
	size := dirSize(dir)
	h.o.Logger.Info("backup written", "dir", dir, "seconds", secs, "bytes", size)
	writeJSON(w, http.StatusOK, BackupResult{Dir: dir, Seconds: secs, Bytes: size})
}

var (
	errNotEmpty = errors.New("is not empty: a backup goes into a new or empty directory")
	errNotDir   = errors.New("exists and is not a directory")
	// errParentNotDir: a file stands where the path needs a directory,
	// as in /backups/file/x; the request's fault, not a failed copy.
	errParentNotDir = errors.New("cannot be a directory: a part of its path is a file")
	// errMountPoint: a checkpoint creates its directory, so a backup
	// replaces an empty target, which a mount point cannot be.
	errMountPoint = errors.New("is a mount point: give a new directory inside it (a backup creates its own directory)")
)

// claim makes dir ready for a checkpoint, which must create it: an
// absent directory is left absent, an empty one is removed.
func claim(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%s %w", dir, errParentNotDir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %w", dir, errNotDir)
	}
	if isMountPoint(dir) {
		return fmt.Errorf("%s %w", dir, errMountPoint)
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if len(names) > 0 {
		return fmt.Errorf("%s %w", dir, errNotEmpty)
	}
	if err != nil && err != io.EOF {
		return err
	}
	if err := os.Remove(dir); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			// A mount point isMountPoint cannot see (a bind mount of
			// the same device).
			return fmt.Errorf("%s %w", dir, errMountPoint)
		}
		return err
	}
	return nil
}

// under checks that dir is inside root, following the symbolic links of
// the part of dir that exists.
func under(root, dir string) error {
	r, err := filepath.EvalSymlinks(root)
	if err == nil {
		// A relative root (--backup-root) is the server's working
		// directory's; dir is absolute, and Rel of the two would fail.
		r, err = filepath.Abs(r)
	}
	if err != nil {
		return fmt.Errorf("the backup root %s: %v", root, err)
	}
	resolved, err := resolve(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(r, resolved)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("the directory %s is not under the backup root %s (--backup-root)", dir, root)
	}
	return nil
}

// resolve returns dir with the symbolic links of its existing part
// followed: the directory a checkpoint into dir would write.
func resolve(dir string) (string, error) {
	existing, rest := dir, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("the directory %s: %v", dir, err)
	}
	return filepath.Join(resolved, rest), nil
}

// sameDir reports whether a and b name the same existing directory.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
