package settings

import (
	"bytes"
	"encoding/xml"
	"strings"
)

// Limits of a table's stored access policies (docs/COMPATIBILITY.md §11).
const (
	MaxSignedIdentifiers = 5
	MaxIdentifierLength  = 64 // UTF-16 code units
)

// SignedIdentifier is a stored access policy of a table, named by Id.
type SignedIdentifier struct {
	ID string
	// Policy is nil when the identifier has no <AccessPolicy>, or an empty
	// one.
	Policy *AccessPolicy
}

// AccessPolicy holds a policy's fields as the service stores and returns
// them: Start and Expiry in UTC with seven fractional digits
// ("2024-01-01T00:00:00.0000000Z"), Permission as letters in the order
// "raud". Empty means not defined.
type AccessPolicy struct {
	Start, Expiry, Permission string
}

type xmlACL struct {
	XMLName xml.Name              `xml:"SignedIdentifiers"`
	Items   []xmlSignedIdentifier `xml:"SignedIdentifier"`
}

type xmlSignedIdentifier struct {
	ID     *string          `xml:"Id"`
	Policy *xmlAccessPolicy `xml:"AccessPolicy"`
}

type xmlAccessPolicy struct {
	Start      *string `xml:"Start"`
	Expiry     *string `xml:"Expiry"`
	Permission *string `xml:"Permission"`
}

// DecodeACL decodes the body of a Set Table ACL request. An empty body (or
// one with only whitespace) and <SignedIdentifiers/> both mean no policies
// (nil). Errors match ErrInvalidXML: malformed XML, more than five
// identifiers (ErrTooManyIdentifiers; the real service answers
// InvalidXmlDocument), a missing, empty or over-long Id
// (ErrInvalidIdentifier), an unparsable time or a permission letter other
// than r, a, u, d (ErrInvalidValue).
//
// Times are normalized to the service's form and permissions to "raud"
// order, as the service does; empty Start, Expiry or Permission elements
// count as absent. Any element the schema does not have, an element given
// twice where one is allowed, or text where only elements belong is
// ErrInvalidXML: skipping it could drop the client's policies unseen (a
// wrapper around the SignedIdentifier elements would set none).
func DecodeACL(body []byte) ([]SignedIdentifier, error) {
	if isBlank(body) {
		return nil, nil
	}
	if err := checkSchema(body, aclSchema); err != nil {
		return nil, err
	}
	ids, err := parseACL(body)
	if err != nil {
		return nil, err
	}
	if len(ids) > MaxSignedIdentifiers {
		return nil, xmlErrorf(ErrTooManyIdentifiers, "%d signed identifiers, at most %d", len(ids), MaxSignedIdentifiers)
	}
	for _, id := range ids {
		if id.ID == "" {
			return nil, xmlErrorf(ErrInvalidIdentifier, "SignedIdentifier without Id")
		}
		if n := utf16Len(id.ID); n > MaxIdentifierLength {
			return nil, xmlErrorf(ErrInvalidIdentifier, "Id of %d characters, at most %d", n, MaxIdentifierLength)
		}
	}
	return ids, nil
}

// parseACL parses and normalizes without the limits of a Set request.
func parseACL(body []byte) ([]SignedIdentifier, error) {
	var doc xmlACL
	if err := decodeDocument(body, &doc); err != nil {
		return nil, err
	}
	if len(doc.Items) == 0 {
		return nil, nil
	}
	ids := make([]SignedIdentifier, 0, len(doc.Items))
	for _, item := range doc.Items {
		var id SignedIdentifier
		if item.ID != nil {
			id.ID = *item.ID
		}
		if p := item.Policy; p != nil {
			var ap AccessPolicy
			var err error
			if ap.Start, err = normTime("Start", p.Start); err != nil {
				return nil, err
			}
			if ap.Expiry, err = normTime("Expiry", p.Expiry); err != nil {
				return nil, err
			}
			if ap.Permission, err = normPermission(p.Permission); err != nil {
				return nil, err
			}
			if ap != (AccessPolicy{}) {
				id.Policy = &ap
			}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func normTime(elem string, s *string) (string, error) {
	if s == nil || strings.Trim(*s, xmlSpace) == "" {
		return "", nil
	}
	t, err := parseTime(elem, *s)
	if err != nil {
		return "", err
	}
	return t.Format(policyTimeFormat), nil
}

// normPermission returns the letters of a table access policy in "raud"
// order. Other letters are an error (UNCONFIRMED: the real service's
// answer to them is not known).
func normPermission(s *string) (string, error) {
	if s == nil {
		return "", nil
	}
	v := strings.Trim(*s, xmlSpace)
	for _, r := range v {
		if !strings.ContainsRune("raud", r) {
			return "", xmlErrorf(ErrInvalidValue, "Permission %q: only r, a, u and d", *s)
		}
	}
	var b []byte
	for _, c := range []byte("raud") {
		if strings.IndexByte(v, c) >= 0 {
			b = append(b, c)
		}
	}
	return string(b), nil
}

// AppendACL appends the body of a Get Table ACL response: identifiers in
// order, each with <Id> and, when it has a policy, <AccessPolicy> holding
// the fields that are set (Start, Expiry, Permission). An identifier with no
// policy comes back as just <SignedIdentifier><Id>…</Id></SignedIdentifier>,
// as the real service writes it; no identifiers is
// <?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />.
func AppendACL(dst []byte, ids []SignedIdentifier) []byte {
	dst = append(dst, xmlDecl...)
	if len(ids) == 0 {
		return append(dst, "<SignedIdentifiers />"...)
	}
	dst = append(dst, "<SignedIdentifiers>"...)
	for _, id := range ids {
		dst = append(dst, "<SignedIdentifier>"...)
		dst = appendElem(dst, "Id", id.ID)
		if p := id.Policy; p != nil && *p != (AccessPolicy{}) {
			dst = append(dst, "<AccessPolicy>"...)
			if p.Start != "" {
				dst = appendElem(dst, "Start", p.Start)
			}
			if p.Expiry != "" {
				dst = appendElem(dst, "Expiry", p.Expiry)
			}
			if p.Permission != "" {
				dst = appendElem(dst, "Permission", p.Permission)
			}
			dst = append(dst, "</AccessPolicy>"...)
		}
		dst = append(dst, "</SignedIdentifier>"...)
	}
	return append(dst, "</SignedIdentifiers>"...)
}

// MarshalACL returns the stored form of a table's policies: its XML, as
// AppendACL writes it.
func MarshalACL(ids []SignedIdentifier) []byte { return AppendACL(nil, ids) }

// UnmarshalACL reads what MarshalACL wrote, without the limits of a Set
// request.
func UnmarshalACL(b []byte) ([]SignedIdentifier, error) {
	if isBlank(b) {
		return nil, nil
	}
	return parseACL(b)
}

// schemaElem describes an element of a settings document: the children it
// may have (nil for a text element) and whether each may repeat.
type schemaElem struct {
	children map[string]bool // local name → may repeat
}

// aclSchema is the Set Table ACL body, by element local name (each name is
// used at one place only).
var aclSchema = map[string]schemaElem{
	"":                  {children: map[string]bool{"SignedIdentifiers": false}},
	"SignedIdentifiers": {children: map[string]bool{"SignedIdentifier": true}},
	"SignedIdentifier":  {children: map[string]bool{"Id": false, "AccessPolicy": false}},
	"AccessPolicy":      {children: map[string]bool{"Start": false, "Expiry": false, "Permission": false}},
	"Id":                {},
	"Start":             {},
	"Expiry":            {},
	"Permission":        {},
}

// checkSchema walks a document and refuses elements that schema does not
// allow where they appear, non-repeating elements given twice, elements
// inside text elements and text inside container elements. The document's
// syntax is decodeDocument's business; checkSchema stops at its first
// syntax error and leaves that to it.
func checkSchema(body []byte, schema map[string]schemaElem) error {
	d := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(body, utf8BOM)))
	type frame struct {
		name string
		seen map[string]bool
	}
	stack := []frame{{name: ""}}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil // EOF, or a syntax error decodeDocument reports
		}
		top := &stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			el := schema[top.name]
			repeat, ok := el.children[name]
			if !ok {
				if top.name == "" {
					return nil // the wrong root: decodeDocument's error
				}
				return xmlErrorf(ErrInvalidXML, "unexpected element <%s> in <%s>", name, top.name)
			}
			if top.seen == nil {
				top.seen = map[string]bool{}
			}
			if top.seen[name] && !repeat {
				return xmlErrorf(ErrInvalidXML, "element <%s> repeated in <%s>", name, top.name)
			}
			top.seen[name] = true
			stack = append(stack, frame{name: name})
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if len(stack) == 1 {
				return nil // after the root: decodeDocument's business
			}
		case xml.CharData:
			if top.name != "" && schema[top.name].children != nil && len(bytes.TrimSpace(t)) != 0 {
				return xmlErrorf(ErrInvalidXML, "text in <%s>", top.name)
			}
		}
	}
}
