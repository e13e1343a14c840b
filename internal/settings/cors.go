package settings

import "strings"

// MatchCORS returns the first rule that allows a cross-origin request
// (docs/COMPATIBILITY.md §11): origin is in AllowedOrigins (exact and case-sensitive,
// or the rule allows "*"), method is in AllowedMethods (case-insensitive),
// and every requested header matches AllowedHeaders (case-insensitive
// exact, a "prefix*" entry, or "*"). Each element of requestHeaders may
// itself be a comma-separated list, as in Access-Control-Request-Headers.
//
// For a preflight, pass the Access-Control-Request-Method and -Headers; for
// an actual request, its method and no headers. ok is false when no rule
// matches (a preflight then fails with 403 CorsPreflightFailure; an actual
// request gets no CORS headers). An empty origin or method never matches.
func MatchCORS(rules []CorsRule, origin, method string, requestHeaders []string) (rule *CorsRule, ok bool) {
	if origin == "" || method == "" {
		return nil, false
	}
	var headers []string
	for _, h := range requestHeaders {
		headers = append(headers, splitList(h)...)
	}
	for i := range rules {
		r := &rules[i]
		if r.allowsOrigin(origin) && r.allowsMethod(method) && r.allowsHeaders(headers) {
			return r, true
		}
	}
	return nil, false
}

// MatchCORSNoOrigin returns the first rule that allows every origin ("*")
// and method: the rule that governs an actual request without an Origin
// header, which the service then answers with
// Access-Control-Allow-Origin: * (and the rule's exposed headers). An empty
// method never matches.
func MatchCORSNoOrigin(rules []CorsRule, method string) (rule *CorsRule, ok bool) {
	if method == "" {
		return nil, false
	}
	for i := range rules {
		r := &rules[i]
		if r.AllowsAnyOrigin() && r.allowsMethod(method) {
			return r, true
		}
	}
	return nil, false
}

// AllowsAnyOrigin reports whether the rule's AllowedOrigins holds "*": the
// edge then answers Access-Control-Allow-Origin: * and no
// Access-Control-Allow-Credentials.
func (r *CorsRule) AllowsAnyOrigin() bool {
	for _, o := range splitList(r.AllowedOrigins) {
		if o == "*" {
			return true
		}
	}
	return false
}

func (r *CorsRule) allowsOrigin(origin string) bool {
	for _, o := range splitList(r.AllowedOrigins) {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}

func (r *CorsRule) allowsMethod(method string) bool {
	for _, m := range splitList(r.AllowedMethods) {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

func (r *CorsRule) allowsHeaders(headers []string) bool {
	if len(headers) == 0 {
		return true
	}
	allowed := splitList(r.AllowedHeaders)
	for _, h := range headers {
		if !headerAllowed(allowed, h) {
			return false
		}
	}
	return true
}

func headerAllowed(allowed []string, h string) bool {
	for _, a := range allowed {
		if a == "*" {
			return true
		}
		if prefix, ok := strings.CutSuffix(a, "*"); ok {
			if len(h) >= len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
				return true
			}
			continue
		}
		if strings.EqualFold(a, h) {
			return true
		}
	}
	return false
}

// ExposeHeaders returns the Access-Control-Expose-Headers value of a
// response under the rule: the rule's ExposedHeaders with each prefixed
// entry ("x-ms-*", or "*" alone) replaced by the names in sent that it
// matches (case-insensitively), and each literal entry as written; no name
// twice (case-insensitively), in the order first matched. sent lists the
// response headers the server may send (a superset of any one response's
// is fine: exposing a header a response lacks does nothing).
//
// The browser reads Access-Control-Expose-Headers as a list of header
// names (the Fetch standard): "x-ms-*" there names a header called
// "x-ms-*", which exposes nothing, and "*" is a wildcard only for requests
// without credentials. A rule's prefixes must therefore be expanded, as
// Azurite does, or the browser hides x-ms-continuation-* and ETag from the
// page and a browser client's query silently stops after its first page.
func (r *CorsRule) ExposeHeaders(sent []string) string {
	var out []string
	seen := func(name string) bool {
		for _, o := range out {
			if strings.EqualFold(o, name) {
				return true
			}
		}
		return false
	}
	for _, e := range splitList(r.ExposedHeaders) {
		prefix, isPrefix := strings.CutSuffix(e, "*")
		if !isPrefix {
			if !seen(e) {
				out = append(out, e)
			}
			continue
		}
		for _, h := range sent {
			if len(h) >= len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) && !seen(h) {
				out = append(out, h)
			}
		}
	}
	return strings.Join(out, ",")
}
