package httpapi

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/partita/partita"
)

// resourceKind is what a resource path names.
type resourceKind uint8

const (
	resService  resourceKind = iota + 1 // account root
	resTables                           // Tables, Tables()
	resTable                            // Tables('name')
	resBatch                            // $batch
	resEntities                         // table, table()
	resEntity                           // table(PartitionKey='…',RowKey='…')
)

type resource struct {
	kind  resourceKind
	table string
	key   partita.Key
}

var errQuerySyntax = partita.NewError(partita.CodeInvalidInput, "Bad Request - Error in query syntax.")

// parseResource parses the raw path after the account (docs/COMPATIBILITY.md §2).
// The path is percent-decoded as a whole before it is split, as the service
// does: t%28PartitionKey=%27a%27,RowKey=%27b%27%29 (what net/url and many
// HTTP libraries send) names the same entity as t(PartitionKey='a',RowKey='b'),
// and Tables%28%27t%27%29 the same table as Tables('t'). A table name cannot
// hold '(', so the first '(' of the decoded path ends it; a key may hold
// any character, '(' and ')' included.
func parseResource(raw string) (resource, error) { return parseResourceMode(raw, false) }

// parseResourceMode is parseResource; lenient accepts a lone quote inside a
// key, which the Go SDK's batch writer sends because it does not double
// quotes in sub-request URLs (a quote then ends the literal only where the
// key predicate can go on).
func parseResourceMode(raw string, lenient bool) (resource, error) {
	if raw == "" {
		return resource{kind: resService}, nil
	}
	path, err := url.PathUnescape(raw)
	if err != nil {
		// A bad escape in the table name is invalid input, one in the key
		// predicate a syntax error.
		name := raw
		if i := strings.IndexByte(name, '('); i >= 0 {
			name = name[:i]
		}
		// "%28" has no letters to fold. (An index into strings.ToUpper's
		// result, whose length differs from name's for invalid UTF-8 or
		// letters such as U+0250, cut name out of bounds: a panic, a 500.)
		if i := strings.Index(name, "%28"); i >= 0 {
			name = name[:i]
		}
		if _, err := url.PathUnescape(name); err != nil {
			return resource{}, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
		}
		return resource{}, errQuerySyntax
	}
	if path == "$batch" {
		return resource{kind: resBatch}, nil
	}
	tname, args, hasArgs := strings.Cut(path, "(")
	if tname == "" || strings.Contains(tname, "/") {
		return resource{}, partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
	}
	if !hasArgs {
		if partita.SameTable(tname, "Tables") {
			return resource{kind: resTables}, nil
		}
		return resource{kind: resEntities, table: tname}, nil
	}
	if !strings.HasSuffix(args, ")") {
		return resource{}, errQuerySyntax
	}
	decoded := args[:len(args)-1]
	if partita.SameTable(tname, "Tables") {
		if decoded == "" {
			return resource{kind: resTables}, nil
		}
		lit, rest, ok := readLiteral(strings.TrimSpace(decoded))
		if !ok || strings.TrimSpace(rest) != "" {
			return resource{}, errQuerySyntax
		}
		return resource{kind: resTable, table: lit}, nil
	}
	if decoded == "" {
		return resource{kind: resEntities, table: tname}, nil
	}
	key, err := parseKeyPredicate(decoded, false)
	if err != nil && lenient {
		key, err = parseKeyPredicate(decoded, true)
	}
	if err != nil {
		return resource{}, err
	}
	return resource{kind: resEntity, table: tname, key: key}, nil
}

// goSDKAgent is the Go SDK's (aztables) token in a User-Agent; its batch
// writer does not double the quotes of keys in sub-request URLs.
const goSDKAgent = "azsdk-go-aztables/"

// goSDK reports whether a User-Agent is the Go SDK's: its token first, or
// after the application id a client may set (Telemetry.ApplicationID puts
// "myapp " before it). A client with telemetry disabled sends none and is
// not recognised.
func goSDK(ua string) bool {
	return strings.HasPrefix(ua, goSDKAgent) || strings.Contains(ua, " "+goSDKAgent)
}

// keyArgs returns what the raw resource path holds between the
// parentheses after its table name, decoded: PartitionKey='…',RowKey='…'.
func keyArgs(raw string) (string, bool) {
	path, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	_, args, ok := strings.Cut(path, "(")
	if !ok || !strings.HasSuffix(args, ")") {
		return "", false
	}
	return args[:len(args)-1], true
}

// undoubledTarget reports whether the raw resource path is the entity k
// addressed with its keys' quotes not doubled: table(PartitionKey='…',
// RowKey='…') with the keys as they are.
func undoubledTarget(raw string, k partita.Key) bool {
	args, ok := keyArgs(raw)
	return ok && args == "PartitionKey='"+k.PartitionKey+"',RowKey='"+k.RowKey+"'"
}

// undoubledKey reads the raw resource path's key predicate with quotes
// not doubled (readKeyLiteral's lenient mode), whether or not it also
// reads with doubled ones.
func undoubledKey(raw string) (partita.Key, bool) {
	args, ok := keyArgs(raw)
	if !ok {
		return partita.Key{}, false
	}
	k, err := parseKeyPredicate(args, true)
	return k, err == nil
}

// parseKeyPredicate parses PartitionKey='…',RowKey='…' in either order.
func parseKeyPredicate(s string, lenient bool) (partita.Key, error) {
	var k partita.Key
	var havePK, haveRK bool
	rest := strings.TrimSpace(s)
	for i := 0; i < 2; i++ {
		name, after, ok := strings.Cut(rest, "=")
		if !ok {
			return k, errQuerySyntax
		}
		lit, r, ok := readKeyLiteral(strings.TrimSpace(after), lenient, i == 1)
		if !ok {
			return k, errQuerySyntax
		}
		switch strings.TrimSpace(name) {
		case partita.PropPartitionKey:
			if havePK {
				return k, errQuerySyntax
			}
			k.PartitionKey, havePK = lit, true
		case partita.PropRowKey:
			if haveRK {
				return k, errQuerySyntax
			}
			k.RowKey, haveRK = lit, true
		default:
			return k, errQuerySyntax
		}
		r = strings.TrimSpace(r)
		if i == 0 {
			if !strings.HasPrefix(r, ",") {
				return k, errQuerySyntax
			}
			r = strings.TrimSpace(r[1:])
		} else if r != "" {
			return k, errQuerySyntax
		}
		rest = r
	}
	// A '/' or '\' in a key in the URL is a syntax error for the service.
	if strings.ContainsAny(k.PartitionKey, `/\`) || strings.ContainsAny(k.RowKey, `/\`) {
		return k, errQuerySyntax
	}
	return k, nil
}

// nextKeyRE matches what may follow the first key literal.
var nextKeyRE = regexp.MustCompile(`^\s*,\s*(PartitionKey|RowKey)\s*=\s*'`)

// readKeyLiteral reads a key literal. In lenient mode quotes are not
// doubled: a quote ends the literal only where the predicate can go on
// (",RowKey='" after the first key, the end after the last); any other
// quote belongs to the key.
func readKeyLiteral(s string, lenient, last bool) (string, string, bool) {
	if !lenient {
		return readLiteral(s)
	}
	if len(s) == 0 || s[0] != '\'' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			continue
		}
		rest := s[i+1:]
		if (last && strings.TrimSpace(rest) == "") || (!last && nextKeyRE.MatchString(rest)) {
			return s[1:i], rest, true
		}
	}
	return "", "", false
}

// readLiteral reads an OData string literal '…' with ” escapes from the
// start of s and returns its value and the rest of s.
func readLiteral(s string) (string, string, bool) {
	if len(s) == 0 || s[0] != '\'' {
		return "", "", false
	}
	var sb strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				sb.WriteByte('\'')
				i++
				continue
			}
			return sb.String(), s[i+1:], true
		}
		sb.WriteByte(s[i])
	}
	return "", "", false
}

// resourceOf parses the request's resource path, once per request.
func (rc *reqCtx) resourceOf() (resource, error) {
	if !rc.hasParsed {
		rc.parsed, rc.parsedErr = parseResource(rc.resource)
		if rc.parsedErr == nil && rc.parsed.kind == resEntity &&
			(urlRejects(rc.parsed.key.PartitionKey) || urlRejects(rc.parsed.key.RowKey)) {
			rc.parsedErr = partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput)
		}
		rc.hasParsed = true
	}
	return rc.parsed, rc.parsedErr
}

// urlRejects reports whether s holds a character that the service's HTTP
// front end (HTTP.sys) refuses in a URL path, percent-encoded or not, with
// 400 before storage sees the request: C0 controls, DEL, and the C1
// characters U+0081, U+008D, U+008F, U+0090 and U+009D (docs/COMPATIBILITY.md
// §2). Other keys that cannot exist are merely not found.
func urlRejects(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s):
			switch s[i+1] {
			case 0x81, 0x8d, 0x8f, 0x90, 0x9d:
				return true
			}
		}
	}
	return false
}

// route dispatches on the resource and method.
func (s *Server) route(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	res, err := rc.resourceOf()
	if err != nil {
		return err
	}
	method := r.Method
	if xm := r.Header.Values("X-HTTP-Method"); len(xm) > 0 {
		switch {
		case len(xm) > 1:
			return partita.NewError(partita.CodeXMethodIncorrectCount, "More than one X-HTTP-Method is specified.")
		case method != http.MethodPost:
			return partita.NewError(partita.CodeXMethodNotUsingPost, "The request uses X-HTTP-Method with an HTTP verb other than POST.")
		}
		switch strings.ToUpper(xm[0]) {
		case "MERGE", "PATCH", "PUT", "DELETE":
			method = strings.ToUpper(xm[0])
		default:
			return partita.NewError(partita.CodeXMethodIncorrectValue, "The specified X-HTTP-Method is invalid.")
		}
	}
	// The -secondary endpoint is a read-only replica in the service: every
	// write there is refused before it reaches the store.
	if rc.secondary && method != http.MethodGet && method != http.MethodHead {
		return partita.NewError(partita.CodeInsufficientAccountPermissions, partita.MsgWriteNotAllowed)
	}
	switch res.kind {
	case resService:
		rc.xml = true
		return s.handleService(w, r, rc, method)
	case resTables:
		switch method {
		case http.MethodGet:
			rc.op = "QueryTables"
			return s.handleQueryTables(w, r, rc)
		case http.MethodPost:
			rc.op = "CreateTable"
			return s.handleCreateTable(w, r, rc)
		}
	case resTable:
		switch method {
		case http.MethodGet:
			rc.op = "GetTable"
			return s.handleGetTable(w, r, rc, res.table)
		case http.MethodDelete:
			rc.op = "DeleteTable"
			return s.handleDeleteTable(w, r, rc, res.table)
		}
	case resBatch:
		if method == http.MethodPost {
			rc.op = "EntityGroupTransaction"
			return s.handleBatch(w, r, rc)
		}
	case resEntities:
		if rc.query.Get("comp") == "acl" {
			rc.xml = true
			return s.handleTableACL(w, r, rc, res.table, method)
		}
		switch method {
		case http.MethodGet:
			rc.op = "QueryEntities"
			return s.handleQueryEntities(w, r, rc, res.table)
		case http.MethodPost:
			rc.op = "InsertEntity"
			return s.handleInsertEntity(w, r, rc, res.table)
		}
	case resEntity:
		switch method {
		case http.MethodGet:
			rc.op = "GetEntity"
			return s.handleGetEntity(w, r, rc, res.table, res.key)
		case http.MethodPut:
			rc.op = "UpdateEntity"
			return s.handleWriteEntity(w, r, rc, res.table, res.key, false)
		case "MERGE", http.MethodPatch:
			rc.op = "MergeEntity"
			return s.handleWriteEntity(w, r, rc, res.table, res.key, true)
		case http.MethodDelete:
			rc.op = "DeleteEntity"
			return s.handleDeleteEntity(w, r, rc, res.table, res.key)
		}
	}
	return partita.NewError(partita.CodeMethodNotAllowed, "The requested method is not allowed on the specified resource.")
}
