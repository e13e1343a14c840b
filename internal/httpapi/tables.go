package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/wire"
	"github.com/partita/partita/odata"
)

// contentTypes are the JSON Content-Type values by metadata level.
var contentTypes = [...][]string{
	wire.MinimalMetadata: {wire.MinimalMetadata.ContentType()},
	wire.NoMetadata:      {wire.NoMetadata.ContentType()},
	wire.FullMetadata:    {wire.FullMetadata.ContentType()},
}

// writeJSON sends a JSON body with the standard success headers.
func writeJSON(w http.ResponseWriter, rc *reqCtx, status int, body []byte) {
	h := w.Header()
	h["Cache-Control"] = valNoCache
	h["Content-Type"] = contentTypes[rc.meta]
	if len(body) >= autoLengthMax {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	w.Write(body)
}

// autoLengthMax: a body shorter than this, written whole by a handler that
// then returns, gets its Content-Length from net/http (and from HTTP/2's
// server), which buffers that much before it would switch to chunked
// encoding. Leaving the header to net/http saves an allocation and keeps
// a point read's header map small enough not to grow.
const autoLengthMax = 2048

// writeNoContent sends 204 with the standard headers.
func writeNoContent(w http.ResponseWriter) {
	// No Content-Length: net/http removes it from a 204 (RFC 9110 forbids
	// it there), so setting it only grew the header map.
	w.Header()["Cache-Control"] = valNoCache
	w.WriteHeader(http.StatusNoContent)
}

// prefer returns the Prefer header's return-content/return-no-content.
func prefer(h http.Header) string {
	for _, v := range h["Prefer"] {
		for v != "" {
			var p string
			p, v, _ = strings.Cut(v, ",")
			switch p = strings.TrimSpace(p); p {
			case "return-no-content", "return-content":
				return p
			}
		}
	}
	return ""
}

// preferenceApplied is the Preference-Applied header's value for what
// prefer returned (not ""), without an allocation per request.
func preferenceApplied(p string) []string {
	if p == "return-no-content" {
		return valReturnNoContent
	}
	return valReturnContent
}

func appendTable(b []byte, rc *reqCtx, name string, element bool) []byte {
	b = append(b, '{')
	if rc.meta != wire.NoMetadata {
		if element {
			b = append(b, `"odata.metadata":`...)
			b = wire.AppendString(b, rc.base+"/$metadata#Tables/@Element")
			b = append(b, ',')
		}
		if rc.meta == wire.FullMetadata {
			b = append(b, `"odata.type":`...)
			b = wire.AppendString(b, rc.account+".Tables")
			b = append(b, `,"odata.id":`...)
			b = wire.AppendString(b, rc.base+"/Tables('"+name+"')")
			b = append(b, `,"odata.editLink":`...)
			b = wire.AppendString(b, "Tables('"+name+"')")
			b = append(b, ',')
		}
	}
	b = append(b, `"TableName":`...)
	b = wire.AppendString(b, name)
	return append(b, '}')
}

// tableNameOf reads a Create Table body as the service's OData reader does
// an entity's: the member TableName, by its exact name, a string; a
// repeated member is DuplicatePropertiesSpecified, anything not JSON (or
// not UTF-8) InvalidInput. (encoding/json matched "tablename" as well and
// let the last of two win.)
func tableNameOf(body []byte) (string, error) {
	e, _, _, err := wire.DecodeEntity(body)
	if err != nil {
		return "", err
	}
	v, ok := e.Get("TableName")
	if !ok || v.Type != edm.String {
		return "", partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	return v.Str, nil
}

func (s *Server) handleCreateTable(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	// The table's name is in the body, but whether a SAS may create
	// tables at all is not: refuse before reading it. (A service SAS
	// never may; an account SAS's table is not checked.)
	if err := rc.authorize(auth.OpCreateTable, ""); err != nil {
		return err
	}
	body, err := s.readBody(w, r, rc, 64<<10)
	if err != nil {
		return err
	}
	name, err := tableNameOf(body)
	if err != nil {
		return err
	}
	if err := rc.authorize(auth.OpCreateTable, name); err != nil {
		return err
	}
	pref := prefer(r.Header)
	if pref != "" {
		w.Header()[hdrPreferenceApplied] = preferenceApplied(pref)
	}
	t, err := s.store.CreateTable(rc.ctx, rc.account, name)
	if err != nil {
		return err
	}
	loc := rc.base + "/Tables('" + t.Name + "')"
	locs := []string{loc}
	w.Header()[hdrLocation] = locs
	if pref == "return-no-content" {
		w.Header()[hdrDataServiceID] = locs
		writeNoContent(w)
		return nil
	}
	writeJSON(w, rc, http.StatusCreated, appendTable(nil, rc, t.Name, true))
	return nil
}

func (s *Server) handleDeleteTable(w http.ResponseWriter, r *http.Request, rc *reqCtx, name string) error {
	if err := rc.authorize(auth.OpDeleteTable, name); err != nil {
		return err
	}
	if err := s.store.DeleteTable(rc.ctx, rc.account, name); err != nil {
		return err
	}
	s.aclCache.forget(aclCacheKey(rc.account, name))
	writeNoContent(w)
	return nil
}

func (s *Server) handleGetTable(w http.ResponseWriter, r *http.Request, rc *reqCtx, name string) error {
	if err := rc.authorize(auth.OpQueryTables, name); err != nil {
		return err
	}
	t, err := s.store.GetTable(rc.ctx, rc.account, name)
	if err != nil {
		return err
	}
	writeJSON(w, rc, http.StatusOK, appendTable(nil, rc, t.Name, true))
	return nil
}

func (s *Server) handleQueryTables(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if err := rc.authorize(auth.OpQueryTables, ""); err != nil {
		return err
	}
	q := partita.TableQuery{}
	top, zero, err := parseTop(rc.query)
	if err != nil {
		return err
	}
	q.Top = top
	if f := rc.query.Get("$filter"); f != "" {
		if q.Filter, err = odata.Parse(strings.ToValidUTF8(f, "\uFFFD")); err != nil {
			return err
		}
	}
	if q.NextTableName, err = wire.ParseNextTable(rc.query); err != nil {
		return err
	}
	if zero {
		q.Filter = &odata.BoolLit{Value: false} // $top=0: no tables
	}
	var page partita.TablePage
	// A constant-false filter ($filter=false, $top=0) reads nothing.
	if f, ok := q.Filter.(*odata.BoolLit); !ok || f.Value {
		if page, err = s.store.QueryTables(rc.ctx, rc.account, q); err != nil {
			return err
		}
	}
	b := wire.AppendPageStart(nil, rc.meta, wire.TablesMetadataURL(rc.base))
	for i, t := range page.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTable(b, rc, t.Name, false)
	}
	b = wire.AppendPageEnd(b)
	wire.SetNextTable(w.Header(), page.NextTableName)
	writeJSON(w, rc, http.StatusOK, b)
	return nil
}
