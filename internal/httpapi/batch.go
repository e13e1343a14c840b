package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/changeset"
	"github.com/partita/partita/internal/wire"
)

// batchOp is one decoded operation of a changeset.
type batchOp struct {
	op        partita.Op
	table     string
	prefer    string
	meta      wire.Metadata
	contentID string
}

// runtimeCodes are the failures that the service reports without the "0:"
// index prefix when the changeset holds a single operation (docs/COMPATIBILITY.md §8).
var runtimeCodes = map[partita.Code]bool{
	partita.CodeResourceNotFound:            true,
	partita.CodeUpdateConditionNotSatisfied: true,
	partita.CodeEntityAlreadyExists:         true,
}

// maxRetrieveBatchBody bounds the body of a batch sent with a shared
// access signature that allows no write: only a retrieve batch (one GET,
// PROTOCOL §6.5) can then succeed, and its body is a few hundred bytes.
const maxRetrieveBatchBody = 64 << 10

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	limit, noWrite := s.batchLimit(rc)
	if noWrite != nil && (limit == 0 || r.ContentLength > limit) {
		return noWrite
	}
	body, err := s.readBody(w, r, rc, limit)
	if err != nil {
		var mb *http.MaxBytesError
		if noWrite != nil && errors.As(err, &mb) {
			return noWrite
		}
		return err
	}
	b, err := changeset.Decode(r.Header.Get("Content-Type"), body, partita.MaxBatchOperations)
	if err != nil {
		var ce *changeset.Error
		if errors.As(err, &ce) && ce.Index >= 0 {
			msg := ce.Message
			if ce.TooMany {
				msg = "The batch request operation exceeds the maximum 100 changes per change set."
			}
			s.writeBatchFailure(w, rc, ce.Index, 1, "", partita.NewError(partita.CodeInvalidInput, msg))
			return nil
		}
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	if !b.Changeset {
		return s.handleRetrieveBatch(w, r, rc, &b.Requests[0])
	}
	ops := make([]batchOp, len(b.Requests))
	for i := range b.Requests {
		op, err := s.decodeBatchOp(r, rc, &b.Requests[i])
		if err != nil {
			s.writeBatchFailure(w, rc, i, len(ops), b.Requests[i].ContentID, err)
			return nil
		}
		ops[i] = op
	}
	// A SAS must allow every operation, on every entity.
	for i := range ops {
		if err := rc.authorize(operationOf(ops[i].op.Kind), ops[i].table); err != nil {
			return err
		}
		if err := rc.authorizeKey(ops[i].op.Entity.Key()); err != nil {
			return err
		}
	}
	// Entity group rules: one table, one partition, each entity once.
	seen := make(map[partita.Key]bool, len(ops))
	for i := range ops {
		o := &ops[i]
		switch {
		case !partita.SameTable(o.table, ops[0].table):
			s.writeBatchFailure(w, rc, i, len(ops), o.contentID, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput))
			return nil
		case o.op.Entity.PartitionKey != ops[0].op.Entity.PartitionKey:
			s.writeBatchFailure(w, rc, i, len(ops), o.contentID, partita.NewError(partita.CodeCommandsInBatchActOnDifferentPartitions, partita.MsgDifferentPartitions))
			return nil
		case seen[o.op.Entity.Key()]:
			s.writeBatchFailure(w, rc, i, len(ops), o.contentID, partita.NewError(partita.CodeInvalidDuplicateRow, partita.MsgDuplicateRow))
			return nil
		}
		seen[o.op.Entity.Key()] = true
	}
	storeOps := make([]partita.Op, len(ops))
	for i := range ops {
		storeOps[i] = ops[i].op
	}
	results, err := s.store.WriteBatch(rc.ctx, rc.account, ops[0].table, storeOps)
	if err != nil {
		var be *partita.BatchError
		if errors.As(err, &be) && partita.ErrorCode(be.Err) != partita.CodeInternal {
			s.writeBatchFailure(w, rc, be.Index, len(ops), ops[be.Index].contentID, be.Err)
			return nil
		}
		return err
	}
	s.metrics.Batch(len(ops))
	if s.advisor != nil {
		for i := range ops {
			e := ops[i].op.Entity
			// The operation's own body, not the batch's: a large batch of
			// small entities needs no entity sized.
			s.advisor.WriteAt(rc.start, rc.account, ops[i].table, e.PartitionKey, e.RowKey, addsKey(ops[i].op.Kind), s.entitySize(len(b.Requests[i].Body), e))
		}
	}
	resps := make([]changeset.Response, len(ops))
	for i := range ops {
		resps[i] = s.batchSuccess(rc, &ops[i], results[i])
	}
	bb, cb := changeset.NewBoundaries()
	writeBatchResponse(w, bb, changeset.AppendResponse(nil, bb, cb, resps))
	return nil
}

// writeBatchResponse sends a multipart batch response body: always 202,
// whatever the operations' outcomes.
func writeBatchResponse(w http.ResponseWriter, boundary string, body []byte) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", changeset.ContentType(boundary))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusAccepted)
	w.Write(body)
}

// batchSuccess builds the sub-response of a successful operation, whose
// write returned res.
func (s *Server) batchSuccess(rc *reqCtx, o *batchOp, res partita.Result) changeset.Response {
	e := o.op.Entity
	resp := changeset.Response{Status: http.StatusNoContent, ContentID: o.contentID, Header: make([]changeset.HeaderField, 0, 7)}
	add := func(n, v string) { resp.Header = append(resp.Header, changeset.HeaderField{Name: n, Value: v}) }
	add("X-Content-Type-Options", "nosniff")
	add("Cache-Control", "no-cache")
	switch o.op.Kind {
	case partita.OpInsert:
		loc := rc.base + "/" + wire.EntityPath(o.table, e.PartitionKey, e.RowKey)
		if o.prefer == "return-no-content" {
			add("Preference-Applied", "return-no-content")
			add("DataServiceVersion", "3.0;")
			add("Location", loc)
			add("DataServiceId", loc)
			add("ETag", res.ETag())
			return resp
		}
		resp.Status = http.StatusCreated
		if o.prefer == "return-content" {
			add("Preference-Applied", "return-content") // as on its own
		}
		add("DataServiceVersion", "3.0;")
		add("Content-Type", o.meta.ContentType())
		add("Location", loc)
		add("ETag", res.ETag())
		e.Timestamp = res.Timestamp // the response echoes the stored entity
		resp.Body = wire.AppendEntity(nil, e, &wire.EntityOptions{Metadata: o.meta, Base: rc.base, Account: rc.account, Table: o.table, Element: true})
	case partita.OpDelete:
		add("DataServiceVersion", "1.0;")
	default:
		add("DataServiceVersion", "1.0;")
		add("ETag", res.ETag())
	}
	return resp
}

// writeBatchFailure answers 202 with a changeset holding only the failed
// operation (docs/COMPATIBILITY.md §8), plus x-ms-error-code on the outer response so
// the Go SDK can report the code.
func (s *Server) writeBatchFailure(w http.ResponseWriter, rc *reqCtx, index, nops int, contentID string, err error) {
	code, msg := classify(err)
	if !(nops == 1 && runtimeCodes[code]) {
		msg = strconv.Itoa(index) + ":" + msg
	}
	s.log.Debug("batch operation rejected", "request_id", rc.id, "index", index, "code", code, "err", err)
	resp := s.subError(rc, code, msg, wire.MinimalMetadata)
	resp.ContentID = contentID
	bb, cb := changeset.NewBoundaries()
	w.Header().Set("x-ms-error-code", string(code))
	writeBatchResponse(w, bb, changeset.AppendResponse(nil, bb, cb, []changeset.Response{resp}))
}

// subTarget splits a sub-request target into host, raw path and query.
func subTarget(target, defHost string) (host, rawPath, rawQuery string) {
	host = defHost
	rest := target
	for _, scheme := range []string{"http://", "https://"} {
		if len(rest) >= len(scheme) && strings.EqualFold(rest[:len(scheme)], scheme) {
			rest = rest[len(scheme):]
			i := strings.IndexByte(rest, '/')
			if i < 0 {
				host, rest = rest, "/"
			} else {
				host, rest = rest[:i], rest[i:]
			}
			break
		}
	}
	rawPath, rawQuery, _ = strings.Cut(rest, "?")
	return host, rawPath, rawQuery
}

// decodeBatchOp turns one sub-request into a write operation.
// batchLimit decides from the URL and the SAS, before the body is read,
// how large the body may be. A SAS that allows no write on its table
// could at most run a retrieve batch: the limit is then
// maxRetrieveBatchBody, and noWrite is the error a changeset gets (the
// refusal of an insert). A SAS that allows neither gets that error at
// once, as would every batch it could send. Every operation is checked
// again once the body is parsed.
func (s *Server) batchLimit(rc *reqCtx) (limit int64, noWrite error) {
	if rc.sas == nil {
		return partita.MaxBatchBodyBytes, nil
	}
	table := rc.sas.Table // a service SAS names it; an account SAS ignores it
	for _, op := range []auth.Operation{auth.OpInsertEntity, auth.OpUpdateEntity, auth.OpDeleteEntity} {
		err := rc.authorize(op, table)
		if err == nil {
			return partita.MaxBatchBodyBytes, nil
		}
		if noWrite == nil {
			noWrite = err
		}
	}
	if rc.authorize(auth.OpGetEntity, table) != nil {
		return 0, noWrite
	}
	return maxRetrieveBatchBody, noWrite
}

func (s *Server) decodeBatchOp(r *http.Request, rc *reqCtx, sr *changeset.Request) (batchOp, error) {
	var o batchOp
	o.contentID = sr.ContentID
	host, rawPath, rawQuery := subTarget(sr.Target, r.Host)
	account, _, resource, _, ok := splitAccount(host, rawPath)
	if !ok || account != rc.account {
		return o, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	res, err := parseResourceMode(resource, true)
	if err != nil {
		return o, err
	}
	q, err := parseQuery(rawQuery)
	if err != nil {
		return o, errBadQueryParameter
	}
	o.meta = rc.meta
	accept := ""
	if a := sr.Header["Accept"]; len(a) > 0 {
		accept = a[0]
	}
	if accept != "" || q.Get("$format") != "" {
		// The operation's own Accept or $format, as on its own (an
		// insert's body was the outer request's format); Atom is 415.
		if o.meta, err = negotiate(accept, q, false); err != nil {
			return o, err
		}
	}
	o.prefer = prefer(sr.Header)
	o.table = res.table
	method := strings.ToUpper(sr.Method)
	// The canonical key, not Get("X-HTTP-Method"), which canonicalizes
	// (allocates) it again for every operation.
	if xm := sr.Header["X-Http-Method"]; len(xm) > 0 && xm[0] != "" && method == http.MethodPost {
		method = strings.ToUpper(xm[0])
	}
	cond, err := parseIfMatch(sr.Header)
	if err != nil {
		return o, err
	}
	decodeBody := func() (*partita.Entity, bool, bool, error) {
		if ct := sr.Header["Content-Type"]; len(ct) > 0 && atomBody(ct[0]) {
			return nil, false, false, errAtom
		}
		if len(sr.Body) == 0 {
			return nil, false, false, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
		}
		return wire.DecodeEntityInPlace(sr.Body) // the batch body outlives the write and is not modified
	}
	switch {
	case res.kind == resEntities && method == http.MethodPost:
		e, hasPK, hasRK, err := decodeBody()
		if err != nil {
			return o, err
		}
		if !hasPK || !hasRK {
			return o, partita.NewError(partita.CodePropertiesNeedValue, partita.MsgPropertiesNeedValue)
		}
		o.op = partita.Op{Kind: partita.OpInsert, Entity: e}
	case res.kind == resEntity && (method == http.MethodPut || method == http.MethodPatch || method == "MERGE"):
		if err := refuseIfNoneMatch(sr.Header); err != nil {
			return o, err
		}
		e, hasPK, hasRK, err := decodeBody()
		if err != nil {
			return o, err
		}
		if hasPK && hasRK && (e.PartitionKey != res.key.PartitionKey || e.RowKey != res.key.RowKey) &&
			undoubledTarget(resource, partita.Key{PartitionKey: e.PartitionKey, RowKey: e.RowKey}) {
			// The Go SDK's batch writer does not double the quotes of
			// the keys in a sub-request's URL: when the URL is exactly
			// the body's keys written that way, they are what it means
			// (a''b read as a'b wrote another entity).
			res.key = partita.Key{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
		}
		e.PartitionKey, e.RowKey = res.key.PartitionKey, res.key.RowKey
		if cond.Kind != partita.Unconditional && !storableKeys(res.key) {
			// As on its own (handleWriteEntity): an update of a key that
			// cannot exist finds nothing.
			return o, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound)
		}
		o.op = partita.Op{Kind: writeKind(method != http.MethodPut, cond), Entity: e, If: cond}
	case res.kind == resEntity && method == http.MethodDelete:
		if err := refuseIfNoneMatch(sr.Header); err != nil {
			return o, err
		}
		if cond.Kind == partita.Unconditional {
			cond.Kind = partita.IfExists
		}
		if goSDK(r.UserAgent()) {
			// A delete has no body to tell which reading of a quote
			// the Go SDK meant; it never doubles them in a batch, so
			// its key is read that way first (a''b deleted a'b). Should
			// a later release double them, a key with a quote is not
			// found (404), which fails the batch rather than deleting
			// another entity.
			if k, ok := undoubledKey(resource); ok {
				res.key = k
			}
		}
		if !partita.ValidKeyChars(res.key.PartitionKey) || !partita.ValidKeyChars(res.key.RowKey) {
			// The service's observed answer in a batch, where the same
			// delete alone is not found (docs/COMPATIBILITY.md §8).
			return o, partita.NewError(partita.CodeOutOfRangeInput, partita.MsgOutOfRangeInput)
		}
		if !storableKeys(res.key) {
			return o, partita.NewError(partita.CodeResourceNotFound, partita.MsgResourceNotFound) // too long: as on its own
		}
		o.op = partita.Op{Kind: partita.OpDelete, Entity: &partita.Entity{PartitionKey: res.key.PartitionKey, RowKey: res.key.RowKey}, If: cond}
	default:
		return o, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	return o, nil
}

// handleRetrieveBatch answers a batch holding a single GET (docs/COMPATIBILITY.md §8).
func (s *Server) handleRetrieveBatch(w http.ResponseWriter, r *http.Request, rc *reqCtx, sr *changeset.Request) error {
	host, rawPath, rawQuery := subTarget(sr.Target, r.Host)
	account, _, resource, _, ok := splitAccount(host, rawPath)
	if !ok || account != rc.account {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	res, err := parseResource(resource)
	if err != nil {
		return err
	}
	if res.kind != resEntity {
		return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	if err := rc.authorize(auth.OpGetEntity, res.table); err != nil {
		return err
	}
	if err := rc.authorizeKey(res.key); err != nil {
		return err
	}
	// The GET reads its query string as Get Entity does: $select picks
	// the properties, and a malformed query string or $select is 400.
	q, err := parseQuery(rawQuery)
	if err != nil {
		return errBadQueryParameter
	}
	sel, err := parseSelect(q)
	if err != nil {
		return err
	}
	meta, _ := negotiate(sr.Header.Get("Accept"), q, false)
	var resp changeset.Response
	e, err := s.store.GetEntity(rc.ctx, rc.account, res.table, res.key)
	if err != nil {
		code, msg := classify(err)
		if code == partita.CodeInternal {
			return err
		}
		resp = s.subError(rc, code, msg, meta)
	} else {
		resp = changeset.Response{Status: http.StatusOK, Header: []changeset.HeaderField{
			{Name: "X-Content-Type-Options", Value: "nosniff"},
			{Name: "Cache-Control", Value: "no-cache"},
			{Name: "DataServiceVersion", Value: "3.0;"},
			{Name: "Content-Type", Value: meta.ContentType()},
			{Name: "ETag", Value: e.ETag()},
		}, Body: wire.AppendEntity(nil, e, &wire.EntityOptions{Metadata: meta, Base: rc.base, Account: rc.account, Table: res.table, Element: true, Select: sel})}
	}
	resp.ContentID = sr.ContentID
	bb, _ := changeset.NewBoundaries()
	writeBatchResponse(w, bb, changeset.AppendRetrieveResponse(nil, bb, resp))
	return nil
}
