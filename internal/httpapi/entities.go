package httpapi

import (
	"net/http"
	"strings"
	"sync"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/wire"
)

// maxEntityBody bounds the JSON body of a single-entity request: a 1 MiB
// entity may take several times that in JSON text (escapes, base64).
const maxEntityBody = 4 << 20

// parseIfMatch turns an If-Match header into a Condition.
func parseIfMatch(h http.Header) (partita.Condition, error) {
	vals := h.Values("If-Match")
	if len(vals) == 0 {
		return partita.Condition{}, nil
	}
	v := strings.TrimSpace(strings.Join(vals, ","))
	if v == "*" {
		return partita.Condition{Kind: partita.IfExists}, nil
	}
	if !partita.ValidETagSyntax(v) {
		return partita.Condition{}, partita.Errorf(partita.CodeInvalidInput, "The etag value '%s' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid.", v)
	}
	ticks, ok := partita.ParseETag(v)
	if !ok {
		ticks = -1 // well-formed but not one of ours: never matches
	}
	return partita.Condition{Kind: partita.IfETag, Ticks: ticks}, nil
}

// refuseIfNoneMatch: the service takes no If-None-Match on an update or a
// delete (400 InvalidInput), rather than ignoring a condition the client
// relies on ("only if absent" would otherwise overwrite or delete).
func refuseIfNoneMatch(h http.Header) error {
	if _, ok := h["If-None-Match"]; ok {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	return nil
}

// writeKind is the operation a PUT (replace) or MERGE/PATCH (merge)
// performs: without If-Match it is an upsert (docs/COMPATIBILITY.md §6).
func writeKind(merge bool, cond partita.Condition) partita.OpKind {
	switch {
	case merge && cond.Kind == partita.Unconditional:
		return partita.OpInsertOrMerge
	case merge:
		return partita.OpMerge
	case cond.Kind == partita.Unconditional:
		return partita.OpInsertOrReplace
	}
	return partita.OpReplace
}

func (s *Server) entityOptions(rc *reqCtx, table string) *wire.EntityOptions {
	return &wire.EntityOptions{Metadata: rc.meta, Base: rc.base, Account: rc.account, Table: table}
}

func (s *Server) handleInsertEntity(w http.ResponseWriter, r *http.Request, rc *reqCtx, table string) error {
	if err := rc.authorize(auth.OpInsertEntity, table); err != nil {
		return err
	}
	body, err := s.readBody(w, r, rc, maxEntityBody)
	if err != nil {
		return err
	}
	// The entity's string values alias body, which no one modifies; the
	// store copies what it keeps.
	e, hasPK, hasRK, err := wire.DecodeEntityInPlace(body)
	if err != nil {
		return err
	}
	if !hasPK || !hasRK {
		return partita.NewError(partita.CodePropertiesNeedValue, partita.MsgPropertiesNeedValue)
	}
	if err := rc.authorizeKey(e.Key()); err != nil {
		return err
	}
	pref := prefer(r.Header)
	if pref != "" {
		w.Header()[hdrPreferenceApplied] = preferenceApplied(pref)
	}
	res, err := s.store.Write(rc.ctx, rc.account, table, partita.Op{Kind: partita.OpInsert, Entity: e})
	if err != nil {
		return err
	}
	e.Timestamp = res.Timestamp // the response echoes the stored entity
	s.advisor.WriteAt(rc.start, rc.account, table, e.PartitionKey, e.RowKey, true, s.entitySize(len(body), e))
	h := w.Header()
	h[hdrETag] = []string{res.ETag()}
	locs := []string{rc.base + "/" + wire.EntityPath(table, e.PartitionKey, e.RowKey)}
	h[hdrLocation] = locs
	if pref == "return-no-content" {
		h[hdrDataServiceID] = locs // the same value; no one modifies either
		writeNoContent(w)
		return nil
	}
	o := s.entityOptions(rc, table)
	o.Element = true
	writeEntity(w, rc, http.StatusCreated, e, o)
	return nil
}

func (s *Server) handleWriteEntity(w http.ResponseWriter, r *http.Request, rc *reqCtx, table string, key partita.Key, merge bool) error {
	cond, err := parseIfMatch(r.Header)
	if err != nil {
		return err
	}
	if err := refuseIfNoneMatch(r.Header); err != nil {
		return err
	}
	// The operation, hence the permission it needs, follows from the
	// method and If-Match alone: a denied request is refused before its
	// body is read.
	kind := writeKind(merge, cond)
	rc.op = kind.String()
	if err := rc.authorize(operationOf(kind), table); err != nil {
		return err
	}
	if err := rc.authorizeKey(key); err != nil {
		return err
	}
	body, err := s.readBody(w, r, rc, maxEntityBody)
	if err != nil {
		return err
	}
	e, _, _, err := wire.DecodeEntityInPlace(body) // as in handleInsertEntity
	if err != nil {
		return err
	}
	// The URL's keys win over the body's (docs/COMPATIBILITY.md §5).
	e.PartitionKey, e.RowKey = key.PartitionKey, key.RowKey
	op := partita.Op{Kind: kind, Entity: e, If: cond}
	badKey := !storableKeys(key)
	if badKey && cond.Kind != partita.Unconditional {
		// An update of a key that cannot exist finds nothing; an upsert
		// reports the key as the body validation does.
		return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
	}
	res, err := s.store.Write(rc.ctx, rc.account, table, op)
	if err != nil {
		return err
	}
	s.advisor.WriteAt(rc.start, rc.account, table, key.PartitionKey, key.RowKey, addsKey(kind), s.entitySize(len(body), e))
	w.Header()[hdrETag] = []string{res.ETag()}
	writeNoContent(w)
	return nil
}

func (s *Server) handleDeleteEntity(w http.ResponseWriter, r *http.Request, rc *reqCtx, table string, key partita.Key) error {
	if err := rc.authorize(auth.OpDeleteEntity, table); err != nil {
		return err
	}
	if err := rc.authorizeKey(key); err != nil {
		return err
	}
	cond, err := parseIfMatch(r.Header)
	if err != nil {
		return err
	}
	if err := refuseIfNoneMatch(r.Header); err != nil {
		return err
	}
	if cond.Kind == partita.Unconditional {
		cond.Kind = partita.IfExists // every SDK sends '*'; treat a missing If-Match the same
	}
	if !storableKeys(key) {
		return partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
	}
	e := &partita.Entity{PartitionKey: key.PartitionKey, RowKey: key.RowKey}
	if _, err := s.store.Write(rc.ctx, rc.account, table, partita.Op{Kind: partita.OpDelete, Entity: e, If: cond}); err != nil {
		return err
	}
	s.advisor.WriteAt(rc.start, rc.account, table, key.PartitionKey, key.RowKey, false, 0)
	writeNoContent(w)
	return nil
}

func (s *Server) handleGetEntity(w http.ResponseWriter, r *http.Request, rc *reqCtx, table string, key partita.Key) error {
	if err := rc.authorize(auth.OpGetEntity, table); err != nil {
		return err
	}
	if err := rc.authorizeKey(key); err != nil {
		return err
	}
	sel, err := parseSelect(rc.query)
	if err != nil {
		return err
	}
	// No X-Partita-Query-Class: that header classifies queries, and Get
	// Entity is always a point read.
	e, err := s.store.GetEntity(rc.ctx, rc.account, table, key)
	if err != nil {
		return err
	}
	s.advisor.ReadAt(rc.start, rc.account, table, key.PartitionKey)
	o := s.entityOptions(rc, table)
	o.Element = true
	o.Select = sel
	w.Header()[hdrETag] = []string{e.ETag()}
	writeEntity(w, rc, http.StatusOK, e, o)
	return nil
}

// writeEntity writes one entity's JSON as the response, built in a pooled
// buffer.
func writeEntity(w http.ResponseWriter, rc *reqCtx, status int, e *partita.Entity, o *wire.EntityOptions) {
	bp := entityBufPool.Get().(*[]byte)
	body := wire.AppendEntity((*bp)[:0], e, o)
	writeJSON(w, rc, status, body)
	if cap(body) <= entityBufMax {
		*bp = body[:0]
		entityBufPool.Put(bp)
	}
}

// entityBufPool holds the buffers one entity's JSON is built in: a 1 KiB
// entity's body grew through nine allocations from nil. The body is
// copied into net/http's buffer (or written) before writeJSON returns.
var entityBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// entityBufMax: larger buffers (an entity near the 1 MiB limit) are left
// to the garbage collector rather than kept in the pool.
const entityBufMax = 64 << 10

// addsKey reports whether a write may add a key (the advisor's inserts).
func addsKey(k partita.OpKind) bool {
	return k == partita.OpInsert || k == partita.OpInsertOrReplace || k == partita.OpInsertOrMerge
}

// storableKeys reports whether both of k's keys could be stored: a
// conditional update or a delete of one that could not finds nothing, on
// its own as in a batch.
func storableKeys(k partita.Key) bool {
	return partita.StorableKey(k.PartitionKey) && partita.StorableKey(k.RowKey)
}
