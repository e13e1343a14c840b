package tablestore

import (
	"hash/maphash"
	"sync"
)

// tableLocks holds this process's lock of each table name that a request
// is using right now. Entity operations hold a name's lock shared and
// DeleteTable holds it exclusively, so a drop waits for the operations in
// flight on the table.
//
// Names come from clients, so an entry lives only while someone holds or
// waits for it: acquire counts a reference, release drops it, and the last
// release removes the entry. The map never holds more entries than there
// are requests in flight, however many distinct names clients send.
type tableLocks struct {
	seed   maphash.Seed
	shards [32]lockShard
}

type lockShard struct {
	mu sync.Mutex
	m  map[string]*tableLock
}

// tableLock is one name's lock. refs is guarded by the shard's mu.
type tableLock struct {
	sync.RWMutex
	shard *lockShard
	name  string
	refs  int
}

func newTableLocks() *tableLocks {
	t := &tableLocks{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*tableLock)
	}
	return t
}

// acquire returns the lock of the catalog name cn, referenced until the
// matching release.
func (t *tableLocks) acquire(cn string) *tableLock {
	sh := &t.shards[maphash.String(t.seed, cn)%uint64(len(t.shards))]
	sh.mu.Lock()
	l := sh.m[cn]
	if l == nil {
		l = &tableLock{shard: sh, name: cn}
		sh.m[cn] = l
	}
	l.refs++
	sh.mu.Unlock()
	return l
}

// release drops a reference taken by acquire; the caller no longer holds
// or waits for the lock.
func (l *tableLock) release() {
	sh := l.shard
	sh.mu.Lock()
	l.refs--
	if l.refs == 0 {
		delete(sh.m, l.name)
	}
	sh.mu.Unlock()
}

// readUnlock releases a lock taken by Store.readLockTable.
func (l *tableLock) readUnlock() {
	l.RUnlock()
	l.release()
}

// unlock releases a lock taken by Store.lockTable.
func (l *tableLock) unlock() {
	l.Unlock()
	l.release()
}

// len returns the number of names with a lock entry (tests).
func (t *tableLocks) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
