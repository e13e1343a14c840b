package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// checkpoint records, per table, the key ranges of the copy and each
// range's continuation. It is rewritten atomically (temp file, fsync,
// rename) after the destination acknowledged a page, so a copy killed at
// any moment resumes from a state that is never ahead of the destination.
type checkpoint struct {
	path string
	mu   sync.Mutex // guards s and seq
	s    cpState
	seq  uint64 // bumped by every change of s

	// fileMu serializes writing the file, apart from mu, so that parallel
	// ranges record their progress while one of them waits for an fsync;
	// written is the seq of the newest state on disk, so a writer whose
	// state a newer write already covers has nothing to do.
	fileMu  sync.Mutex
	written uint64
}

type cpState struct {
	// Job is a hash of the source, destination and filter (which carry
	// secrets, so they are not written): a checkpoint of another copy is
	// refused rather than misapplied.
	Job    string              `json:"job"`
	Tables map[string]*cpTable `json:"tables"`
	// Refused counts the entities the destination refused and
	// --on-refused skip passed over, in every run of the checkpoint.
	Refused int64 `json:"refused,omitempty"`
}

type cpTable struct {
	Ranges []*rangeState `json:"ranges"`
	Done   bool          `json:"done"`
}

// rangeState is one key range and how far it got.
type rangeState struct {
	Lo     string `json:"lo"`
	Hi     string `json:"hi"`
	NextPK string `json:"nextPartitionKey,omitempty"`
	NextRK string `json:"nextRowKey,omitempty"`
	Done   bool   `json:"done"`
}

// jobID names the copy a checkpoint belongs to: each side's endpoint (its
// service URL, account and, for a table SAS, table), the filter and the
// tables. Credentials are not part of it, so that a copy that outlived its
// SAS, or whose key was rotated, resumes with the new one; nor is how a
// connection string is spelled.
func jobID(o Options) string {
	return hashJob(sideID(o.From), sideID(o.To), o.Filter, strings.Join(o.Tables, "\x00"))
}

// legacyJobID is jobID as releases before 2026-11-27 computed it, from the
// flags' text, credentials included; their checkpoints still resume.
func legacyJobID(o Options) string {
	return hashJob(o.From, o.To, o.Filter, strings.Join(o.Tables, "\x00"))
}

// sideID is what identifies a --from or --to for a checkpoint: an
// endpoint's service URL, account and table, and a SAS's key range (which
// decides what the copy sees, so ranges done under one are not done under
// another), or the text of anything else.
func sideID(spec string) string {
	if !IsEndpoint(spec) {
		return spec
	}
	ep, err := ParseEndpoint(spec)
	if err != nil {
		return spec
	}
	id := "endpoint\x00" + strings.ToLower(ep.Base) + "\x00" + ep.Account + "\x00" + strings.ToLower(ep.Table)
	for _, k := range []string{"spk", "srk", "epk", "erk"} {
		id += "\x00" + ep.sas.Get(k) // nil Values (a key) get ""
	}
	return id
}

func hashJob(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func openCheckpoint(path string, o Options) (*checkpoint, error) {
	cp := &checkpoint{path: path, s: cpState{Job: jobID(o), Tables: map[string]*cpTable{}}}
	// A kill between writing a temporary file and renaming it leaves the
	// temporary file behind; the checkpoint itself is whole either way.
	// Matched by name, not with filepath.Glob: a path with *, ? or [
	// would make a pattern that removes other files. os.CreateTemp puts
	// digits where the pattern has its '*': NAME.tmp123 is a leftover,
	// NAME.tmpl or NAME.tmp-notes someone's file.
	if ents, err := os.ReadDir(filepath.Dir(path)); err == nil {
		prefix := filepath.Base(path) + ".tmp"
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if ok && !e.IsDir() && rest != "" && strings.Trim(rest, "0123456789") == "" {
				os.Remove(filepath.Join(filepath.Dir(path), e.Name()))
			}
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cp, cp.saveLocked()
	}
	if err != nil {
		return nil, fmt.Errorf("--checkpoint: %w", err)
	}
	var s cpState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("--checkpoint %s: not a checkpoint file: %v", path, err)
	}
	if s.Job == legacyJobID(o) {
		s.Job = cp.s.Job // saved in today's form from the next write on
	}
	if s.Job != cp.s.Job {
		return nil, fmt.Errorf("--checkpoint %s: written by a copy of other endpoints, --filter or --tables; remove it to start over", path)
	}
	if s.Tables == nil {
		s.Tables = map[string]*cpTable{}
	}
	for name, t := range s.Tables {
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("--checkpoint %s: table %q: %v; remove the file to start over", path, name, err)
		}
	}
	cp.s = s
	return cp, nil
}

// check refuses the ranges of a table not done that do not cover its key
// space once, end to end: an edited or damaged file whose ranges left a
// gap (or none at all) had the table marked done with a part of it, or
// nothing, copied, and exit 0.
func (t *cpTable) check() error {
	if t == nil {
		return errors.New("no state")
	}
	if t.Done {
		return nil
	}
	if t.Ranges == nil {
		return nil // ranges not recorded yet: they are made anew
	}
	if len(t.Ranges) == 0 {
		return errors.New("no key ranges")
	}
	for i, r := range t.Ranges {
		if r == nil {
			return fmt.Errorf("range %d is empty", i)
		}
		switch {
		case i == 0 && r.Lo != "":
			return fmt.Errorf("the first range starts at %q, not at the start of the table", r.Lo)
		case i > 0 && r.Lo != t.Ranges[i-1].Hi:
			return fmt.Errorf("range %d starts at %q, not where range %d ends (%q)", i, r.Lo, i-1, t.Ranges[i-1].Hi)
		case i == len(t.Ranges)-1 && r.Hi != "":
			return fmt.Errorf("the last range ends at %q, not at the end of the table", r.Hi)
		case i < len(t.Ranges)-1 && r.Hi == "":
			return fmt.Errorf("range %d ends at the end of the table, before range %d", i, i+1)
		}
	}
	return nil
}

func (cp *checkpoint) tableDone(table string) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	t := cp.s.Tables[table]
	return t != nil && t.Done
}

// ranges returns the recorded ranges of table (nil if none).
func (cp *checkpoint) ranges(table string) []*rangeState {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if t := cp.s.Tables[table]; t != nil {
		return t.Ranges
	}
	return nil
}

func (cp *checkpoint) setRanges(table string, rs []*rangeState) error {
	return cp.update(func() { cp.s.Tables[table] = &cpTable{Ranges: rs} })
}

// advance records a range's progress past a page, and the entities of
// that page refused and skipped.
func (cp *checkpoint) advance(table string, r *rangeState, npk, nrk string, done bool, refused int64) error {
	return cp.update(func() { r.NextPK, r.NextRK, r.Done = npk, nrk, done; cp.s.Refused += refused })
}

// refusedTotal is the number of refused entities in every run.
func (cp *checkpoint) refusedTotal() int64 {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.s.Refused
}

func (cp *checkpoint) finishTable(table string) error {
	return cp.update(func() {
		if t := cp.s.Tables[table]; t != nil {
			t.Done = true
		}
	})
}

// update applies change to the state and returns once the file holds it
// (or a newer state): the state is changed and encoded under mu, and
// written under fileMu only, so no range waits for another's fsync while
// holding the state.
func (cp *checkpoint) update(change func()) error {
	cp.mu.Lock()
	change()
	cp.seq++
	seq := cp.seq
	b, err := json.MarshalIndent(&cp.s, "", " ")
	cp.mu.Unlock()
	if err != nil {
		return err
	}
	cp.fileMu.Lock()
	defer cp.fileMu.Unlock()
	if cp.written >= seq {
		return nil // a newer state, which includes this change, is on disk
	}
	if err := cp.write(b); err != nil {
		return err
	}
	cp.written = seq
	return nil
}

// saveLocked writes the whole state (mu held: only while opening).
func (cp *checkpoint) saveLocked() error {
	b, err := json.MarshalIndent(&cp.s, "", " ")
	if err != nil {
		return err
	}
	return cp.write(b)
}

// write replaces the file with b atomically: a temporary file, synced,
// then renamed over it.
func (cp *checkpoint) write(b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(cp.path), filepath.Base(cp.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("--checkpoint: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), cp.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--checkpoint: %w", err)
	}
	return nil
}
