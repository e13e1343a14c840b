package transfer

import (
	"os"
	"path/filepath"
	"testing"
)

// Opening a checkpoint removes its own leftover temporary files and no
// others, even when its name holds glob characters.
func TestCheckpointRemovesOnlyItsTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c*.json")
	stale := path + ".tmp123"
	other := filepath.Join(dir, "cx.json.tmp456")
	for _, f := range []string{stale, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openCheckpoint(path, Options{From: "a", To: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file left: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file was removed: %v", err)
	}
}
