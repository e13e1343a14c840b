package changeset

import (
	"bytes"
	"net/http"
	"strings"
)

// decodeStrict decodes the layout every SDK writes, in place: body is
// split at its boundaries without mime/multipart's buffered reader, part
// header maps or copies of the parts, and the sub-requests' bodies are
// slices of body. It gives up (ok false) on anything it is not sure
// mime/multipart reads the same way, and on every error: Decode then runs
// decodeStd, which decides. When ok, the result is what decodeStd returns
// for the same input (FuzzDecode checks it).
func decodeStrict(body []byte, boundary string, maxOps int) (*Batch, bool) {
	outer, ok := splitStrict(body, boundary, 1, nil)
	if !ok || len(outer) != 1 || !identityEncoding(outer[0].cte) {
		return nil, false
	}
	// A retrieve batch is rare and small: decodeStd reads it.
	pmt, pparams := parseMediaType(outer[0].ctype)
	if pmt != "multipart/mixed" {
		return nil, false
	}
	inner := pparams["boundary"]
	if !validBoundary(inner) {
		return nil, false
	}
	limit := maxOps
	if limit <= 0 {
		limit = -1
	}
	parts, ok := splitStrict(outer[0].body, inner, limit, make([]strictPart, 0, 16))
	if !ok || len(parts) == 0 {
		return nil, false
	}
	reqs := make([]Request, len(parts))
	for i := range parts {
		p := &parts[i]
		if ct := p.ctype; ct != "" && !strings.EqualFold(ct, "application/http") {
			if mt, _ := parseMediaType(ct); mt != "application/http" {
				return nil, false
			}
		}
		if !identityEncoding(p.cte) {
			return nil, false
		}
		req, err := parseRequest(p.body, i)
		if err != nil || strings.EqualFold(req.Method, http.MethodGet) {
			return nil, false
		}
		if req.ContentID == "" {
			req.ContentID = p.contentID
		}
		reqs[i] = req
	}
	return &Batch{Requests: reqs, Changeset: true}, true
}

// strictPart is one MIME part as splitStrict finds it: the first value of
// each header Decode looks at ("" when absent, as textproto's Get gives),
// and the part's content, a slice of the document.
type strictPart struct {
	ctype, cte, contentID string
	body                  []byte
}

// identityEncoding is checkTransferEncoding's test on a header value.
func identityEncoding(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "binary", "8bit", "7bit":
		return true
	}
	return false
}

// Bounds past which splitStrict leaves a part to mime/multipart, which
// limits the headers of a part (10000 lines, 10 MiB): far below them.
const (
	strictMaxHeaders     = 32
	strictMaxHeaderBytes = 16 << 10
)

// splitStrict splits the multipart document data, delimited by boundary,
// into its parts, appended to parts, as mime/multipart.Reader's NextRawPart
// and Part.Read yield them, for documents of this layout only:
//
//	--boundary NL (headers NL)* NL content NL --boundary NL ... content NL --boundary-- [NL epilogue]
//
// after any empty lines, where NL is CRLF or LF as the first delimiter line ends (mime/multipart
// picks it the same way), each header line is token ":" value with value
// bytes that textproto accepts, no line is folded, and no content begins
// with "--boundary". A content ends at the first NL "--boundary" that
// mime/multipart takes for a delimiter (followed by space, tab, CR, LF or
// "--"); any layout but the above from there, more than max parts (max
// >= 0), or anything else ends the split with ok false.
func splitStrict(data []byte, boundary string, max int, parts []strictPart) ([]strictPart, bool) {
	// Empty lines before the first delimiter are a preamble that
	// mime/multipart skips (the JS SDK writes one in its changeset).
	for {
		if len(data) > 0 && data[0] == '\n' {
			data = data[1:]
		} else if len(data) > 1 && data[0] == '\r' && data[1] == '\n' {
			data = data[2:]
		} else {
			break
		}
	}
	nb := len(boundary)
	if len(data) < 2+nb || data[0] != '-' || data[1] != '-' || string(data[2:2+nb]) != boundary {
		return nil, false
	}
	pos := 2 + nb
	var crlf bool
	switch {
	case pos+1 < len(data) && data[pos] == '\r' && data[pos+1] == '\n':
		crlf, pos = true, pos+2
	case pos < len(data) && data[pos] == '\n':
		pos++
	default:
		return nil, false
	}
	// delim is NL "--" boundary: what ends a part's content.
	nl := 1
	if crlf {
		nl = 2
	}
	delim := make([]byte, 0, nl+2+nb)
	if crlf {
		delim = append(delim, '\r')
	}
	delim = append(append(append(delim, '\n'), "--"...), boundary...)
	for {
		if max >= 0 && len(parts) >= max {
			return nil, false
		}
		var p strictPart
		var seenCT, seenCTE, seenID bool
		start := pos
		for n := 0; ; n++ {
			j := bytes.IndexByte(data[pos:], '\n')
			if j < 0 || n > strictMaxHeaders || pos-start > strictMaxHeaderBytes {
				return nil, false
			}
			line := data[pos : pos+j]
			pos += j + 1
			if k := len(line); k > 0 && line[k-1] == '\r' {
				line = line[:k-1]
			}
			if len(line) == 0 {
				break
			}
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 {
				return nil, false
			}
			for _, c := range line[:colon] {
				if !isTokenByte(c) {
					return nil, false
				}
			}
			v := line[colon+1:]
			for _, c := range v {
				if (c < 0x20 && c != '\t') || c >= 0x7f {
					return nil, false
				}
			}
			var dst *string
			switch name := line[:colon]; {
			case !seenCT && len(name) == 12 && strings.EqualFold(string(name), "Content-Type"):
				dst, seenCT = &p.ctype, true
			case !seenCTE && len(name) == 25 && strings.EqualFold(string(name), "Content-Transfer-Encoding"):
				dst, seenCTE = &p.cte, true
			case !seenID && len(name) == 10 && strings.EqualFold(string(name), "Content-Id"):
				dst, seenID = &p.contentID, true
			}
			if dst != nil {
				*dst = string(bytes.Trim(v, " \t"))
			}
		}
		// mime/multipart treats a content that begins with the delimiter
		// itself specially: not this layout.
		if bytes.HasPrefix(data[pos:], data[:2+nb]) {
			return nil, false
		}
		// The content ends at the first NL "--boundary" followed by space,
		// tab, CR, LF or "--" (mime/multipart's matchAfterPrefix); any
		// other occurrence belongs to the content.
		bodyStart := pos
		for {
			k := bytes.Index(data[pos:], delim)
			if k < 0 {
				return nil, false
			}
			end := pos + k
			after := data[end+nl+2+nb:]
			if len(after) == 0 {
				return nil, false // mime/multipart then fails
			}
			c := after[0]
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' || (c == '-' && len(after) > 1 && after[1] == '-') {
				p.body = data[bodyStart:end:end] // capped: an append must not run into the next part
				parts = append(parts, p)
				pos = end + nl + 2 + nb
				break
			}
			pos = end + nl + 2 + nb
		}
		// The delimiter line: NL starts the next part, "--" then NL or the
		// end ends the document; anything else is left to mime/multipart.
		rest := data[pos:]
		switch {
		case hasNL(rest, crlf):
			pos += nl
		case len(rest) >= 2 && rest[0] == '-' && rest[1] == '-' && (len(rest) == 2 || hasNL(rest[2:], crlf)):
			return parts, true
		default:
			return nil, false
		}
	}
}

func hasNL(b []byte, crlf bool) bool {
	if crlf {
		return len(b) >= 2 && b[0] == '\r' && b[1] == '\n'
	}
	return len(b) >= 1 && b[0] == '\n'
}
