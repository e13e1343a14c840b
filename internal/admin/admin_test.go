package admin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partita/partita/internal/admin"
	"github.com/partita/partita/internal/kv/pebblekv"
	"github.com/partita/partita/internal/tablestore"
)

func newAdmin(t *testing.T, root string) (*httptest.Server, *pebblekv.DB) {
	t.Helper()
	db, err := pebblekv.Open(t.TempDir(), &pebblekv.Options{MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store, err := tablestore.Open(context.Background(), db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin.New(admin.Options{DB: db, Engine: "pebble", Store: store, BackupRoot: root}))
	t.Cleanup(srv.Close)
	return srv, db
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBackupRootSymlink: a path under the backup root that leads out of
// it through a symbolic link is refused, and nothing is written there.
func TestBackupRootSymlink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	srv, _ := newAdmin(t, root)
	code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+filepath.Join(root, "out", "b")+`"}`)
	if code != http.StatusForbidden || !strings.Contains(body, "is not under the backup root") {
		t.Errorf("backup through a link out of the root: %d %s, want 403", code, body)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written outside the root: %v", entries)
	}
	code, body = do(t, "POST", srv.URL+"/backup", `{"dir":"`+filepath.Join(root, "in", "b")+`"}`)
	if code != http.StatusOK {
		t.Errorf("backup under the root: %d %s", code, body)
	}
}

// TestBackupIntoLink: a symbolic link named as the backup's directory,
// outside the backup root and pointing to an empty directory inside it,
// is not replaced by a backup at the link's own place (outside the root):
// the backup goes where the link points, and the link stays.
func TestBackupIntoLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(root, "empty")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(outside, "loot")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	srv, _ := newAdmin(t, root)
	code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+link+`"}`)
	if code != http.StatusOK {
		t.Fatalf("backup into a link to an empty directory under the root: %d %s", code, body)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link after the backup: %v, %v; want it left a link", fi, err)
	}
	if _, err := os.Stat(filepath.Join(target, pebblekv.StoreVersionFile)); err != nil {
		t.Errorf("the backup is not where the link points: %v", err)
	}
	if !strings.Contains(body, `"`+target+`"`) {
		t.Errorf("the answer %s does not name the directory written, %s", body, target)
	}
}

// TestBackupNameTooLong: a directory name longer than the file system
// allows is the client's mistake: 400, not 500.
func TestBackupNameTooLong(t *testing.T) {
	root := t.TempDir()
	srv, _ := newAdmin(t, root)
	code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+filepath.Join(root, strings.Repeat("n", 300))+`"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "file name too long") {
		t.Errorf("backup into a 300-byte name: %d %s, want 400 naming the cause", code, body)
	}
}

// TestReadyz: ready while the store reads and writes, 503 with the reason
// within about a second (admin.ReadyWindow, with the real clock) once it
// cannot; /healthz answers regardless.
func TestReadyz(t *testing.T) {
	srv, db := newAdmin(t, "")
	if code, body := do(t, "GET", srv.URL+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz on an open store: %d %s", code, body)
	}
	db.Close()
	closed := time.Now()
	for {
		code, body := do(t, "GET", srv.URL+"/readyz", "")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "kv: closed") {
			break
		}
		if code != http.StatusOK || time.Since(closed) > admin.ReadyWindow+time.Second {
			t.Fatalf("readyz on a closed store %v after closing: %d %q, want 503 naming the reason within %v", time.Since(closed), code, body, admin.ReadyWindow)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := do(t, "GET", srv.URL+"/healthz", ""); code != http.StatusOK {
		t.Errorf("healthz: %d", code)
	}
}

// TestBackupRootRelative: a relative --backup-root is the server's working
// directory's, and a backup under it is written.
func TestBackupRootRelative(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir("backups", 0o755); err != nil {
		t.Fatal(err)
	}
	srv, _ := newAdmin(t, "backups")
	code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+filepath.Join(wd, "backups", "b")+`"}`)
	if code != http.StatusOK {
		t.Errorf("backup under a relative root: %d %s", code, body)
	}
	code, body = do(t, "POST", srv.URL+"/backup", `{"dir":"`+filepath.Join(wd, "b")+`"}`)
	if code != http.StatusForbidden {
		t.Errorf("backup outside a relative root: %d %s, want 403", code, body)
	}
}

// TestBackupThroughFile: a path that runs through a regular file is the
// request's fault: 409 naming it, as for a target that is a file, not 500
// as for a failed copy.
func TestBackupThroughFile(t *testing.T) {
	root := t.TempDir()
	srv, _ := newAdmin(t, root)
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "x"), filepath.Join(file, "x", "y")} {
		code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+dir+`"}`)
		if code != http.StatusConflict || !strings.Contains(body, dir) {
			t.Errorf("backup into %s: %d %s, want 409 naming it", dir, code, body)
		}
	}
}

// TestBackupIntoMountPoint: a mount point cannot be replaced by the
// backup's own directory (a freshly mounted empty disk got a 500 "device or
// resource busy"), so it is refused up front, saying what to do. /proc is
// a mount point wherever these tests run.
func TestBackupIntoMountPoint(t *testing.T) {
	srv, _ := newAdmin(t, "")
	code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"/proc"}`)
	if code != http.StatusConflict || !strings.Contains(body, "/proc is a mount point: give a new directory inside it") {
		t.Errorf("backup into /proc: %d %s, want 409 saying it is a mount point", code, body)
	}
}

// TestBackupMode: a backup's directory is no more open than the store's
// (Pebble made it 0755 whatever the data directory's mode), and an empty
// directory given as the target keeps its mode where that is stricter.
func TestBackupMode(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o700); err != nil { // whatever the umask
		t.Fatal(err)
	}
	db, err := pebblekv.Open(data, &pebblekv.Options{MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := tablestore.Open(context.Background(), db, tablestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin.New(admin.Options{DB: db, Engine: "pebble", Store: store}))
	defer srv.Close()
	mode := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	backup := func(dir string) {
		t.Helper()
		if code, body := do(t, "POST", srv.URL+"/backup", `{"dir":"`+dir+`"}`); code != http.StatusOK {
			t.Fatalf("backup into %s: %d %s", dir, code, body)
		}
	}
	out := t.TempDir()
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}

	backup(filepath.Join(out, "new"))
	if m := mode(filepath.Join(out, "new")); m != 0o700 {
		t.Errorf("a backup of a 0700 store: mode %v, want 0700", m)
	}

	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(out, "given")
	if err := os.Mkdir(given, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(given, 0o700)
	backup(given)
	if m := mode(given); m != 0o700 {
		t.Errorf("a backup into an empty 0700 directory: mode %v, want 0700 kept", m)
	}
	backup(filepath.Join(out, "open"))
	if m := mode(filepath.Join(out, "open")); m != 0o755 {
		t.Errorf("a backup of a 0755 store: mode %v, want 0755", m)
	}
}
