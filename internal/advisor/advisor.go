// Package advisor watches live traffic and flags the key-design
// anti-patterns of the table design guide and of the PartitionKey best
// practices (../shared/seeds): hot partitions, keys that only increase,
// table scans and partition scans where a range would serve, very large
// partitions and entities near the size limit. It also keeps a heat map:
// the busiest partitions of each table over the last minutes.
//
// Memory is bounded whatever clients send: at most MaxTables tables are
// tracked (the least recently used is dropped once it has been idle for
// IdleGrace; until then a table beyond them is not tracked), at most
// AccountTables of them for one account, and per table a few
// one-minute buckets, each with top-k sketches (the space-saving
// algorithm) of partitions by requests and by writes, and fixed-size
// counters. Partition keys are kept only in those sketches and in small
// fixed-size maps, and never become metric labels.
package advisor

import (
	"hash/maphash"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Options configure an Advisor. Zero values take the defaults.
type Options struct {
	// MaxTables bounds the tables tracked (default 256); past it a table
	// is tracked once one of them has been idle for IdleGrace.
	MaxTables int
	// AccountTables bounds the tables one account may have tracked (0:
	// MaxTables, no bound of its own). When several accounts share a
	// server, it keeps one account's many busy tables from holding every
	// place: past it, the account's own least recently used table gives
	// its place once idle for IdleGrace, and no other account's does.
	AccountTables int
	// TopK is the number of partitions each sketch keeps (default 16).
	TopK int
	// Bucket is the length of one time bucket (default 1 minute) and
	// Buckets their number (default 5): findings and the heat map cover
	// the last Bucket*Buckets.
	Bucket  time.Duration
	Buckets int
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time

	// MinWrites is the number of writes in the window before write
	// findings are made (default 1000); MinQueries the same for queries
	// (default 50).
	MinWrites  int64
	MinQueries int64
	// HotShare is the share of a table's writes one partition must take
	// to be hot (default 0.5).
	HotShare float64
	// AppendShare is the share of inserts that must land at the end of
	// the key order for keys to count as only increasing (default 0.9).
	AppendShare float64
	// ScanShare is the share of a table's queries that table scans must
	// make to be flagged (default 0.1), ScanRatio the entities examined
	// per entity returned above which a scan is wasteful (default 10).
	ScanShare float64
	ScanRatio float64
	// LargePartition is the number of entities from which a partition
	// is very large (default 100000).
	LargePartition int64
	// NearLimit is the entity size, in bytes as the service counts them,
	// from which an entity is near the 1 MiB limit (default 90% of it).
	NearLimit int
}

func (o *Options) defaults() {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.MaxTables <= 0 {
		o.MaxTables = DefaultMaxTables
	}
	if o.AccountTables <= 0 || o.AccountTables > o.MaxTables {
		o.AccountTables = o.MaxTables
	}
	if o.TopK <= 0 {
		o.TopK = 16
	}
	if o.Bucket <= 0 {
		o.Bucket = time.Minute
	}
	if o.Buckets <= 0 {
		o.Buckets = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	def(&o.MinWrites, 1000)
	def(&o.MinQueries, 50)
	deff(&o.HotShare, 0.5)
	deff(&o.AppendShare, 0.9)
	deff(&o.ScanShare, 0.1)
	deff(&o.ScanRatio, 10)
	def(&o.LargePartition, 100000)
	if o.NearLimit <= 0 {
		o.NearLimit = 1 << 20 * 9 / 10
	}
}

// DefaultMaxTables is Options.MaxTables' default.
const DefaultMaxTables = 256

// MaxEntitySize is the service's entity size limit.
const MaxEntitySize = 1 << 20

// Query classes, in odata.Class order.
const (
	ClassPoint = iota
	ClassRange
	ClassPartition
	ClassTable
	numClasses
)

// sideMaps bounds the per-table maps of partitions (last RowKey per
// partition, open partition scans).
const sideMaps = 64

// Advisor tracks traffic by table. A nil *Advisor records nothing.
type Advisor struct {
	o Options
	// tables is read without a lock (an immutable map, replaced whole
	// under mu when a table is added or dropped: rare next to lookups).
	mu     sync.Mutex
	tables atomic.Pointer[map[tableID]*table]
	// full is, while MaxTables are tracked, the earliest time (unix
	// nanoseconds) at which the least recently used of them may have
	// been idle IdleGrace: before it, a table not tracked stays so
	// without taking mu. accountFull is the same for each account that
	// has AccountTables tracked (an immutable map replaced under mu, with
	// an entry per account that ever filled its part: the server's
	// configured accounts, no more).
	full        atomic.Int64
	accountFull atomic.Pointer[map[string]*atomic.Int64]
}

// IdleGrace is how long a tracked table must go without traffic before a
// table not tracked may take its place. Without it, traffic spread over
// more than MaxTables tables made nearly every request evict a table and
// copy the table map (~70 µs and 32 KiB, under the Advisor's lock), and
// kept no table long enough to judge it; with it, at most MaxTables
// tables are let in per IdleGrace, and the tables tracked keep their
// figures while they are in use.
const IdleGrace = 5 * time.Second

type tableID struct{ account, table string }

// New returns an Advisor.
func New(o Options) *Advisor {
	o.defaults()
	a := &Advisor{o: o}
	m := make(map[tableID]*table)
	a.tables.Store(&m)
	return a
}

type table struct {
	mu   sync.Mutex
	id   tableID      // its name folded, as the store keys tables
	name string       // its name as first seen, for reports
	used atomic.Int64 // last use, unix nanoseconds: for the LRU
	ring []bucket

	maxPK  string
	havePK bool
	// lastRK holds the greatest RowKey inserted into a partition, and
	// scans the entities examined so far by a partition's scan, each in
	// a direct-mapped cache of sideMaps slots (a partition evicts the one
	// sharing its slot).
	lastRK  [sideMaps]rkSlot
	scans   [sideMaps]scanSlot
	largest []partSize // the largest partitions seen by scans, at most 8, largest first
}

type partSize struct {
	pk string
	n  int64
	at int64 // when a scan last saw it this large, unix nanoseconds
}

type bucket struct {
	slot            int64 // unix time / Bucket; 0 when unused
	requests        sketch
	writes          sketch
	nRequests       int64
	nWrites         int64
	inserts         int64 // writes that add a key: insert, upserts
	pkTail, pkAdv   int64 // inserts at or past the greatest PartitionKey; past it
	rkSeen, rkUp    int64 // inserts into a tracked partition; with a greater RowKey
	queries         [numClasses]int64
	examined        [numClasses]int64
	returned        [numClasses]int64
	nearLimit       int64
	maxEntity       int
	nearLimitSample string // a partition of a near-limit entity
}

// table finds or makes the state of a table. When MaxTables are tracked,
// the least recently used one gives its place if it has been idle for
// IdleGrace; else table returns nil: this table is not tracked.
func (a *Advisor) table(account, name string, now int64) *table {
	id := tableID{account, foldName(name)}
	if t := (*a.tables.Load())[id]; t != nil {
		if now-t.used.Load() > int64(time.Second) { // the LRU needs no finer clock
			t.used.Store(now)
		}
		return t
	}
	if now < a.full.Load() {
		return nil
	}
	if m := a.accountFull.Load(); m != nil {
		if f := (*m)[account]; f != nil && now < f.Load() {
			return nil
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := *a.tables.Load()
	if t := cur[id]; t != nil {
		return t
	}
	// The least recently used table of all, and of this account.
	const never = int64(1<<63 - 1)
	old, mineOld := never, never
	var oldID, mineOldID tableID
	mine := 0
	for k, v := range cur {
		u := v.used.Load()
		if u < old {
			old, oldID = u, k
		}
		if k.account == account {
			mine++
			if u < mineOld {
				mineOld, mineOldID = u, k
			}
		}
	}
	evict := true
	switch {
	case mine >= a.o.AccountTables:
		// The account's part is full: only its own tables give way.
		if now-mineOld < int64(IdleGrace) {
			a.accountFullFrom(account, mineOld+int64(IdleGrace))
			return nil
		}
		oldID = mineOldID
	case len(cur) >= a.o.MaxTables:
		if now-old < int64(IdleGrace) {
			// Uses only move forward: no table can be idle long
			// enough before then.
			a.full.Store(old + int64(IdleGrace))
			return nil
		}
	default:
		evict = false
	}
	next := make(map[tableID]*table, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	if evict {
		delete(next, oldID)
	}
	t := &table{id: tableID{strings.Clone(account), strings.Clone(id.table)}, name: strings.Clone(name), ring: make([]bucket, a.o.Buckets)}
	t.used.Store(now)
	next[t.id] = t
	a.tables.Store(&next)
	return t
}

// accountFullFrom records that no table of account's is idle enough to
// give its place before at; a.mu is held.
func (a *Advisor) accountFullFrom(account string, at int64) {
	m := a.accountFull.Load()
	if m != nil {
		if f := (*m)[account]; f != nil {
			f.Store(at)
			return
		}
	}
	f := new(atomic.Int64)
	f.Store(at)
	next := map[string]*atomic.Int64{strings.Clone(account): f}
	if m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	a.accountFull.Store(&next)
}

// foldName is a table name as the store keys it: table names are
// case-insensitive, so "Orders" and "orders" are one table here too, and
// a client cannot split a table's figures (or crowd out other tables) by
// varying the case. Names are ASCII letters and digits.
func foldName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(name)
		}
	}
	return name
}

// bucket is the current bucket of t at now (unix nanoseconds); t.mu is
// held.
func (a *Advisor) bucket(t *table, now int64) *bucket {
	slot := now/int64(a.o.Bucket) + 1
	b := &t.ring[slot%int64(len(t.ring))]
	if b.slot != slot {
		*b = bucket{slot: slot, requests: newSketch(a.o.TopK), writes: newSketch(a.o.TopK)}
	}
	return b
}

// MaySizeMatter reports whether an entity sent in a JSON body of
// bodyLen bytes may be near the size limit, hence whether its size is
// worth computing: the service counts a string's characters as two bytes
// each, so an entity may count up to about twice its JSON.
func (a *Advisor) MaySizeMatter(bodyLen int) bool {
	return a != nil && bodyLen*4 >= a.o.NearLimit
}

// Tables is the number of tables tracked.
func (a *Advisor) Tables() int {
	return len(*a.tables.Load())
}

// Read records a read of one partition (Get Entity, a query within a
// partition).
func (a *Advisor) Read(account, table, pk string) {
	if a != nil {
		a.ReadAt(a.o.Now(), account, table, pk)
	}
}

// ReadAt is Read at the given time (the request's arrival, which the
// caller has read already: one clock read less per request).
func (a *Advisor) ReadAt(at time.Time, account, table, pk string) {
	if a == nil {
		return
	}
	now := at.UnixNano()
	t := a.table(account, table, now)
	if t == nil {
		return
	}
	t.mu.Lock()
	b := a.bucket(t, now)
	b.nRequests++
	b.requests.add(pk, hashKey(pk), 1)
	t.mu.Unlock()
}

// Write records a successful write of an entity. insert is set for the
// writes that may add a key (insert, insert-or-replace, insert-or-merge);
// size is the entity's size as the service counts it, or 0 when it was
// not worth computing (a small body).
func (a *Advisor) Write(account, table, pk, rk string, insert bool, size int) {
	if a != nil {
		a.WriteAt(a.o.Now(), account, table, pk, rk, insert, size)
	}
}

// WriteAt is Write at the given time.
func (a *Advisor) WriteAt(at time.Time, account, table, pk, rk string, insert bool, size int) {
	if a == nil {
		return
	}
	now := at.UnixNano()
	t := a.table(account, table, now)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := a.bucket(t, now)
	b.nRequests++
	b.nWrites++
	h := hashKey(pk)
	b.requests.add(pk, h, 1)
	b.writes.add(pk, h, 1)
	if size >= a.o.NearLimit {
		b.nearLimit++
		if size > b.maxEntity {
			b.maxEntity = size
			b.nearLimitSample = clip(pk)
		}
	}
	if !insert {
		return
	}
	b.inserts++
	switch {
	case !t.havePK || pk > t.maxPK:
		t.maxPK, t.havePK = strings.Clone(pk), true
		b.pkTail++
		b.pkAdv++
	case pk == t.maxPK:
		b.pkTail++
	}
	sl := &t.lastRK[h%sideMaps]
	if sl.used && sl.h == h {
		b.rkSeen++
		if sl.less(rk) {
			b.rkUp++
			sl.set(rk)
		}
		return
	}
	sl.h, sl.used = h, true
	sl.set(rk)
}

// rkSlot is an entry of a direct-mapped cache of partitions (by the hash
// of their key) and the greatest RowKey inserted into each, of which it
// keeps the first rkPrefix bytes: no allocation on the insert path.
type rkSlot struct {
	h    uint64
	used bool
	n    uint8
	rk   [rkPrefix]byte
}

const rkPrefix = 64

// less reports whether the kept RowKey sorts before rk (compared on
// their first rkPrefix bytes).
func (s *rkSlot) less(rk string) bool {
	if len(rk) > rkPrefix {
		rk = rk[:rkPrefix]
	}
	return string(s.rk[:s.n]) < rk
}

func (s *rkSlot) set(rk string) { s.n = uint8(copy(s.rk[:], rk)) }

// scanSlot is an entry of a direct-mapped cache of the partition scans
// in progress.
type scanSlot struct {
	h   uint64
	key string
	n   int64
}

var seed = maphash.MakeSeed()

// hashKey hashes a partition key (its first maxKeyShown bytes, as kept).
func hashKey(pk string) uint64 { return maphash.String(seed, cut(pk)) }

// Query records one query page: its class (odata.Class order), the
// entities it examined and returned, the partition it read when it read
// one (class point, range or partition; "" when unknown), and whether the
// request continued an earlier page (a continuation token).
func (a *Advisor) Query(account, table string, class, examined, returned int, pk string, continued bool) {
	if a != nil {
		a.QueryAt(a.o.Now(), account, table, class, examined, returned, pk, continued)
	}
}

// QueryAt is Query at the given time.
func (a *Advisor) QueryAt(at time.Time, account, table string, class, examined, returned int, pk string, continued bool) {
	if a == nil || class < 0 || class >= numClasses {
		return
	}
	now := at.UnixNano()
	t := a.table(account, table, now)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := a.bucket(t, now)
	b.queries[class]++
	b.examined[class] += int64(examined)
	b.returned[class] += int64(returned)
	if pk == "" || class == ClassTable {
		return
	}
	b.nRequests++
	h := hashKey(pk)
	b.requests.add(pk, h, 1)
	if class != ClassPartition {
		return
	}
	// A partition scan, page by page: its pages' examined entities add
	// up to the partition's size.
	sl := &t.scans[h%sideMaps]
	if sl.key == "" || sl.h != h {
		*sl = scanSlot{h: h, key: clip(pk)}
	} else if !continued {
		sl.n = 0
	}
	sl.n += int64(examined)
	t.noteSize(sl.key, sl.n, now, now-int64(a.o.Bucket)*int64(a.o.Buckets))
}

// noteSize keeps the largest partitions seen by the scans of the window
// (since after); t.mu is held. pk is a scan slot's key, already clipped
// and owned. A size not seen again within the window is forgotten, as the
// partition may have shrunk or its table been dropped and made anew.
func (t *table) noteSize(pk string, n, now, after int64) {
	kept := t.largest[:0]
	for _, p := range t.largest {
		if p.at > after {
			kept = append(kept, p)
		}
	}
	clear(t.largest[len(kept):])
	t.largest = kept
	for i := range t.largest {
		if t.largest[i].pk == pk {
			if n < t.largest[i].n {
				return
			}
			t.largest[i].n, t.largest[i].at = n, now
			sort.Slice(t.largest, func(i, j int) bool { return t.largest[i].n > t.largest[j].n })
			return
		}
	}
	if len(t.largest) < 8 {
		t.largest = append(t.largest, partSize{pk, n, now})
	} else if n > t.largest[len(t.largest)-1].n {
		t.largest[len(t.largest)-1] = partSize{pk, n, now}
	} else {
		return
	}
	sort.Slice(t.largest, func(i, j int) bool { return t.largest[i].n > t.largest[j].n })
}

const maxKeyShown = 128

// clip shortens a key for display: findings and the heat map never carry
// more than 128 bytes of one.
func clip(s string) string { return strings.Clone(cut(s)) }

// cut is s's first maxKeyShown bytes at most, cut at the start of a
// character, so that no key kept ends in part of one (two keys would then
// look alike, or a JSON encoder would make the part U+FFFD). Keys are
// counted, hashed and shown by it.
func cut(s string) string {
	if len(s) <= maxKeyShown {
		return s
	}
	n := maxKeyShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// sketch is a space-saving top-k counter: at most k keys, each with a
// count that overestimates its true count by at most err. k is small, so
// a slice searched linearly beats a map (no hashing, no iteration).
type sketch struct {
	k     int
	items []ssItem
}

type ssItem struct {
	key        string
	h          uint64 // hashKey(key), compared first
	count, err int64
}

func newSketch(k int) sketch { return sketch{k: k} }

func (s *sketch) add(key string, h uint64, n int64) {
	key = cut(key)
	m := -1
	for i := range s.items {
		it := &s.items[i]
		if it.h == h && it.key == key {
			it.count += n
			return
		}
		if m < 0 || it.count < s.items[m].count {
			m = i
		}
	}
	if len(s.items) < s.k {
		if s.items == nil {
			s.items = make([]ssItem, 0, s.k)
		}
		s.items = append(s.items, ssItem{key: strings.Clone(key), h: h, count: n})
		return
	}
	it := &s.items[m]
	it.key, it.h, it.err, it.count = strings.Clone(key), h, it.count, it.count+n
}
