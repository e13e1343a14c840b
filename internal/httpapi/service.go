package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/partita/partita"
	"github.com/partita/partita/internal/auth"
	"github.com/partita/partita/internal/settings"
)

// writeXML sends an XML body the way the service does: no Cache-Control,
// no X-Content-Type-Options.
func writeXML(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func invalidXML(err error) error {
	if errors.Is(err, settings.ErrInvalidXML) {
		return &partita.Error{Code: partita.CodeInvalidXMLDocument, Message: "XML specified is not syntactically valid.", Err: err}
	}
	return err
}

// handleService answers the account-level XML operations: service
// properties, and service stats on the secondary endpoint.
func (s *Server) handleService(w http.ResponseWriter, r *http.Request, rc *reqCtx, method string) error {
	restype, comp := rc.query.Get("restype"), rc.query.Get("comp")
	switch {
	case restype == "service" && comp == "properties" && method == http.MethodGet:
		rc.op = "GetServiceProperties"
		if err := rc.authorize(auth.OpGetServiceProperties, ""); err != nil {
			return err
		}
		p, err := s.loadProperties(rc.ctx, rc.account)
		if err != nil {
			return err
		}
		writeXML(w, http.StatusOK, settings.AppendServiceProperties(nil, p))
		return nil
	case restype == "service" && comp == "properties" && method == http.MethodPut:
		rc.op = "SetServiceProperties"
		if err := rc.authorize(auth.OpSetServiceProperties, ""); err != nil {
			return err
		}
		body, err := s.readBody(w, r, rc, 1<<20)
		if err != nil {
			return err
		}
		upd, err := settings.DecodeServiceProperties(body)
		if err != nil {
			return invalidXML(err)
		}
		p, err := s.loadProperties(rc.ctx, rc.account)
		if err != nil {
			return err
		}
		p.Merge(upd)
		raw, err := p.MarshalBinary()
		if err != nil {
			return err
		}
		if err := s.store.SetServiceProperties(rc.ctx, rc.account, raw); err != nil {
			return err
		}
		s.corsCache.forget(rc.account)
		h := w.Header()
		h.Del("X-Content-Type-Options")
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
		return nil
	case restype == "service" && comp == "stats" && method == http.MethodGet:
		rc.op = "GetServiceStats"
		if err := rc.authorize(auth.OpGetServiceStats, ""); err != nil {
			return err
		}
		if !rc.secondary {
			return partita.NewError(partita.CodeInvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid.")
		}
		writeXML(w, http.StatusOK, settings.AppendServiceStats(nil, s.now()))
		return nil
	case restype == "service" && (comp == compAdvisor || comp == compHeat) && (method == http.MethodGet || method == http.MethodHead):
		return s.handleAdvisor(w, rc, comp)
	}
	return partita.NewError(partita.CodeInvalidQueryParameterValue, "Value for one of the query parameters specified in the request URI is invalid.")
}

// partita's own service-level reads of the advisor (docs/COMPATIBILITY.md
// §13). The service has no comp value with a hyphen, and answers an
// unknown one with 400 InvalidQueryParameterValue, so these can neither
// collide with a real operation nor change what a real client sees.
const (
	compAdvisor = "partita-advisor"
	compHeat    = "partita-heat"
)

// handleAdvisor answers comp=partita-advisor (advisor.Report) and
// comp=partita-heat (advisor.Heat) as JSON, with the signed-in account's
// tables only. It is authenticated and admitted like every request; an
// account SAS needs srt s and o and sp r (it shows partition keys), a
// table SAS is refused. Without an advisor it is 501 NotImplemented.
func (s *Server) handleAdvisor(w http.ResponseWriter, rc *reqCtx, comp string) error {
	rc.op = "GetPartitaAdvisor"
	if comp == compHeat {
		rc.op = "GetPartitaHeat"
	}
	if err := rc.authorize(auth.OpReadAdvisor, ""); err != nil {
		return err
	}
	if s.advisor == nil {
		return partita.NewError(partita.CodeNotImplemented, partita.MsgNotImplemented)
	}
	var v any
	if comp == compHeat {
		v = s.advisor.AccountHeatMap(rc.account)
	} else {
		v = s.advisor.AccountFindings(rc.account)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return nil
}

// handleTableACL answers Get/Set Table ACL.
func (s *Server) handleTableACL(w http.ResponseWriter, r *http.Request, rc *reqCtx, table, method string) error {
	switch method {
	case http.MethodGet, http.MethodHead:
		rc.op = "GetTableACL"
		if err := rc.authorize(auth.OpGetTableACL, table); err != nil {
			return err
		}
		raw, err := s.store.GetTableACL(rc.ctx, rc.account, table)
		if err != nil {
			return err
		}
		ids, err := settings.UnmarshalACL(raw)
		if err != nil {
			return err
		}
		writeXML(w, http.StatusOK, settings.AppendACL(nil, ids))
		return nil
	case http.MethodPut:
		rc.op = "SetTableACL"
		if err := rc.authorize(auth.OpSetTableACL, table); err != nil {
			return err
		}
		body, err := s.readBody(w, r, rc, 1<<20)
		if err != nil {
			return err
		}
		ids, err := settings.DecodeACL(body)
		if err != nil {
			return invalidXML(err)
		}
		var raw []byte
		if len(ids) > 0 {
			raw = settings.MarshalACL(ids)
		}
		if err := s.store.SetTableACL(rc.ctx, rc.account, table, raw); err != nil {
			return err
		}
		s.aclCache.forget(aclCacheKey(rc.account, table))
		w.Header().Del("X-Content-Type-Options")
		writeNoContent(w)
		return nil
	}
	return partita.NewError(partita.CodeMethodNotAllowed, "The requested method is not allowed on the specified resource.")
}

// handlePreflight answers a CORS preflight from the account's rules
// (docs/COMPATIBILITY.md §11). Preflights are not authenticated.
func (s *Server) handlePreflight(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	rc.op = "Preflight"
	origin, method := r.Header.Get("Origin"), r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return partita.NewError(partita.CodeInvalidHeaderValue, "A required CORS header is not present.")
	}
	var reqHeaders []string
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				reqHeaders = append(reqHeaders, h)
			}
		}
	}
	// A preflight is not authenticated: an account partita does not serve
	// has no rules, and a served one's come from the cache, so a stream of
	// preflights costs no store reads.
	var rules []settings.CorsRule
	if _, known := s.keys[rc.account]; known {
		var err error
		if rules, err = s.corsCache.rules(r.Context(), rc.account); err != nil {
			return err
		}
	}
	rule, ok := settings.MatchCORS(rules, origin, method, reqHeaders)
	if !ok {
		return partita.NewError(partita.CodeCorsPreflightFailure, "CORS not enabled or no matching rule found for this request.")
	}
	h := w.Header()
	if rule.AllowsAnyOrigin() {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Methods", method)
	if len(reqHeaders) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(reqHeaders, ","))
	}
	h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeInSeconds))
	h.Set("Content-Length", "0")
	if rc.bodyPending {
		LeaveBodyUnread(w) // a preflight is unauthenticated and takes no body
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// corsHeaders adds the CORS headers of an actual request, as the table
// "how the Vary header is set" in the service's CORS documentation has
// them. Without rules nothing is added. With rules:
//
//   - a matching rule for the request's Origin: Access-Control-Allow-Origin
//     with that origin, Allow-Credentials, the exposed headers and
//     Vary: Origin;
//   - a matching "*" rule (with or without an Origin header):
//     Access-Control-Allow-Origin: * and the exposed headers, no Vary;
//   - no matching rule (with or without an Origin header): only
//     Vary: Origin, since the answer would differ for another origin.
//
// The exposed headers are the rule's ExposedHeaders with its prefixes
// expanded against exposableHeaders: a browser takes "x-ms-*" there for
// the name of one header, and would hide every x-ms-* header from the page.
func (s *Server) corsHeaders(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	rules, err := s.corsCache.rules(rc.ctx, rc.account)
	if err != nil || len(rules) == 0 {
		return
	}
	var rule *settings.CorsRule
	if origin := r.Header.Get("Origin"); origin != "" {
		rule, _ = settings.MatchCORS(rules, origin, r.Method, nil)
	} else {
		rule, _ = settings.MatchCORSNoOrigin(rules, r.Method)
	}
	h := w.Header()
	switch {
	case rule == nil:
		h.Add("Vary", "Origin")
		return
	case rule.AllowsAnyOrigin():
		h.Set("Access-Control-Allow-Origin", "*")
	default:
		h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
	}
	if rule.ExposedHeaders != "" {
		h.Set("Access-Control-Expose-Headers", rule.ExposedHeaders) // expanded (corsCache)
	}
}

// exposableHeaders are the response headers partita may send that a CORS
// rule's ExposedHeaders can expose: the rule's prefixes ("x-ms-*", "*")
// are expanded against them (settings.CorsRule.ExposeHeaders). The CORS
// headers themselves, Vary and Connection are left out.
// TestCORSExposeHeadersCoverResponses checks that responses send no other.
var exposableHeaders = []string{
	"Cache-Control", "Content-Length", "Content-Type", "DataServiceId", "DataServiceVersion",
	"Date", "ETag", "Location", "Preference-Applied", "Retry-After", "Server",
	"X-Content-Type-Options",
	"x-ms-client-request-id", "x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey",
	"x-ms-continuation-NextTableName", "x-ms-error-code", "x-ms-request-id", "x-ms-version",
	"x-partita-entities-examined", "x-partita-query-class",
}
