package httpapi

import (
	"net/http"
	"strings"

	"github.com/partita/partita/internal/auth"
)

// preauthorize refuses, before the request takes a slot, what its shared
// access signature cannot allow, wherever the method and URL tell the
// operation. It follows route and the handlers (each still checks for
// itself): it stays silent on anything route or a handler would reject
// before its own authorize, so the answer is the one they would give.
func (s *Server) preauthorize(r *http.Request, rc *reqCtx) error {
	if rc.sas == nil {
		return nil // an account key may do anything
	}
	res, err := rc.resourceOf()
	if err != nil {
		return nil
	}
	method := r.Method
	if xm := r.Header.Values("X-HTTP-Method"); len(xm) > 0 {
		m := strings.ToUpper(xm[0])
		if len(xm) > 1 || method != http.MethodPost || (m != "MERGE" && m != "PATCH" && m != "PUT" && m != "DELETE") {
			return nil
		}
		method = m
	}
	var op auth.Operation
	table, key := res.table, false
	switch res.kind {
	case resService:
		restype, comp := rc.query.Get("restype"), rc.query.Get("comp")
		switch {
		case restype != "service":
		case comp == "properties" && method == http.MethodGet:
			op = auth.OpGetServiceProperties
		case comp == "properties" && method == http.MethodPut:
			op = auth.OpSetServiceProperties
		case comp == "stats" && method == http.MethodGet:
			op = auth.OpGetServiceStats
		case (comp == compAdvisor || comp == compHeat) && (method == http.MethodGet || method == http.MethodHead):
			op = auth.OpReadAdvisor
		}
	case resTables:
		switch method {
		case http.MethodGet:
			op = auth.OpQueryTables
		case http.MethodPost:
			op, table = auth.OpCreateTable, ""
		}
	case resTable:
		switch method {
		case http.MethodGet:
			op = auth.OpQueryTables
		case http.MethodDelete:
			op = auth.OpDeleteTable
		}
	case resBatch:
		if method == http.MethodPost {
			if limit, noWrite := s.batchLimit(rc); noWrite != nil && (limit == 0 || r.ContentLength > limit) {
				return noWrite
			}
		}
	case resEntities:
		switch {
		case rc.query.Get("comp") == "acl":
			switch method {
			case http.MethodGet, http.MethodHead:
				op = auth.OpGetTableACL
			case http.MethodPut:
				op = auth.OpSetTableACL
			}
		case method == http.MethodGet:
			op = auth.OpQueryEntities
		case method == http.MethodPost:
			op = auth.OpInsertEntity
		}
	case resEntity:
		key = true
		switch method {
		case http.MethodGet:
			op = auth.OpGetEntity
		case http.MethodDelete:
			op = auth.OpDeleteEntity
		case http.MethodPut, "MERGE", http.MethodPatch:
			cond, err := parseIfMatch(r.Header)
			if err != nil {
				return nil
			}
			op = operationOf(writeKind(method != http.MethodPut, cond))
		}
	}
	if op == 0 {
		return nil
	}
	if err := rc.authorize(op, table); err != nil {
		return err
	}
	if key {
		return rc.authorizeKey(res.key)
	}
	return nil
}
