package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/wire"
	"github.com/partita/partita/odata"
)

// maxPageBytes ends a query page early (with a continuation) once its body
// is this large, so memory per request stays bounded.
const maxPageBytes = 8 << 20

// A query page's bytes beyond pageFree are held in the body budget
// (--max-body-mb) until the response is written, taken pageStep at a time
// without waiting; when the budget has no room the page ends there, with a
// continuation, as the service's pages may. Pages are built whole (their
// continuation goes in the headers) and a client that reads slowly keeps
// its page for up to the write timeout: 120 slow readers of 8 MiB pages
// held 1 GiB before. The first pageFree bytes (~230 entities of 1 KiB)
// are not counted, so every query progresses; memory for pages is then at
// most the budget plus pageFree per request slot.
const (
	pageFree = 256 << 10
	pageStep = 256 << 10
)

// pageChunkSize is the capacity of the pooled pieces a query page is
// built in. A page of 1,000 1 KiB entities is over 1 MiB: built in one
// slice, it regrew (copying everything so far) a dozen times per page and
// was too big to pool, a quarter of a full-table export's server CPU.
const pageChunkSize = 128 << 10

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, pageChunkSize); return &b }}

// pageBuf is a response body built in pooled chunks, so it never copies
// what it already holds to grow.
type pageBuf struct {
	full [][]byte  // sealed chunks, in order
	held []*[]byte // pooled chunks to give back
	cur  []byte    // the chunk being appended to
	n    int       // bytes in full
}

func newPageBuf() *pageBuf {
	bp := chunkPool.Get().(*[]byte)
	return &pageBuf{cur: (*bp)[:0], held: []*[]byte{bp}}
}

// reserve starts a new chunk unless cur has room for want more bytes. An
// item bigger than a chunk still fits: append grows that chunk alone.
func (p *pageBuf) reserve(want int) {
	if cap(p.cur)-len(p.cur) >= want || len(p.cur) == 0 {
		return
	}
	p.full = append(p.full, p.cur)
	p.n += len(p.cur)
	bp := chunkPool.Get().(*[]byte)
	p.held = append(p.held, bp)
	p.cur = (*bp)[:0]
}

func (p *pageBuf) len() int { return p.n + len(p.cur) }

// release returns the chunks to the pool once the body is written. A
// chunk that append regrew (for an entity bigger than the room left) was
// copied away from its pooled array, which goes back as it was; the
// grown copy is left to the GC.
func (p *pageBuf) release() {
	for _, bp := range p.held {
		chunkPool.Put(bp)
	}
	*p = pageBuf{}
}

// parseTop reads $top: absent (0), or 0..1000. zero reports $top=0, which
// the service answers with no entities (or tables) at all.
func parseTop(q url.Values) (top int, zero bool, err error) {
	v, ok := q["$top"]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v[0]))
	if err != nil || n < 0 || n > partita.MaxPageSize {
		return 0, false, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	return n, n == 0, nil
}

// parseSelect reads $select: nil means every property. A property named
// twice is selected once (in the place of its first mention), so a response
// never repeats a JSON member.
func parseSelect(q url.Values) ([]string, error) {
	// Invalid UTF-8 decodes to U+FFFD, as in $filter: the names are echoed
	// in the JSON of the response.
	v := strings.ToValidUTF8(strings.TrimSpace(q.Get("$select")), "\uFFFD")
	if v == "" || v == "*" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{} // bounded by the length of the query
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
		}
		if p == "*" {
			return nil, nil
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *Server) handleQueryEntities(w http.ResponseWriter, r *http.Request, rc *reqCtx, table string) error {
	if err := rc.authorize(auth.OpQueryEntities, table); err != nil {
		return err
	}
	var q partita.Query
	top, zero, err := parseTop(rc.query)
	if err != nil {
		return err
	}
	q.Top = top
	sel, err := parseSelect(rc.query)
	if err != nil {
		return err
	}
	// Invalid UTF-8 decodes to U+FFFD, as it does on the service; this also
	// keeps planner bounds and evaluation in one order.
	if q.Filter, err = odata.Parse(strings.ToValidUTF8(rc.query.Get("$filter"), "\uFFFD")); err != nil {
		return err
	}
	if rc.sas != nil && rc.sas.HasKeyRange() {
		// Clip the query to the SAS key range: never return a row outside
		// it (the filter), and never read, count or name one as the
		// continuation (the scan's bounds).
		if rf := sasRangeFilter(rc.sas); q.Filter == nil {
			q.Filter = rf
		} else {
			q.Filter = &odata.And{L: q.Filter, R: rf}
		}
		within := sasRange(rc.sas)
		q.Within = &within
	}
	if zero {
		// $top=0: the filter is still checked, the table must exist, and
		// a constant-false filter reads nothing.
		q.Filter = &odata.BoolLit{Value: false}
	}
	if q.Next, err = wire.ParseNextKey(rc.query); err != nil {
		return err
	}
	q.Borrow = true // each entity is encoded into b before the callback returns
	o := s.entityOptions(rc, table)
	o.Select = sel

	pb := newPageBuf()
	defer pb.release()
	pb.cur = wire.AppendPageStart(pb.cur, rc.meta, wire.EntitiesMetadataURL(rc.base, table, sel))
	n := 0
	last := 0          // the previous entity's encoded size
	var firstPK string // for the advisor: the partition a query within one read
	var held int64     // of the body budget, under claims
	var claims []claim
	defer func() {
		if held > 0 {
			s.bodies.give(held, claims...)
		}
	}()
	info, err := s.store.QueryEntities(rc.ctx, rc.account, table, q, func(e *partita.Entity) error {
		// Room for one more like the last (and its comma), so an entity
		// seldom straddles a full chunk and regrows it.
		pb.reserve(last + last/4 + 64)
		start := len(pb.cur)
		if n > 0 {
			pb.cur = append(pb.cur, ',')
		} else if s.advisor != nil {
			firstPK = strings.Clone(e.PartitionKey) // e is borrowed
		}
		n++
		pb.cur = wire.AppendEntity(pb.cur, e, o)
		last = len(pb.cur) - start
		if pb.len() > maxPageBytes {
			return partita.ErrStopPage
		}
		for int64(pb.len()) > pageFree+held {
			if held == 0 {
				claims = s.claims(rc, s.bodies)
			}
			if !s.bodies.take(pageStep, 0, claims...) {
				return partita.ErrStopPage
			}
			held += pageStep
		}
		return nil
	})
	if err != nil {
		return err
	}
	pb.cur = wire.AppendPageEnd(pb.cur)
	s.metrics.Query(int(info.Class), info.Examined, n)
	if s.advisor != nil {
		if firstPK == "" && info.Next != nil {
			firstPK = info.Next.PartitionKey
		}
		s.advisor.QueryAt(rc.start, rc.account, table, int(info.Class), info.Examined, n, firstPK, q.Next != nil)
	}
	h := w.Header()
	h.Set(hdrQueryClass, info.Class.String())
	h.Set(hdrExamined, strconv.Itoa(info.Examined))
	wire.SetNextKey(h, info.Next)
	pb.full = append(pb.full, pb.cur)
	pb.n += len(pb.cur)
	writeJSONChunks(w, rc, http.StatusOK, pb.full, pb.n)
	return nil
}

// writeJSONChunks is writeJSON of a body held in pieces of n bytes in all.
func writeJSONChunks(w http.ResponseWriter, rc *reqCtx, status int, chunks [][]byte, n int) {
	h := w.Header()
	h["Cache-Control"] = valNoCache
	h["Content-Type"] = contentTypes[rc.meta]
	h["Content-Length"] = []string{strconv.Itoa(n)}
	w.WriteHeader(status)
	for _, c := range chunks {
		if len(c) > 0 {
			w.Write(c)
		}
	}
}
