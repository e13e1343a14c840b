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

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

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
	v := strings.TrimSpace(q.Get("$select"))
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
		// Clip the query to the SAS key range: never return a row outside it.
		if rf := sasRangeFilter(rc.sas); q.Filter == nil {
			q.Filter = rf
		} else {
			q.Filter = &odata.And{L: q.Filter, R: rf}
		}
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

	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			bufPool.Put(bp)
		}
	}()
	b := (*bp)[:0]
	b = wire.AppendPageStart(b, rc.meta, wire.EntitiesMetadataURL(rc.base, table, sel))
	n := 0
	var firstPK string // for the advisor: the partition a query within one read
	info, err := s.store.QueryEntities(r.Context(), rc.account, table, q, func(e *partita.Entity) error {
		if n > 0 {
			b = append(b, ',')
		} else if s.advisor != nil {
			firstPK = strings.Clone(e.PartitionKey) // e is borrowed
		}
		n++
		b = wire.AppendEntity(b, e, o)
		if len(b) > maxPageBytes {
			return partita.ErrStopPage
		}
		return nil
	})
	*bp = b
	if err != nil {
		return err
	}
	b = wire.AppendPageEnd(b)
	*bp = b
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
	writeJSON(w, rc, http.StatusOK, b)
	return nil
}
