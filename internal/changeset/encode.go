package changeset

import (
	"crypto/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Response is one sub-response of a batch response.
type Response struct {
	Status int // e.g. 204, 201, 409; the reason phrase is http.StatusText(Status)
	// Header is written in this order, after "Content-ID" when ContentID is
	// set. Names are written as given (no canonicalization).
	Header    []HeaderField
	Body      []byte
	ContentID string
}

// HeaderField is one response header line. CR and LF in Name or Value are
// written as spaces so that they cannot break the MIME structure.
type HeaderField struct{ Name, Value string }

// NewBoundaries returns "batchresponse_<guid>" and
// "changesetresponse_<guid>" with fresh lowercase version-4 GUIDs from
// crypto/rand, the prefixes the Java and JS SDKs look for.
func NewBoundaries() (batch, changeset string) {
	return "batchresponse_" + newGUID(), "changesetresponse_" + newGUID()
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hexDigits = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return string(out)
}

// ContentType returns the Content-Type header value for a multipart document
// with the given boundary: "multipart/mixed; boundary=<boundary>". Use it for
// the outer 202 response (with the batch boundary) and for requests.
func ContentType(boundary string) string {
	return "multipart/mixed; boundary=" + boundary
}

// AppendResponse appends the whole multipart response body for a changeset
// (docs/COMPATIBILITY.md §8): no preamble, the changeset part's body starting
// directly with its first delimiter, one application/http part per Response
// in order, every part ending in CRLF before the next delimiter, and the two
// closing delimiters on consecutive lines.
//
// The boundaries must not occur in any header or body (NewBoundaries gives
// random ones).
func AppendResponse(dst []byte, batchBoundary, changesetBoundary string, resps []Response) []byte {
	dst = slices.Grow(dst, responseSize(batchBoundary, changesetBoundary, resps))
	dst = append(dst, "--"...)
	dst = append(dst, batchBoundary...)
	dst = append(dst, "\r\nContent-Type: multipart/mixed; boundary="...)
	dst = append(dst, changesetBoundary...)
	dst = append(dst, "\r\n\r\n"...)
	for i := range resps {
		dst = append(dst, "--"...)
		dst = append(dst, changesetBoundary...)
		dst = append(dst, "\r\n"...)
		dst = appendResponsePart(dst, &resps[i])
	}
	dst = append(dst, "--"...)
	dst = append(dst, changesetBoundary...)
	dst = append(dst, "--\r\n--"...)
	dst = append(dst, batchBoundary...)
	dst = append(dst, "--\r\n"...)
	return dst
}

// responseSize is about the length AppendResponse appends (status texts
// and fixed lines are counted generously), so the body is built in one
// allocation.
func responseSize(batchBoundary, changesetBoundary string, resps []Response) int {
	n := 2*len(batchBoundary) + 3*len(changesetBoundary) + 64
	for i := range resps {
		r := &resps[i]
		n += len(changesetBoundary) + 160 + len(r.ContentID) + len(r.Body)
		for _, f := range r.Header {
			n += len(f.Name) + len(f.Value) + 4
		}
	}
	return n
}

// AppendRetrieveResponse appends the response body of a retrieve batch
// (docs/COMPATIBILITY.md §8): one application/http part directly in the batch, no
// changeset.
func AppendRetrieveResponse(dst []byte, batchBoundary string, resp Response) []byte {
	dst = append(dst, "--"...)
	dst = append(dst, batchBoundary...)
	dst = append(dst, "\r\n"...)
	dst = appendResponsePart(dst, &resp)
	dst = append(dst, "--"...)
	dst = append(dst, batchBoundary...)
	dst = append(dst, "--\r\n"...)
	return dst
}

// appendResponsePart appends the part headers, the HTTP response and the CRLF
// that precedes the next delimiter.
func appendResponsePart(dst []byte, r *Response) []byte {
	dst = append(dst, "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(r.Status)...)
	dst = append(dst, "\r\n"...)
	if r.ContentID != "" {
		dst = appendHeaderLine(dst, "Content-ID", r.ContentID)
	}
	for _, f := range r.Header {
		dst = appendHeaderLine(dst, f.Name, f.Value)
	}
	dst = append(dst, "\r\n"...)
	dst = append(dst, r.Body...)
	dst = append(dst, "\r\n"...)
	return dst
}

func appendHeaderLine(dst []byte, name, value string) []byte {
	dst = appendNoNewline(dst, name)
	dst = append(dst, ": "...)
	dst = appendNoNewline(dst, value)
	return append(dst, "\r\n"...)
}

func appendNoNewline(dst []byte, s string) []byte {
	if strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0 {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// wireName maps canonical header keys to the spellings the Go SDK writes
// (its generated code stores them under non-canonical keys) and to the
// usual spellings of a few other headers. A switch, not a map: the bench
// client encodes a changeset of 100 parts per request on the machine it
// measures.
func wireName(key string) string {
	switch key {
	case "Dataserviceversion":
		return "DataServiceVersion"
	case "Maxdataserviceversion":
		return "MaxDataServiceVersion"
	case "X-Ms-Version":
		return "x-ms-version"
	case "X-Ms-Client-Request-Id":
		return "x-ms-client-request-id"
	case "X-Ms-Date":
		return "x-ms-date"
	case "Content-Id":
		return "Content-ID"
	case "X-Http-Method":
		return "X-HTTP-Method"
	case "Etag":
		return "ETag"
	}
	return key
}

// AppendRequest encodes b as a $batch request body, in the layout of the Go
// SDK (aztables transactional_batch.go, written with mime/multipart; see
// docs/COMPATIBILITY.md §8):
//
//	--<batch>
//	Content-Type: multipart/mixed; boundary=<changeset>
//
//	--<changeset>
//	Content-Transfer-Encoding: binary
//	Content-Type: application/http
//
//	<METHOD> <target> HTTP/1.1
//	<headers, sorted by name as written>
//
//	<body>
//	--<changeset>--
//
//	--<batch>--
//
// with CRLF line endings. Header names are written in the Go SDK's spelling
// (DataServiceVersion, x-ms-version, …; see wireName) and sorted by that
// spelling, one line per value, "Name: value" even for empty values. Nothing
// is added: the caller puts Content-Length and the like into Header.
// A request's ContentID is written as a "Content-ID" part header unless
// Header already carries the same value.
//
// When b.Changeset is false the requests are written as application/http
// parts directly in the batch (a retrieve batch holds one).
//
// The boundaries must not occur in any target, header or body. The request
// Content-Type is ContentType(batchBoundary).
func AppendRequest(dst []byte, batchBoundary, changesetBoundary string, b *Batch) []byte {
	if !b.Changeset {
		for i := range b.Requests {
			if i > 0 {
				dst = append(dst, "\r\n"...)
			}
			dst = append(dst, "--"...)
			dst = append(dst, batchBoundary...)
			dst = append(dst, "\r\n"...)
			dst = appendRequestPart(dst, &b.Requests[i])
		}
		if len(b.Requests) > 0 {
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "--"...)
		dst = append(dst, batchBoundary...)
		return append(dst, "--\r\n"...)
	}

	dst = append(dst, "--"...)
	dst = append(dst, batchBoundary...)
	dst = append(dst, "\r\nContent-Type: multipart/mixed; boundary="...)
	dst = append(dst, changesetBoundary...)
	dst = append(dst, "\r\n\r\n"...)
	for i := range b.Requests {
		if i > 0 {
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "--"...)
		dst = append(dst, changesetBoundary...)
		dst = append(dst, "\r\n"...)
		dst = appendRequestPart(dst, &b.Requests[i])
	}
	// multipart.Writer.Close always writes CRLF before the closing delimiter,
	// even when there are no parts.
	dst = append(dst, "\r\n--"...)
	dst = append(dst, changesetBoundary...)
	dst = append(dst, "--\r\n\r\n--"...)
	dst = append(dst, batchBoundary...)
	return append(dst, "--\r\n"...)
}

func appendRequestPart(dst []byte, r *Request) []byte {
	if r.ContentID != "" && r.ContentID != r.Header.Get("Content-Id") {
		dst = appendHeaderLine(dst, "Content-ID", r.ContentID)
	}
	dst = append(dst, "Content-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n"...)
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.Target...)
	dst = append(dst, " HTTP/1.1\r\n"...)

	// The headers in order of their wire names (then keys): a sub-request
	// has a handful, so they are sorted by insertion in a stack array.
	type named struct {
		wire, key string
		values    []string
	}
	var small [12]named
	names := small[:0]
	for k, vs := range r.Header {
		n := named{wireName(k), k, vs}
		i := len(names)
		names = append(names, n)
		for ; i > 0 && (n.wire < names[i-1].wire || n.wire == names[i-1].wire && n.key < names[i-1].key); i-- {
			names[i] = names[i-1]
		}
		names[i] = n
	}
	for _, n := range names {
		for _, v := range n.values {
			dst = appendHeaderLine(dst, n.wire, v)
		}
	}
	dst = append(dst, "\r\n"...)
	return append(dst, r.Body...)
}
