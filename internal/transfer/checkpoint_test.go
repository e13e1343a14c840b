package transfer

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Opening a checkpoint removes its own leftover temporary files and no
// others, even when its name holds glob characters.
func TestCheckpointRemovesOnlyItsTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c*.json")
	stale := path + ".tmp123"
	others := []string{filepath.Join(dir, "cx.json.tmp456"), path + ".tmpl", path + ".tmp-notes.txt", path + ".tmp"}
	for _, f := range append([]string{stale}, others...) {
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
	for _, other := range others {
		if _, err := os.Stat(other); err != nil {
			t.Errorf("another file was removed: %v", err)
		}
	}
}

// TestCheckpointConcurrentAdvances: ranges record their progress from many
// goroutines at once (writes of states a newer write covers are skipped);
// when every call has returned, the file holds each range's last position.
func TestCheckpointConcurrentAdvances(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck")
	o := Options{From: "a", To: "b"}
	cp, err := openCheckpoint(path, o)
	if err != nil {
		t.Fatal(err)
	}
	const ranges, steps = 8, 40
	rs := make([]*rangeState, ranges)
	for i := range rs {
		rs[i] = &rangeState{Lo: fmt.Sprint(i)}
	}
	if err := cp.setRanges("t", rs); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := 1; s <= steps; s++ {
				if err := cp.advance("t", r, fmt.Sprintf("p%d-%03d", i, s), "", s == steps); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	again, err := openCheckpoint(path, o)
	if err != nil {
		t.Fatal(err)
	}
	got := again.ranges("t")
	if len(got) != ranges {
		t.Fatalf("%d ranges on disk, want %d", len(got), ranges)
	}
	for i, r := range got {
		if want := fmt.Sprintf("p%d-%03d", i, steps); r.NextPK != want || !r.Done {
			t.Errorf("range %d on disk: next %q done %v, want %q done", i, r.NextPK, r.Done, want)
		}
	}
}
