package transfer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	for i := range rs { // end to end, as openCheckpoint requires
		rs[i] = &rangeState{}
		if i > 0 {
			rs[i].Lo = fmt.Sprint(i)
		}
		if i < ranges-1 {
			rs[i].Hi = fmt.Sprint(i + 1)
		}
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
				if err := cp.advance("t", r, fmt.Sprintf("p%d-%03d", i, s), "", s == steps, 1); err != nil {
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
	if n := again.refusedTotal(); n != ranges*steps {
		t.Errorf("%d refusals on disk, want %d (one a page)", n, ranges*steps)
	}
}

// TestCheckpointRangesCoverTheTable: a checkpoint whose ranges of a table
// not done leave a gap, or are none, is refused (an edited one had the
// table marked done with part of it, or nothing, copied, and exit 0);
// ranges end to end, and a table done, are taken.
func TestCheckpointRangesCoverTheTable(t *testing.T) {
	o := Options{From: "a", To: "b"}
	for _, c := range []struct {
		tables string
		ok     bool
	}{
		{`{"t":{"ranges":[{"lo":"","hi":""}],"done":false}}`, true},
		{`{"t":{"ranges":[{"lo":"","hi":"p5"},{"lo":"p5","hi":""}],"done":false}}`, true},
		{`{"t":{"ranges":[],"done":true}}`, true},
		{`{"t":{"done":false}}`, true},
		{`{"t":{"ranges":[],"done":false}}`, false},
		{`{"t":{"ranges":[{"lo":"p12","hi":"p25"}],"done":false}}`, false},
		{`{"t":{"ranges":[{"lo":"","hi":"p5"},{"lo":"p6","hi":""}],"done":false}}`, false},
		{`{"t":{"ranges":[{"lo":"","hi":""},{"lo":"","hi":""}],"done":false}}`, false},
		{`{"t":{"ranges":[null],"done":false}}`, false},
		{`{"t":null}`, false},
	} {
		path := filepath.Join(t.TempDir(), "ck")
		body := fmt.Sprintf(`{"job":%q,"tables":%s}`, jobID(o), c.tables)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := openCheckpoint(path, o)
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.tables, err, c.ok)
		}
	}
}

// TestCheckpointIdentityIgnoresCredentials: a copy whose SAS expired, or
// whose key was rotated, resumes with the new credential, however its
// connection string is spelled; another endpoint, account, table SAS or
// SAS key range does not; a checkpoint of the earlier releases (keyed by the flags' text)
// still resumes.
func TestCheckpointIdentityIgnoresCredentials(t *testing.T) {
	const keyA, keyB = "a2V5QQ==", "a2V5Qg=="
	conn := func(key, tail string) string {
		return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key + ";TableEndpoint=http://127.0.0.1:1/devstoreaccount1" + tail
	}
	sas := func(sig string) string {
		return "http://127.0.0.1:2/devstoreaccount1?sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00:00:00Z&sig=" + sig
	}
	first := Options{From: conn(keyA, ";"), To: sas("c2lnQQ%3D%3D"), Tables: []string{"t"}}
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"the same flags", first, true},
		{"new key, no final ';', new SAS", Options{From: conn(keyB, ""), To: sas("c2lnQg%3D%3D"), Tables: []string{"t"}}, true},
		{"a SAS instead of the key", Options{From: "http://127.0.0.1:1/devstoreaccount1?sv=2019-02-02&ss=t&srt=sco&sp=rl&se=2030-01-01T00:00:00Z&sig=eA%3D%3D", To: first.To, Tables: []string{"t"}}, true},
		{"another source port", Options{From: strings.Replace(first.From, ":1/", ":3/", 1), To: first.To, Tables: []string{"t"}}, false},
		{"another destination account", Options{From: first.From, To: strings.Replace(first.To, "devstoreaccount1", "otheraccount", 1), Tables: []string{"t"}}, false},
		{"another table", Options{From: first.From, To: first.To, Tables: []string{"u"}}, false},
	} {
		path := filepath.Join(t.TempDir(), "ck")
		if _, err := openCheckpoint(path, first); err != nil {
			t.Fatal(err)
		}
		_, err := openCheckpoint(path, tc.o)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
	}

	// Table SASes of key ranges: a new signature of the same range
	// resumes, another range does not (what was done under one is not
	// what the other sees).
	ranged := func(epk, sig string) Options {
		return Options{From: "http://127.0.0.1:1/devstoreaccount1?sv=2019-02-02&tn=tab&spk=a&epk=" + epk + "&sp=r&se=2030-01-01T00:00:00Z&sig=" + sig, To: first.To, Tables: []string{"tab"}}
	}
	path := filepath.Join(t.TempDir(), "ck")
	if _, err := openCheckpoint(path, ranged("m", "eA%3D%3D")); err != nil {
		t.Fatal(err)
	}
	if _, err := openCheckpoint(path, ranged("m", "eQ%3D%3D")); err != nil {
		t.Errorf("the same range, newly signed: %v", err)
	}
	if _, err := openCheckpoint(path, ranged("z", "eQ%3D%3D")); err == nil {
		t.Error("another key range resumed the checkpoint")
	}

	path = filepath.Join(t.TempDir(), "ck")
	body := fmt.Sprintf(`{"job":%q,"tables":{"t":{"ranges":[{"lo":"","hi":"","nextPartitionKey":"p7"}],"done":false}}}`, legacyJobID(first))
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cp, err := openCheckpoint(path, first)
	if err != nil {
		t.Fatalf("a checkpoint of an earlier release: %v", err)
	}
	if r := cp.ranges("t"); len(r) != 1 || r[0].NextPK != "p7" {
		t.Errorf("its ranges: %+v", r)
	}
}
