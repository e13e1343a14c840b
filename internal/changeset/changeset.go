// Package changeset decodes the multipart/mixed body of an entity group
// transaction ($batch) into sub-requests and encodes the multipart response,
// byte for byte in the layout the Azure SDKs parse.
//
// The package knows nothing about tables or entities: it only moves HTTP
// sub-requests and sub-responses in and out of MIME (docs/COMPATIBILITY.md §8).
//
// Decoding is lenient where real clients differ (CRLF or bare LF line
// endings, header names in any case, empty header values, a Content-ID in the
// sub-request or in its MIME part, an extra blank line before the body as the
// JS SDK writes it, a missing closing "--" on the outer delimiter as early JS
// previews wrote it) and strict about structure (one changeset or one
// retrieve, no GET inside a changeset, at least one operation).
package changeset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// Request is one operation of a batch as the client wrote it.
type Request struct {
	// Method is the method exactly as written on the request line: POST, PUT,
	// PATCH, MERGE, DELETE, or GET (retrieve batches only). Decode does not
	// check it against a list; X-HTTP-Method stays in Header for the caller.
	Method string
	// Target is the request target exactly as written on the request line
	// (usually an absolute URL, sometimes a path), with surrounding spaces
	// removed. It may contain spaces or non-ASCII bytes if the client wrote
	// them unescaped.
	Target string
	// Header holds the sub-request headers under canonical names
	// (textproto.CanonicalMIMEHeaderKey), values in the order written, with
	// surrounding spaces removed. Empty values are kept: the Go SDK writes
	// "DataServiceVersion: " and "x-ms-version: ". Never nil after Decode.
	Header http.Header
	// Body is everything after the blank line that ends the headers, with
	// leading and trailing spaces, tabs, CRs and LFs removed (JSON bodies; the
	// JS SDK puts an extra CRLF before the body). Content-Length is ignored.
	// nil when empty. It may share memory with the body given to Decode:
	// the caller must not modify that while it uses the batch.
	Body []byte
	// ContentID is the value of a Content-ID header of the sub-request, or,
	// if that is missing or empty, of its MIME part; "" if none.
	ContentID string
}

// Batch is a decoded $batch body.
type Batch struct {
	Requests []Request
	// Changeset is true when the operations came in a changeset, false for a
	// single retrieve (GET) part outside any changeset (docs/COMPATIBILITY.md §8).
	Changeset bool
}

// ErrTooManyOperations is wrapped by the *Error that Decode returns when the
// changeset holds more than maxOps operations: errors.Is(err,
// ErrTooManyOperations) reports it.
var ErrTooManyOperations = errors.New("changeset: too many operations in the change set")

// MaxHeaderBytes bounds one sub-request's header block, as the server
// bounds a request's (64 KiB): a changeset of 4 MiB could otherwise hold
// hundreds of thousands of header fields in one operation's map.
const MaxHeaderBytes = 64 << 10

// MsgInvalidInput is the client message of every Decode error except the
// operation limit (the service's InvalidInput text).
const MsgInvalidInput = "One of the request inputs is not valid."

// Error is the type of every error returned by Decode.
//
// Callers map every Error to 400 InvalidInput. The message to send is
// ClientMessage(): Message, prefixed with "<Index>:" when Index >= 0, which
// is how the service reports errors tied to an operation.
type Error struct {
	// Index is the zero-based index of the operation the error is tied to,
	// or -1 when it is not tied to one (bad MIME, no operations, …).
	//
	// Operation limit: the service reported either 0 or 99 for the 101st
	// operation; Decode reports maxOps-1 (99 for the limit of 100), the index
	// of the last operation that still fits.
	Index int
	// Message is safe to send to clients. It carries no "<i>:" prefix.
	Message string
	// TooMany is set when the changeset exceeds maxOps operations.
	TooMany bool

	detail string // for logs only: what exactly was wrong
}

// ClientMessage returns the text for the odata.error message value:
// "<Index>:<Message>" when Index >= 0, otherwise Message.
func (e *Error) ClientMessage() string {
	if e.Index >= 0 {
		return strconv.Itoa(e.Index) + ":" + e.Message
	}
	return e.Message
}

func (e *Error) Error() string {
	if e.detail != "" {
		if e.Index >= 0 {
			return "changeset: operation " + strconv.Itoa(e.Index) + ": " + e.detail
		}
		return "changeset: " + e.detail
	}
	return "changeset: " + e.ClientMessage()
}

// Unwrap returns ErrTooManyOperations for the operation-limit error, nil
// otherwise.
func (e *Error) Unwrap() error {
	if e.TooMany {
		return ErrTooManyOperations
	}
	return nil
}

func invalid(index int, format string, args ...any) *Error {
	return &Error{Index: index, Message: MsgInvalidInput, detail: fmt.Sprintf(format, args...)}
}

func tooMany(maxOps int) *Error {
	idx := maxOps - 1
	if idx < 0 {
		idx = 0
	}
	return &Error{
		Index:   idx,
		Message: "The batch request operation exceeds the maximum " + strconv.Itoa(maxOps) + " changes per change set.",
		TooMany: true,
		detail:  "more than " + strconv.Itoa(maxOps) + " operations in the change set",
	}
}

// Decode parses a $batch body. contentType is the outer request's
// Content-Type header; its boundary parameter delimits the outer document.
//
// The outer document must hold exactly one part: either a changeset
// (multipart/mixed with its own boundary) of at least one application/http
// sub-request, none of them a GET, or a single application/http GET part (a
// retrieve batch, Changeset false).
//
// maxOps > 0 limits the number of operations in the changeset; the
// (maxOps+1)th operation makes Decode fail with an *Error whose TooMany is
// set and that wraps ErrTooManyOperations. maxOps <= 0 means no limit.
//
// Every error is an *Error. Decode does not panic on any input.
func Decode(contentType string, body []byte, maxOps int) (*Batch, error) {
	mt, params := parseMediaType(contentType)
	if !strings.HasPrefix(mt, "multipart/") {
		return nil, invalid(-1, "request Content-Type %q is not multipart", clip([]byte(contentType)))
	}
	boundary := params["boundary"]
	if !validBoundary(boundary) {
		return nil, invalid(-1, "request Content-Type %q has no usable boundary", clip([]byte(contentType)))
	}
	if b, ok := decodeStrict(body, boundary, maxOps); ok {
		return b, nil
	}
	return decodeStd(body, boundary, maxOps)
}

// decodeStd is Decode on mime/multipart: the reference for every input,
// and the path of every input that decodeStrict leaves to it.
func decodeStd(body []byte, boundary string, maxOps int) (*Batch, error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	part, err := mr.NextRawPart()
	if err == io.EOF {
		return nil, invalid(-1, "the batch holds no parts")
	}
	if err != nil {
		return nil, invalid(-1, "batch: %v", err)
	}
	if err := checkTransferEncoding(part.Header); err != nil {
		return nil, err
	}
	// The part is a piece of body, so a buffer of body's size holds it
	// without regrowing.
	content, err := readInto(make([]byte, 0, len(body)), part)
	if err != nil {
		return nil, invalid(-1, "batch part: %v", err)
	}

	var b *Batch
	pmt, pparams := parseMediaType(part.Header.Get("Content-Type"))
	switch {
	case pmt == "multipart/mixed":
		inner := pparams["boundary"]
		if !validBoundary(inner) {
			return nil, invalid(-1, "changeset part has no usable boundary")
		}
		reqs, err := decodeChangeset(content, inner, maxOps)
		if err != nil {
			return nil, err
		}
		b = &Batch{Requests: reqs, Changeset: true}
	case pmt == "application/http":
		req, err := parseRequest(content, -1)
		if err != nil {
			return nil, err
		}
		if req.Method != http.MethodGet {
			return nil, invalid(-1, "%s part outside a changeset (only a single GET may stand alone)", req.Method)
		}
		if req.ContentID == "" {
			req.ContentID = part.Header.Get("Content-Id")
		}
		b = &Batch{Requests: []Request{req}}
	default:
		return nil, invalid(-1, "batch part has Content-Type %q, want multipart/mixed or application/http", clip([]byte(part.Header.Get("Content-Type"))))
	}

	// The changeset or the retrieve must be the only part.
	switch _, err := mr.NextRawPart(); {
	case err == io.EOF:
		return b, nil
	case err == nil:
		return nil, invalid(-1, "the batch holds more than one part")
	default:
		return nil, invalid(-1, "batch: %v", err)
	}
}

// readInto appends everything r yields to buf, growing it only if needed.
func readInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func decodeChangeset(content []byte, boundary string, maxOps int) ([]Request, error) {
	mr := multipart.NewReader(bytes.NewReader(content), boundary)
	var reqs []Request
	// Every part's bytes are a piece of content, so one arena of that size
	// holds them all without regrowing; requests keep slices of it.
	arena := make([]byte, 0, len(content))
	for i := 0; ; i++ {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, invalid(-1, "changeset: %v", err)
		}
		if maxOps > 0 && i >= maxOps {
			return nil, tooMany(maxOps)
		}
		if ct := part.Header.Get("Content-Type"); ct != "" {
			if mt, _ := parseMediaType(ct); mt != "application/http" {
				return nil, invalid(i, "changeset part has Content-Type %q, want application/http", clip([]byte(ct)))
			}
		}
		if err := checkTransferEncoding(part.Header); err != nil {
			return nil, err
		}
		start := len(arena)
		arena, err = readInto(arena, part)
		if err != nil {
			return nil, invalid(-1, "changeset part: %v", err)
		}
		req, err := parseRequest(arena[start:len(arena):len(arena)], i)
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(req.Method, http.MethodGet) {
			return nil, invalid(i, "GET inside a changeset")
		}
		if req.ContentID == "" {
			req.ContentID = part.Header.Get("Content-Id")
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil, invalid(-1, "the changeset holds no operations")
	}
	return reqs, nil
}

// checkTransferEncoding accepts the identity encodings only; no client
// encodes sub-requests.
func checkTransferEncoding(h textproto.MIMEHeader) error {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "", "binary", "8bit", "7bit":
		return nil
	}
	return invalid(-1, "unsupported Content-Transfer-Encoding %q", clip([]byte(h.Get("Content-Transfer-Encoding"))))
}

// parseRequest parses one application/http part: request line, headers,
// blank line, body. Lines end in LF with an optional CR before it.
func parseRequest(data []byte, index int) (Request, error) {
	var req Request

	// The request line and the headers are read from one string copy of
	// them, so the method, target, header names and values are substrings
	// of it instead of an allocation each.
	text := string(data[:headerEnd(data)])
	rest := text

	// Request line, after any blank lines.
	var line string
	for {
		if len(rest) == 0 {
			return req, invalid(index, "sub-request has no request line")
		}
		line, rest = nextLine(rest)
		if len(strings.Trim(line, " \t")) != 0 {
			break
		}
	}
	line = strings.Trim(line, " \t")
	sp1 := strings.IndexByte(line, ' ')
	sp2 := strings.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1 {
		return req, invalid(index, "malformed request line %q", clip([]byte(line)))
	}
	method := line[:sp1]
	target := strings.Trim(line[sp1+1:sp2], " ")
	proto := line[sp2+1:]
	if !isToken(method) {
		return req, invalid(index, "malformed method in request line %q", clip([]byte(line)))
	}
	if len(target) == 0 || hasCTL(target, false) {
		return req, invalid(index, "malformed target in request line %q", clip([]byte(line)))
	}
	if len(proto) < 5 || !strings.EqualFold(proto[:5], "HTTP/") {
		return req, invalid(index, "request line %q does not end in an HTTP version", clip([]byte(line)))
	}
	req.Method = method
	req.Target = target

	// Headers up to the first empty line or the end of the part. Each
	// header's value slice is carved from one backing array.
	req.Header = make(http.Header, 8)
	var vals []string
	var lastKey string
	// A folded value is gathered in folded and set once, at the next
	// header or the end of the block (joining each continuation line as
	// it came took time quadratic in their number: minutes of CPU for one
	// 4 MiB batch).
	var folded []byte
	folding := false
	headerBytes := 0
	for len(rest) > 0 {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break
		}
		if headerBytes += len(line) + 2; headerBytes > MaxHeaderBytes {
			return req, invalid(index, "sub-request headers larger than %d bytes", MaxHeaderBytes)
		}
		if line[0] == ' ' || line[0] == '\t' { // obsolete line folding
			if lastKey == "" {
				return req, invalid(index, "sub-request header block starts with a continuation line")
			}
			more := strings.Trim(line, " \t")
			if hasCTL(more, true) {
				return req, invalid(index, "control character in sub-request header %q", clip([]byte(lastKey)))
			}
			if len(more) > 0 {
				if !folding {
					vs := req.Header[lastKey]
					folded, folding = append(folded[:0], vs[len(vs)-1]...), true
				}
				if len(folded) > 0 {
					folded = append(folded, ' ')
				}
				folded = append(folded, more...)
			}
			continue
		}
		if folding {
			unfold(req.Header[lastKey], folded)
			folding = false
		}
		colon := strings.IndexByte(line, ':')
		if colon < 0 {
			return req, invalid(index, "malformed sub-request header line %q", clip([]byte(line)))
		}
		name := strings.TrimRight(line[:colon], " \t")
		if !isToken(name) {
			return req, invalid(index, "malformed sub-request header name %q", clip([]byte(name)))
		}
		value := strings.Trim(line[colon+1:], " \t")
		if hasCTL(value, true) {
			return req, invalid(index, "control character in sub-request header %q", clip([]byte(name)))
		}
		key := canonicalKey(name)
		if vs, ok := req.Header[key]; ok {
			req.Header[key] = append(vs, value)
		} else {
			if len(vals) == cap(vals) {
				vals = make([]string, 0, 8)
			}
			vals = append(vals, value)
			req.Header[key] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
		lastKey = key
	}
	if folding {
		unfold(req.Header[lastKey], folded)
	}

	body := data[len(text)-len(rest):]
	if body := bytes.Trim(body, " \t\r\n"); len(body) > 0 {
		req.Body = body
	}
	req.ContentID = req.Header.Get("Content-Id")
	return req, nil
}

// commonKeys are the canonical forms of the header names the SDKs and
// partita's own clients write in a sub-request.
var commonKeys = [...]string{"Accept", "Content-Type", "Content-Length", "Content-Id", "Prefer",
	"Dataserviceversion", "Maxdataserviceversion", "X-Ms-Version", "If-Match", "X-Http-Method",
	"Accept-Charset", "Accept-Encoding", "X-Ms-Client-Request-Id", "X-Ms-Date", "Date", "User-Agent"}

// canonicalKey is textproto.CanonicalMIMEHeaderKey for a token name:
// a name that equals one of commonKeys but for case is that constant,
// neither checked byte by byte nor allocated (a token is ASCII, whose
// canonical form depends only on its letters' case); any other goes to
// textproto.
func canonicalKey(name string) string {
	for _, k := range &commonKeys {
		if len(k) == len(name) && (k == name || asciiEqualFold(k, name)) {
			return k
		}
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// asciiEqualFold is strings.EqualFold for ASCII strings of equal length.
func asciiEqualFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// headerEnd returns the length of data's head, the part parseRequest reads
// as text: any blank lines, the request line and the header lines through
// the empty line that ends them (all of data when none does).
func headerEnd(data []byte) int {
	i, started := 0, false
	for i < len(data) {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		line := bytes.TrimSuffix(data[i:i+j], []byte("\r"))
		i += j + 1
		if !started {
			started = len(bytes.Trim(line, " \t")) != 0
			continue
		}
		if len(line) == 0 {
			return i
		}
	}
	return len(data)
}

// nextLine splits off the first line of data, without its LF and without one
// CR before the LF.
func nextLine(data string) (line, rest string) {
	i := strings.IndexByte(data, '\n')
	if i < 0 {
		line, rest = data, ""
	} else {
		line, rest = data[:i], data[i+1:]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// parseMediaType returns the lower-case media type and the parameters of a
// Content-Type value. It falls back to a lenient split on ';' and '=' when
// mime.ParseMediaType rejects the value (for example an unquoted boundary
// holding a tspecial).
func parseMediaType(v string) (string, map[string]string) {
	if mt, params, err := mime.ParseMediaType(v); err == nil {
		return mt, params
	}
	fields := strings.Split(v, ";")
	mt := strings.ToLower(strings.TrimSpace(fields[0]))
	params := make(map[string]string)
	for _, f := range fields[1:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		if _, dup := params[k]; !dup {
			params[k] = val
		}
	}
	return mt, params
}

// clip shortens client bytes quoted in error details (logs only).
func clip(b []byte) []byte {
	if len(b) > 120 {
		return append(b[:120:120], "…"...)
	}
	return b
}

func validBoundary(b string) bool {
	return b != "" && len(b) <= 200 && !strings.ContainsAny(b, "\r\n")
}

func isToken(b string) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if !isTokenByte(b[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// hasCTL reports whether b holds an ASCII control character (HTAB allowed
// when allowTab).
func hasCTL(b string, allowTab bool) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if (c < 0x20 && !(allowTab && c == '\t')) || c == 0x7f {
			return true
		}
	}
	return false
}

// unfold sets the last of a header's values to its folded form.
func unfold(vs []string, folded []byte) { vs[len(vs)-1] = string(folded) }
