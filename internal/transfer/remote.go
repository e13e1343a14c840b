package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/changeset"
	"github.com/partita/partita/internal/wire"
)

// odataString quotes s as an OData string literal.
func odataString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// keyRange is a PartitionKey range [Lo, Hi); "" bounds are open.
type keyRange struct {
	Lo, Hi string
}

func (r keyRange) filter(user string) string {
	var parts []string
	if r.Lo != "" {
		parts = append(parts, "PartitionKey ge "+odataString(r.Lo))
	}
	if r.Hi != "" {
		parts = append(parts, "PartitionKey lt "+odataString(r.Hi))
	}
	f := strings.Join(parts, " and ")
	if user != "" {
		if f == "" {
			return user
		}
		return f + " and (" + user + ")"
	}
	return f
}

// page is one page of a query.
type page struct {
	entities []*partita.Entity
	// prepared: a copy's page ready for $batch (queryPrepared).
	prepared []prepared
	// records and count: an export's page as JSONL (queryRecords).
	records        []byte
	count          int
	bytes          int
	nextPK, nextRK string
	// keyed: the page has entities, the first and last of which have the
	// keys first and last (keyOrder.end; for scanOrder).
	keyed       bool
	first, last [2]string
}

// queryPage reads one page of table with filter from the continuation.
func (c *client) queryPage(ctx context.Context, table, filter, npk, nrk string, top int, sel string) (*page, error) {
	resp, values, p, err := c.queryRaw(ctx, table, filter, npk, nrk, top, sel)
	if err != nil {
		return nil, err
	}
	p.entities = make([]*partita.Entity, 0, len(values))
	var order keyOrder[string]
	for _, raw := range values {
		if sel == "" { // a $select leaves the other members out
			if err := c.checkEntity(table, raw); err != nil {
				return nil, err
			}
		}
		e, _, _, err := wire.DecodeEntity(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: query %s: cannot read entity %.200s: %v", c.side, table, raw, err)
		}
		if sel == "" { // (partitions' $select of PartitionKey reads one entity a page)
			if err := order.add(c.side, table, e.PartitionKey, e.RowKey); err != nil {
				return nil, err
			}
		}
		p.entities = append(p.entities, e)
	}
	order.end(p)
	// The entities hold copies (DecodeEntity copies every string and
	// value), so the body's buffer can serve the next response.
	resp.release()
	return p, nil
}

// badMemberName reports whether an entity member's name is one that
// DecodeEntity would take silently but the copy cannot carry: an empty
// name (an import refuses it), or a name with '@' that is no annotation
// (DecodeEntity drops "a@b" as one).
// It takes the fast path's []byte without a conversion.
func badMemberName[S ~string | ~[]byte](name S) bool {
	if len(name) == 0 {
		return true
	}
	at := false
	for i := 0; i < len(name) && !at; i++ {
		at = name[i] == '@'
	}
	const odata, typ = "odata.", "@odata.type"
	if !at || len(name) >= len(odata) && string(name[:len(odata)]) == odata {
		return false
	}
	return len(name) < len(typ) || string(name[len(name)-len(typ):]) != typ
}

// checkEntity refuses an entity of a source page that the copy would carry
// wrongly: without a PartitionKey or RowKey (they became ""), or with a
// member badMemberName refuses; the error names the table and the keys.
// Malformed JSON is left to DecodeEntity to explain. Only the general path
// calls it: the fast one takes none of these.
func (c *client) checkEntity(table string, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var pk, rk *string
	problem := ""
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		switch {
		case name == partita.PropPartitionKey || name == partita.PropRowKey:
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil // DecodeEntity says what is wrong
			}
			if name == partita.PropPartitionKey {
				pk = &s
			} else {
				rk = &s
			}
		case problem == "" && name == "":
			problem = "a property with an empty name"
		case problem == "" && badMemberName(name):
			problem = fmt.Sprintf("property %q: a name with '@' that is no annotation", name)
		}
	}
	show := func(k *string) string {
		if k == nil {
			return "(none)"
		}
		return strconv.Quote(*k)
	}
	switch {
	case pk == nil:
		problem = "no PartitionKey"
	case rk == nil:
		problem = "no RowKey"
	}
	if problem == "" {
		return nil
	}
	return fmt.Errorf("%s: query %s: entity PartitionKey=%s RowKey=%s: %s, which the copy cannot carry", c.side, table, show(pk), show(rk), problem)
}

// queryRecords reads one page like queryPage and returns it as the JSONL
// records of its entities in table (page.records, page.count), for an
// export: most entities go straight from the response to their record
// (appendRecordFast), the rest through DecodeEntity and AppendRecord.
func (c *client) queryRecords(ctx context.Context, table, filter, npk, nrk string) (*page, error) {
	resp, values, p, err := c.queryRaw(ctx, table, filter, npk, nrk, 0, "")
	if err != nil {
		return nil, err
	}
	var l liteEntity
	recs := make([]byte, 0, len(resp.body)+len(resp.body)/8)
	var order keyOrder[[]byte]
	for _, raw := range values {
		var ok bool
		var pk, rk []byte
		if recs, pk, rk, ok = l.appendRecordFast(recs, table, raw); ok {
			if err := order.add(c.side, table, pk, rk); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.checkEntity(table, raw); err != nil {
			return nil, err
		}
		e, _, _, err := wire.DecodeEntity(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: query %s: cannot read entity %.200s: %v", c.side, table, raw, err)
		}
		if err := order.add(c.side, table, []byte(e.PartitionKey), []byte(e.RowKey)); err != nil {
			return nil, err
		}
		recs = AppendRecord(recs, table, e)
	}
	order.end(p)
	p.records, p.count = recs, len(values)
	resp.release()
	return p, nil
}

// queryPrepared reads one page like queryPage and returns its entities
// ready for a $batch (page.prepared): most go straight from the response
// to their request body (appendRequestFast), the rest through DecodeEntity
// and appendRequestEntity.
func (c *client) queryPrepared(ctx context.Context, table, filter, npk, nrk string) (*page, error) {
	resp, values, p, err := c.queryRaw(ctx, table, filter, npk, nrk, 0, "")
	if err != nil {
		return nil, err
	}
	var l liteEntity
	var order keyOrder[string]
	// One buffer for every body of the page; offsets until it stops growing.
	buf := make([]byte, 0, len(resp.body))
	ends := make([]int, len(values))
	p.prepared = make([]prepared, len(values))
	for i, raw := range values {
		var ok bool
		var pk, rk []byte
		if buf, pk, rk, ok = l.appendRequestFast(buf, raw); ok {
			p.prepared[i].pk, p.prepared[i].rk = string(pk), string(rk)
		} else {
			if err := c.checkEntity(table, raw); err != nil {
				return nil, err
			}
			e, _, _, err := wire.DecodeEntity(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: query %s: cannot read entity %.200s: %v", c.side, table, raw, err)
			}
			p.prepared[i].pk, p.prepared[i].rk = e.PartitionKey, e.RowKey
			buf = appendRequestEntity(buf, e)
		}
		if err := order.add(c.side, table, p.prepared[i].pk, p.prepared[i].rk); err != nil {
			return nil, err
		}
		ends[i] = len(buf)
	}
	order.end(p)
	start := 0
	for i, end := range ends {
		p.prepared[i].body = buf[start:end:end]
		start = end
	}
	resp.release()
	return p, nil
}

// maxPage is the most entities a query page holds (the service's bound).
const maxPage = 1000

// queryRaw sends the query of one page and splits its entities.
func (c *client) queryRaw(ctx context.Context, table, filter, npk, nrk string, top int, sel string) (*response, [][]byte, *page, error) {
	var q []string
	if filter != "" {
		q = append(q, "$filter="+queryEscape(filter))
	}
	if top > 0 {
		q = append(q, "$top="+strconv.Itoa(top))
	}
	if sel != "" {
		q = append(q, "$select="+sel)
	}
	if npk != "" || nrk != "" {
		q = append(q, "NextPartitionKey="+queryEscape(npk))
		if nrk != "" {
			q = append(q, "NextRowKey="+queryEscape(nrk))
		}
	}
	r := &request{method: http.MethodGet, path: "/" + table + "()", query: strings.Join(q, "&")}
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, nil, nil, err
	}
	if resp.status != http.StatusOK {
		return nil, nil, nil, c.fail(r, resp)
	}
	values, err := splitValues(resp.body)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: query %s: bad response body: %v", c.side, table, err)
	}
	if len(values) > maxPage {
		return nil, nil, nil, fmt.Errorf("%s: query %s: a page of %d entities, more than the %d a Table service returns", c.side, table, len(values), maxPage)
	}
	p := &page{bytes: len(resp.body)}
	p.nextPK = resp.header.Get("x-ms-continuation-NextPartitionKey")
	p.nextRK = resp.header.Get("x-ms-continuation-NextRowKey")
	return resp, values, p, nil
}

// noProgress refuses a continuation equal to the one just sent: following
// it would read the same page forever (a source that repeated its token
// kept a copy looping). An empty page whose continuation moves on is fine.
func (c *client) noProgress(table, sentPK, sentRK string, p *page) error {
	if (sentPK != "" || sentRK != "") && p.nextPK == sentPK && p.nextRK == sentRK {
		return fmt.Errorf("%s: query %s: the continuation (NextPartitionKey=%q NextRowKey=%q) came back unchanged: the source makes no progress", c.side, table, sentPK, sentRK)
	}
	return nil
}

// partitions lists up to limit distinct PartitionKeys of table in order,
// one tiny query per partition (PartitionKey gt last, $top=1). more is true
// when the table has more partitions than that.
func (c *client) partitions(ctx context.Context, table string, limit int) (pks []string, more bool, err error) {
	last, first := "", true
	for len(pks) < limit {
		f := ""
		if !first {
			f = "PartitionKey gt " + odataString(last)
		}
		// A page can come back empty with a continuation (the scan budget ran
		// out): follow it.
		npk, nrk := "", ""
		var found bool
		var order scanOrder
		for {
			p, err := c.queryPage(ctx, table, f, npk, nrk, 1, "PartitionKey")
			if err != nil {
				return nil, false, err
			}
			if len(p.entities) > 0 {
				last, found = p.entities[0].PartitionKey, true
				break
			}
			if p.nextPK == "" && p.nextRK == "" {
				break
			}
			if err := order.next(c, table, npk, nrk, p); err != nil {
				return nil, false, err
			}
			npk, nrk = p.nextPK, p.nextRK
		}
		if !found {
			return pks, false, nil
		}
		first = false
		pks = append(pks, last)
	}
	return pks, true, nil
}

// splitRanges divides the key space of the partitions pks (sorted) into at
// most n ranges with about as many partitions each. The first range starts
// open and the last ends open, so every key is in exactly one range.
func splitRanges(pks []string, n int) []keyRange {
	if n < 1 {
		n = 1
	}
	if len(pks) < n {
		n = len(pks)
	}
	if n <= 1 {
		return []keyRange{{}}
	}
	var rs []keyRange
	lo := ""
	for i := 1; i < n; i++ {
		hi := pks[i*len(pks)/n]
		rs = append(rs, keyRange{Lo: lo, Hi: hi})
		lo = hi
	}
	return append(rs, keyRange{Lo: lo})
}

// Refused is an entity the destination would not store.
type Refused struct {
	Table, PartitionKey, RowKey string
	Code, Message               string
}

func (r *Refused) Error() string {
	return fmt.Sprintf("destination refused entity PartitionKey=%q RowKey=%q of table %s: %s: %s", r.PartitionKey, r.RowKey, r.Table, r.Code, firstLine(r.Message))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var indexRE = regexp.MustCompile(`^(\d+):`)

// maxBatchBytes keeps a $batch body under the 4 MiB limit with room for
// the multipart framing.
const maxBatchBytes = 3 << 20

// prepared is an entity ready for a $batch: its keys and its request body
// (appendRequestEntity's).
type prepared struct {
	pk, rk string
	body   []byte
}

// prepare builds the request bodies of es.
func prepare(es []*partita.Entity) []prepared {
	// One buffer for every body (appending each to nil regrew it from
	// nothing, entity after entity); offsets until it stops growing.
	ps := make([]prepared, len(es))
	ends := make([]int, len(es))
	n := 0
	for _, e := range es {
		n += 64 + len(e.PartitionKey) + len(e.RowKey)
		for i := range e.Properties {
			p := &e.Properties[i]
			n += 2*len(p.Name) + 64 + len(p.Value.Str) + len(p.Value.Bin)*4/3
		}
	}
	buf := make([]byte, 0, n)
	for i, e := range es {
		buf = appendRequestEntity(buf, e)
		ends[i] = len(buf)
	}
	start := 0
	for i, e := range es {
		ps[i] = prepared{pk: e.PartitionKey, rk: e.RowKey, body: buf[start:ends[i]:ends[i]]}
		start = ends[i]
	}
	return ps
}

// writeBatch writes entities of one partition of table with
// insert-or-replace in one $batch. A refused entity comes back as
// *Refused with its index; other failures as errors.
func (c *client) writeBatch(ctx context.Context, table string, ps []prepared) (int, error) {
	b := &changeset.Batch{Changeset: true, Requests: make([]changeset.Request, len(ps))}
	size := 0
	for i := range ps {
		p := &ps[i]
		size += len(p.body)
		b.Requests[i] = changeset.Request{
			Method: http.MethodPut,
			Target: c.ep.Base + "/" + wire.EntityPath(table, p.pk, p.rk),
			Header: http.Header{
				"Content-Type":       {"application/json"},
				"Accept":             {"application/json;odata=minimalmetadata"},
				"Dataserviceversion": {"3.0"},
				"Content-Length":     {strconv.Itoa(len(p.body))},
			},
			Body: p.body,
		}
	}
	bb, cb := "batch_"+newID(), "changeset_"+newID()
	body := changeset.AppendRequest(make([]byte, 0, size+len(ps)*400+256), bb, cb, b)
	r := &request{method: http.MethodPost, path: "/$batch", body: body, contentType: changeset.ContentType(bb)}
	resp, err := c.do(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w (writing table %s)", err, table) // a $batch path names none
	}
	if resp.status != http.StatusAccepted {
		se := c.fail(r, resp)
		return 0, c.refusal(table, ps, se.Code, se.Message, se)
	}
	status, code, msg, err := batchFailure(resp.body, len(ps))
	if err != nil {
		return 0, fmt.Errorf("%s: POST /$batch of table %s: %v", c.side, table, err)
	}
	if status == 0 {
		return len(body), nil
	}
	return 0, c.refusal(table, ps, code, msg, &ServiceError{Side: c.side, Method: "POST", Path: "/$batch", Status: status, Code: code, Message: msg})
}

// entityCodes are the error codes that refuse one entity for what it
// holds (its keys, properties, size): --on-refused skip goes on past it.
var entityCodes = map[string]bool{
	"InvalidInput": true, "OutOfRangeInput": true, "InvalidValueType": true,
	"EntityTooLarge": true, "PropertyValueTooLarge": true, "PropertyNameInvalid": true,
	"PropertyNameTooLong": true, "PropertiesNeedValue": true, "DuplicatePropertiesSpecified": true,
	"TooManyProperties": true, "InvalidDuplicateRow": true, "KeyValueTooLarge": true,
}

// entityLevel reports whether a failure with code refuses an entity rather
// than every write to the destination. An expired SAS (401/403
// AuthenticationFailed), a deleted table (404 TableNotFound), a 413 and the
// like refuse everything: counted per entity, a deleted table printed a
// refusal for each of 266,400 entities. A key-range SAS refuses the
// entities outside its range with 403 AuthorizationFailure.
func (c *client) entityLevel(code string) bool {
	if entityCodes[code] {
		return true
	}
	if code == "AuthorizationFailure" && c.ep.sas != nil {
		for _, k := range []string{"spk", "srk", "epk", "erk"} {
			if c.ep.sas.Get(k) != "" {
				return true
			}
		}
	}
	return false
}

// refusal turns a failed batch into *Refused when it names an entity and
// its code refuses that entity only; otherwise the failure is err.
func (c *client) refusal(table string, ps []prepared, code, msg string, err error) error {
	if !c.entityLevel(code) {
		return err
	}
	if m := indexRE.FindStringSubmatch(msg); m != nil {
		if i, _ := strconv.Atoi(m[1]); i < len(ps) {
			return &Refused{Table: table, PartitionKey: ps[i].pk, RowKey: ps[i].rk, Code: code, Message: msg[len(m[0]):]}
		}
	}
	if len(ps) == 1 {
		return &Refused{Table: table, PartitionKey: ps[0].pk, RowKey: ps[0].rk, Code: code, Message: msg}
	}
	return &unnamedRefusal{err}
}

// unnamedRefusal is a refusal of one or more entities of a batch that
// names none of them: a key-range SAS's 403 for the whole batch. The
// writer sends such a batch again one entity at a time to learn which.
type unnamedRefusal struct{ err error }

func (u *unnamedRefusal) Error() string { return u.err.Error() }
func (u *unnamedRefusal) Unwrap() error { return u.err }

// batchFailure reads the sub-responses of a $batch response of ops
// operations: the first non-2xx one's status, error code and message
// (status 0: all good). A response that does not answer each operation
// with a 2xx, or one failure for the changeset, confirms nothing and is an
// error: a 202 with an empty body once counted as a batch written.
func batchFailure(b []byte, ops int) (int, string, string, error) {
	s := string(b)
	n := 0
	for {
		// A status line starts a line (after a part's headers).
		i := strings.Index(s, "\nHTTP/1.1 ")
		if i < 0 {
			break
		}
		s = s[i+len("\nHTTP/1.1 "):]
		if len(s) < 4 || !isDigits(s[:3]) || s[3] != ' ' && s[3] != '\r' {
			return 0, "", "", fmt.Errorf("sub-response %d has no numeric status: %.40q", n, s)
		}
		n++
		status, _ := strconv.Atoi(s[:3])
		if status >= 200 && status < 300 {
			continue
		}
		rest := s
		if j := strings.Index(rest, "\r\n\r\n"); j >= 0 {
			rest = rest[j+4:]
		}
		if k := strings.Index(rest, "\r\n--"); k >= 0 {
			rest = rest[:k]
		}
		se := parseError("", "", "", status, []byte(strings.TrimSpace(rest)))
		return status, se.Code, se.Message, nil
	}
	if n != ops {
		return 0, "", "", fmt.Errorf("%d sub-responses for %d operations: the write is not confirmed", n, ops)
	}
	return 0, "", "", nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
