// Package settings holds the account- and table-level settings of the Table
// service — stored access policies, service properties (logging, metrics,
// CORS) — with their XML forms (docs/COMPATIBILITY.md §11).
//
// Decoders validate what a client sends and return errors that all match
// ErrInvalidXML, which the HTTP edge answers with 400 InvalidXmlDocument
// "XML specified is not syntactically valid." (the real Table service uses
// that code for syntax errors, wrong values, more than five CORS rules, more
// than five signed identifiers and retention days out of range alike). The
// more specific sentinels and *XMLError's Reason say what was wrong, for
// logs and tests.
//
// Encoders write what the real service writes: compact XML with the
// declaration <?xml version="1.0" encoding="utf-8"?>, elements in the
// service's order, times with seven fractional digits. (The real service
// also starts these bodies with a byte-order mark; the encoders do not, and
// every SDK parses both.)
//
// Persistence: the server stores settings in their XML form.
// ServiceProperties.MarshalBinary/UnmarshalBinary and MarshalACL/UnmarshalACL
// write and read that form; the Unmarshal side parses without the request
// validation, so stored values stay readable if validation gets stricter.
package settings

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// Errors. Every error returned by DecodeACL and DecodeServiceProperties
// matches ErrInvalidXML (→ 400 InvalidXmlDocument) and, when the XML is
// well formed but invalid, one of the more specific sentinels.
var (
	// ErrInvalidXML: the body is not a valid document of the expected kind.
	ErrInvalidXML = errors.New("settings: XML specified is not syntactically valid")

	// ErrTooManyIdentifiers: more than MaxSignedIdentifiers in a Set Table ACL.
	ErrTooManyIdentifiers = errors.New("settings: more than 5 signed identifiers")
	// ErrInvalidIdentifier: a SignedIdentifier without Id, or with an Id
	// longer than MaxIdentifierLength.
	ErrInvalidIdentifier = errors.New("settings: invalid signed identifier Id")
	// ErrTooManyCorsRules: more than MaxCorsRules.
	ErrTooManyCorsRules = errors.New("settings: more than 5 CORS rules")
	// ErrInvalidCorsRule: a CORS rule misses a required element or breaks a
	// limit (origins, methods, headers, total size).
	ErrInvalidCorsRule = errors.New("settings: invalid CORS rule")
	// ErrInvalidRetention: retention days outside 1–365, missing while
	// retention is enabled, or present while it is disabled.
	ErrInvalidRetention = errors.New("settings: invalid retention policy")
	// ErrInvalidValue: an element's text is not a valid boolean, integer,
	// time or permission string.
	ErrInvalidValue = errors.New("settings: invalid element value")
)

// XMLError is a decoding error: Kind is ErrInvalidXML or one of the specific
// sentinels; Reason says what was wrong (the real service sends a similar
// text in the <Reason> element of some XML errors).
type XMLError struct {
	Kind   error
	Reason string
}

func (e *XMLError) Error() string { return e.Kind.Error() + ": " + e.Reason }

// Unwrap makes the error match both Kind and ErrInvalidXML.
func (e *XMLError) Unwrap() []error {
	if e.Kind == ErrInvalidXML {
		return []error{ErrInvalidXML}
	}
	return []error{e.Kind, ErrInvalidXML}
}

func xmlErrorf(kind error, format string, args ...any) *XMLError {
	return &XMLError{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// xmlDecl is the declaration every body the service writes starts with.
const xmlDecl = `<?xml version="1.0" encoding="utf-8"?>`

var utf8BOM = []byte("\uFEFF")

// isBlank reports whether body holds nothing but a byte-order mark and
// whitespace.
func isBlank(body []byte) bool {
	return len(bytes.TrimSpace(bytes.TrimPrefix(body, utf8BOM))) == 0
}

// decodeDocument decodes one XML document into v (whose XMLName fixes the
// root element) and rejects anything but whitespace, comments and
// processing instructions after the root element.
func decodeDocument(body []byte, v any) error {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, utf8BOM)))
	if err := d.Decode(v); err != nil {
		return xmlErrorf(ErrInvalidXML, "%v", err)
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return xmlErrorf(ErrInvalidXML, "%v", err)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return xmlErrorf(ErrInvalidXML, "text after the root element")
			}
		default:
			return xmlErrorf(ErrInvalidXML, "content after the root element")
		}
	}
}

// xmlSpace is the whitespace XML Schema trims from booleans and numbers.
const xmlSpace = " \t\r\n"

func parseBool(elem string, s *string) (bool, error) {
	if s == nil {
		return false, nil
	}
	switch strings.Trim(*s, xmlSpace) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, xmlErrorf(ErrInvalidValue, "%s: %q is not a boolean", elem, *s)
}

func parseInt(elem string, s string) (int, error) {
	n, err := strconv.ParseInt(strings.Trim(s, xmlSpace), 10, 32)
	if err != nil {
		return 0, xmlErrorf(ErrInvalidValue, "%s: %q is not an integer", elem, s)
	}
	return int(n), nil
}

// policyTimeFormat is how the service writes access-policy times.
const policyTimeFormat = "2006-01-02T15:04:05.0000000Z"

// parseTime parses an ISO 8601 time as clients send it: RFC 3339 with any
// fraction (Go, .NET, JS), to the minute, a date, or without a zone (taken
// as UTC). The result is UTC, within the .NET DateTime years 1–9999.
func parseTime(elem, s string) (time.Time, error) {
	v := strings.Trim(s, xmlSpace)
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", time.DateOnly} {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		t = t.UTC()
		if y := t.Year(); y < 1 || y > 9999 {
			break
		}
		return t, nil
	}
	return time.Time{}, xmlErrorf(ErrInvalidValue, "%s: %q is not an ISO 8601 time", elem, s)
}

// utf16Len is the length of s in UTF-16 code units, the service's
// character count.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Writing helpers.

func appendText(dst []byte, s string) []byte {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer never fail
	return append(dst, b.Bytes()...)
}

func appendElem(dst []byte, name, text string) []byte {
	dst = append(dst, '<')
	dst = append(dst, name...)
	dst = append(dst, '>')
	dst = appendText(dst, text)
	dst = append(dst, "</"...)
	dst = append(dst, name...)
	return append(dst, '>')
}

func appendBool(dst []byte, name string, v bool) []byte {
	return appendElem(dst, name, strconv.FormatBool(v))
}
