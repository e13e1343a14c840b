package tablestore_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/tablestore"
)

// stallFS holds the write-ahead log's syncs while armed.
type stallFS struct {
	vfs.FS
	armed atomic.Bool
	gate  chan struct{}
}

type stallFile struct {
	vfs.File
	fs *stallFS
}

func (f *stallFile) wait() {
	if f.fs.armed.Load() {
		<-f.fs.gate
	}
}
func (f *stallFile) Sync() error                  { f.wait(); return f.File.Sync() }
func (f *stallFile) SyncData() error              { f.wait(); return f.File.SyncData() }
func (f *stallFile) SyncTo(n int64) (bool, error) { f.wait(); return f.File.SyncTo(n) }

func (fs *stallFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &stallFile{File: f, fs: fs}, nil
}
func (fs *stallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}
func (fs *stallFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(o, n, c)
	return fs.wrap(n, f, err)
}

// TestETagSeenBeforeSyncNotReissued: Pebble publishes a commit before its
// log sync returns, so a Get Entity in that window hands the client the
// new version's ETag. A power cut then loses the version; a restart with
// the clock set back must still not give the entity that ETag again, so
// the ceiling covering it must have been durable before it was handed out
// (a ceiling written unsynced ahead of the write, as first built, was lost
// with it, and the restart counted from an older one).
func TestETagSeenBeforeSyncNotReissued(t *testing.T) {
	// The clock moves on into the last half of the ceiling's step (a raise
	// starts in the background; the write goes on under the synced
	// ceiling), or past it (the write must wait for a raise's sync).
	for _, tc := range []struct {
		name    string
		off     time.Duration
		visible bool // the write must be seen before its sync
	}{
		{"InsideTheStep", time.Second + 500, true},
		{"PastTheCeiling", 3 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testETagSeenBeforeSync(t, tc.off, tc.visible) })
	}
}

func testETagSeenBeforeSync(t *testing.T, move time.Duration, mustSee bool) {
	var off atomic.Int64
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return base.Add(time.Duration(off.Load())) }
	mem := vfs.NewCrashableMem()
	sfs := &stallFS{FS: mem, gate: make(chan struct{})}
	s, closeStore := clockStore(t, sfs, now)
	if _, err := s.CreateTable(ctx, "acct", "etags"); err != nil {
		t.Fatal(err)
	}
	key := partita.Key{PartitionKey: "p", RowKey: "r"}
	putKey := func(s *tablestore.Store, rk, v string) int64 {
		res, err := s.Write(ctx, "acct", "etags", partita.Op{Kind: partita.OpInsertOrReplace, Entity: &partita.Entity{PartitionKey: "p", RowKey: rk, Properties: []partita.Property{{Name: "v", Value: edm.StringValue(v)}}}})
		if err != nil {
			t.Error(err)
		}
		return res.Timestamp
	}
	put := func(s *tablestore.Store, v string) int64 { return putKey(s, "r", v) }
	t1 := put(s, "one") // synced, and a ceiling ahead of it

	off.Store(int64(move))
	sfs.armed.Store(true) // the log's syncs are held
	var wg sync.WaitGroup
	// A write of another entity first: it starts whatever raise the
	// clock calls for, and the watched write follows while that raise's
	// sync is held.
	wg.Add(2)
	go func() { defer wg.Done(); putKey(s, "other", "x") }()
	time.Sleep(50 * time.Millisecond)
	go func() { defer wg.Done(); put(s, "two") }()
	var seen int64
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e, err := s.GetEntity(ctx, "acct", "etags", key)
		if err != nil {
			t.Fatal(err)
		}
		if e.Timestamp != t1 {
			seen = e.Timestamp
			break
		}
	}
	switch {
	case seen == 0 && mustSee:
		t.Fatal("the second write never became visible: the test shows nothing")
	case seen == 0:
		t.Log("the second write waits for the ceiling's sync, unseen")
	default:
		t.Logf("a reader got ETag ticks %d (v=two) while its log's sync was pending", seen)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{}) // the power goes: only what was synced
	sfs.armed.Store(false)
	close(sfs.gate)
	wg.Wait()
	closeStore()

	off.Store(-int64(time.Hour)) // restarted with the clock an hour back
	s, closeStore = clockStore(t, crashed, now)
	defer closeStore()
	if seen == 0 {
		return
	}
	if ts := put(s, "three"); ts <= seen {
		t.Fatalf("after the restart the entity got ticks %d (v=three), not above %d, the ETag a client read for v=two", ts, seen)
	}
}
