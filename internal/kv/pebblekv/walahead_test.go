package pebblekv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita/internal/kv"
)

// syncSizeFS counts the syncs of write-ahead logs, and those that found
// the log's size changed since its previous sync: each of those commits
// the size too (a journal commit on ext4), which is what walFile's zeroing
// ahead saves.
type syncSizeFS struct {
	vfs.FS
	mu          sync.Mutex
	syncs, grew int
}

func (fs *syncSizeFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs *syncSizeFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (fs *syncSizeFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isWAL(name) {
		return f, err
	}
	f2 := &syncSizeFile{File: f, fs: fs}
	if st, err := f.Stat(); err == nil {
		f2.last = st.Size()
	}
	return f2, nil
}

type syncSizeFile struct {
	vfs.File
	fs   *syncSizeFS
	last int64
}

func (f *syncSizeFile) count() {
	st, err := f.File.Stat()
	if err != nil {
		return
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.syncs++
	if st.Size() != f.last {
		f.fs.grew++
		f.last = st.Size()
	}
}

func (f *syncSizeFile) SyncData() error { err := f.File.SyncData(); f.count(); return err }
func (f *syncSizeFile) Sync() error     { err := f.File.Sync(); f.count(); return err }

// TestWALSyncsRarelyGrowTheLog: single synced writes, one after another,
// sync the write-ahead log once each; the log is zeroed ahead a MiB at a
// time, so only about one sync per MiB finds its size changed (before,
// every one did). A crash then leaves the newest log with a zeroed tail,
// and every synced write is read back from it.
func TestWALSyncsRarelyGrowTheLog(t *testing.T) {
	mem := vfs.NewCrashableMem()
	fs := &syncSizeFS{FS: mem}
	db, err := Open("db", &Options{FS: fs, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	value := bytes.Repeat([]byte("v"), 1024)
	for i := 0; i < n; i++ {
		key := fmt.Appendf(nil, "k%06d", i)
		if err := db.Update(context.Background(), func(tx kv.Txn) error { return tx.Set(key, value) }); err != nil {
			t.Fatal(err)
		}
	}
	fs.mu.Lock()
	syncs, grew := fs.syncs, fs.grew
	fs.mu.Unlock()
	// ~3.2 MiB of log: a few extensions, plus the syncs of opening.
	t.Logf("%d syncs, %d grew", syncs, grew)
	if maxGrew := n*1100/(1<<20) + 6; syncs < n || grew > maxGrew {
		t.Fatalf("%d write-ahead log syncs for %d synced writes, %d of them found the log grown; want at least %d syncs, at most %d grown", syncs, n, grew, n, maxGrew)
	}

	// The power goes: only what was synced survives.
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	db.Close()
	names, err := crashed.List("db")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var newest string
	for _, name := range names {
		if isWAL(name) {
			newest = name
		}
	}
	if newest == "" {
		t.Fatalf("no write-ahead log in %v", names)
	}
	f, err := crashed.Open(crashed.PathJoin("db", newest))
	if err != nil {
		t.Fatal(err)
	}
	log, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(log) < 64<<10 || !bytes.Equal(log[len(log)-64<<10:], make([]byte, 64<<10)) {
		t.Fatalf("the newest log %s (%d bytes) does not end in zeros: the recovery below would not read over a zeroed tail", newest, len(log))
	}
	db, err = Open("db", &Options{FS: crashed, MinFreeBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	defer db.Close()
	err = db.View(context.Background(), func(r kv.Reader) error {
		for i := 0; i < n; i++ {
			got, err := r.Get(fmt.Appendf(nil, "k%06d", i))
			if err != nil {
				return fmt.Errorf("k%06d: %w", i, err)
			}
			if !bytes.Equal(got, value) {
				return fmt.Errorf("k%06d: %d bytes, not the value written", i, len(got))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after the crash: %v", err)
	}
}
