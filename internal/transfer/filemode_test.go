//go:build unix

package transfer

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestExportFileMode: an export's files get what the umask leaves of
// 0666, as os.Create's do (they were made 0644 whatever the umask), and
// a file the export replaces keeps its mode (a 0600 file became 0644).
func TestExportFileMode(t *testing.T) {
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/devstoreaccount1/Tables" && r.URL.Query().Get("$top") == "":
			jsonReply(w, `{"value":[{"TableName":"modes"}]}`)
		case r.URL.Path == "/devstoreaccount1/modes()":
			jsonReply(w, `{"value":[{"PartitionKey":"p","RowKey":"r","x":1}]}`)
		default:
			return false
		}
		return true
	})
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	mode := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	dir := t.TempDir()
	if err := runCopy(t, Options{From: src, To: dir}); err != nil {
		t.Fatal(err)
	}
	if m := mode(filepath.Join(dir, "modes.jsonl")); m != 0o600 {
		t.Errorf("umask 077, a new file: mode %v, want 0600", m)
	}

	syscall.Umask(0o022)
	file := filepath.Join(t.TempDir(), "one.jsonl")
	if err := runCopy(t, Options{From: src, To: file}); err != nil {
		t.Fatal(err)
	}
	if m := mode(file); m != 0o644 {
		t.Errorf("umask 022, a new file: mode %v, want 0644", m)
	}
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := runCopy(t, Options{From: src, To: file}); err != nil {
		t.Fatal(err)
	}
	if m := mode(file); m != 0o640 {
		t.Errorf("a 0640 file replaced: mode %v, want 0640 kept", m)
	}
}
