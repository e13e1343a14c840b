package transfer

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/wire"
)

// The JSONL format (docs/COPY.md): one entity per line,
//
//	{"table":"t","PartitionKey":"p","RowKey":"r","props":[["Name","Edm.Type","text"],…]}
//
// Every value is a JSON string in one canonical text form per type, so
// nothing depends on how a JSON library reads numbers: Int32 and Int64 in
// decimal, Boolean "true"/"false", Double in the shortest round-trip form or
// "NaN", "Infinity", "-Infinity", DateTime with seven fractional digits and
// Z, Guid lowercase 8-4-4-4-12, Binary in standard base64. Properties keep
// their order. Timestamp is not kept: the destination assigns it.

// Record is one line: an entity and its table.
type Record struct {
	Table  string
	Entity *partita.Entity
}

// AppendRecord appends the JSONL line of e in table (with its newline).
func AppendRecord(b []byte, table string, e *partita.Entity) []byte {
	b = append(b, `{"table":`...)
	b = wire.AppendString(b, table)
	b = append(b, `,"PartitionKey":`...)
	b = wire.AppendString(b, e.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b = wire.AppendString(b, e.RowKey)
	b = append(b, `,"props":[`...)
	for i := range e.Properties {
		p := &e.Properties[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = wire.AppendString(b, p.Name)
		b = append(b, `,"`...)
		b = append(b, p.Value.Type.String()...)
		b = append(b, `",`...)
		b = appendValueText(b, p.Value)
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

// appendValueText appends v's canonical text as a JSON string.
func appendValueText(b []byte, v edm.Value) []byte {
	switch v.Type {
	case edm.String, edm.Guid:
		return wire.AppendString(b, v.Str)
	}
	b = append(b, '"')
	switch v.Type {
	case edm.Int32, edm.Int64:
		b = strconv.AppendInt(b, v.Int, 10)
	case edm.Boolean:
		b = strconv.AppendBool(b, v.Bool())
	case edm.Double:
		b = edm.AppendDouble(b, v.Float)
	case edm.DateTime:
		b = append(b, edm.FormatDateTime7(v.Int)...)
	case edm.Binary:
		b = base64.StdEncoding.AppendEncode(b, v.Bin)
	}
	return append(b, '"')
}

type jsonRecord struct {
	Table        *string    `json:"table"`
	PartitionKey *string    `json:"PartitionKey"`
	RowKey       *string    `json:"RowKey"`
	Props        [][]string `json:"props"`
}

// DecodeRecord parses one JSONL line (without its newline). The error says
// what is wrong; the caller adds the file and line number.
func DecodeRecord(line []byte) (Record, error) {
	j, ok := fastRecord(line)
	if !ok {
		var err error
		if j, err = strictRecord(line); err != nil {
			return Record{}, err
		}
	}
	switch {
	case j.Table == nil || *j.Table == "":
		return Record{}, errors.New(`missing "table"`)
	case j.PartitionKey == nil:
		return Record{}, errors.New(`missing "PartitionKey"`)
	case j.RowKey == nil:
		return Record{}, errors.New(`missing "RowKey"`)
	}
	e := &partita.Entity{PartitionKey: *j.PartitionKey, RowKey: *j.RowKey, Properties: make([]partita.Property, 0, len(j.Props))}
	// A line may hold any number of properties: past a few, find repeated
	// names with a set, not by comparing every pair.
	var seen map[string]bool
	if len(j.Props) > 32 {
		seen = make(map[string]bool, len(j.Props))
	}
	for i, p := range j.Props {
		if len(p) != 3 {
			return Record{}, fmt.Errorf("property %d is not [name, type, value]", i)
		}
		name := p[0]
		switch name {
		case "":
			return Record{}, fmt.Errorf("property %d has an empty name", i)
		case partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp:
			return Record{}, fmt.Errorf("property %q is a system property", name)
		}
		if annotationLike(name) {
			return Record{}, fmt.Errorf("property %q: a name with '@' or starting with \"odata.\" would reach the destination as an annotation", name)
		}
		dup := seen[name]
		if seen != nil {
			seen[name] = true
		} else {
			for _, q := range e.Properties {
				dup = dup || q.Name == name
			}
		}
		if dup {
			return Record{}, fmt.Errorf("property %q appears twice", name)
		}
		v, err := parseValueText(p[1], p[2])
		if err != nil {
			return Record{}, fmt.Errorf("property %q: %v", name, err)
		}
		e.Properties = append(e.Properties, partita.Property{Name: name, Value: v})
	}
	return Record{Table: *j.Table, Entity: e}, nil
}

// strictRecord parses a record line laid out in any JSON way, as strictly
// as the console reads it: UTF-8; the members table, PartitionKey, RowKey
// and props by their exact names, each at most once; strings where strings
// belong (no null); props a list of [name, type, value] strings; no lone
// surrogate escape. encoding/json, used before, matched member names in
// any case, let the last of two equal members win, read null as "" and
// replaced invalid UTF-8 and lone surrogates with U+FFFD, so two keys of a
// file could land on one entity.
func strictRecord(b []byte) (jsonRecord, error) {
	var j jsonRecord
	if !utf8.Valid(b) {
		return j, errors.New("not UTF-8")
	}
	bad := func(what string) (jsonRecord, error) {
		return jsonRecord{}, errors.New("not a JSON entity record: " + what)
	}
	ws := func(i int) int { return skipSpace(b, i) }
	i := ws(0)
	if i >= len(b) || b[i] != '{' {
		if strings.HasPrefix(string(b[i:]), "\uFEFF") {
			return bad("a byte order mark (U+FEFF) before the object: save the file as UTF-8 without one")
		}
		return bad("not an object")
	}
	i = ws(i + 1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			name, k, err := wire.ScanString(b, i)
			if err != nil {
				return bad("a member name is not a JSON string")
			}
			if i = ws(k); i >= len(b) || b[i] != ':' {
				return bad("no ':' after " + strconv.Quote(name))
			}
			i = ws(i + 1)
			var field **string
			switch name {
			case "table":
				field = &j.Table
			case "PartitionKey":
				field = &j.PartitionKey
			case "RowKey":
				field = &j.RowKey
			case "props":
				if j.Props != nil {
					return jsonRecord{}, errors.New(`member "props" appears twice`)
				}
				if i, err = scanProps(b, i, &j.Props); err != nil {
					return jsonRecord{}, err
				}
			default:
				return jsonRecord{}, fmt.Errorf("unknown member %q", name)
			}
			if field != nil {
				if *field != nil {
					return jsonRecord{}, fmt.Errorf("member %q appears twice", name)
				}
				v, k, err := wire.ScanString(b, i)
				if err != nil {
					return jsonRecord{}, fmt.Errorf("%q is not a JSON string", name)
				}
				*field, i = &v, k
			}
			i = ws(i)
			if i < len(b) && b[i] == ',' {
				i = ws(i + 1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return bad("no ',' or '}' after " + strconv.Quote(name))
		}
	}
	if ws(i) != len(b) {
		return jsonRecord{}, errors.New("more than one JSON value on the line")
	}
	return j, nil
}

// scanProps reads the props list at b[i] into *props (empty, not nil,
// for []) and returns the index after it.
func scanProps(b []byte, i int, props *[][]string) (int, error) {
	ws := func(i int) int { return skipSpace(b, i) }
	if i >= len(b) || b[i] != '[' {
		return 0, errors.New(`"props" is not a list`)
	}
	out := [][]string{}
	i = ws(i + 1)
	if i < len(b) && b[i] == ']' {
		*props = out
		return i + 1, nil
	}
	for {
		n := len(out)
		if i >= len(b) || b[i] != '[' {
			return 0, fmt.Errorf("property %d is not [name, type, value]", n)
		}
		i = ws(i + 1)
		var p []string
		for {
			s, k, err := wire.ScanString(b, i)
			if err != nil || len(p) == 3 {
				return 0, fmt.Errorf("property %d is not [name, type, value]", n)
			}
			p = append(p, s)
			i = ws(k)
			if i < len(b) && b[i] == ',' {
				i = ws(i + 1)
				continue
			}
			if i < len(b) && b[i] == ']' && len(p) == 3 {
				i = ws(i + 1)
				break
			}
			return 0, fmt.Errorf("property %d is not [name, type, value]", n)
		}
		out = append(out, p)
		if i < len(b) && b[i] == ',' {
			i = ws(i + 1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			*props = out
			return i + 1, nil
		}
		return 0, errors.New(`"props" is not a list`)
	}
}

// parseValueText is the inverse of appendValueText, strict: only the
// canonical forms are accepted, so a line has one meaning.
func parseValueText(typ, s string) (edm.Value, error) {
	t, ok := edm.ParseType(typ)
	if !ok {
		return edm.Value{}, fmt.Errorf("unknown type %q", typ)
	}
	bad := func() (edm.Value, error) { return edm.Value{}, fmt.Errorf("%q is not a canonical %s", s, typ) }
	switch t {
	case edm.String:
		return edm.StringValue(s), nil
	case edm.Int32:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || strconv.FormatInt(n, 10) != s {
			return bad()
		}
		return edm.Int32Value(int32(n)), nil
	case edm.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != s {
			return bad()
		}
		return edm.Int64Value(n), nil
	case edm.Boolean:
		switch s {
		case "true":
			return edm.BoolValue(true), nil
		case "false":
			return edm.BoolValue(false), nil
		}
		return bad()
	case edm.Double:
		f, err := edm.ParseDouble(s)
		if err != nil || edm.FormatDouble(f) != s {
			return bad()
		}
		return edm.DoubleValue(f), nil
	case edm.DateTime:
		ticks, err := edm.ParseDateTime(s)
		if errors.Is(err, edm.ErrRange) && edm.FormatDateTime7(ticks) == s {
			// Canonical, but before 1601 (or past 9999): no service stores
			// it, so no export holds it.
			return edm.Value{}, fmt.Errorf("%q is outside the range of Edm.DateTime (1601-01-01 to 9999-12-31)", s)
		}
		if err != nil || edm.FormatDateTime7(ticks) != s {
			return bad()
		}
		return edm.DateTimeValue(ticks), nil
	case edm.Guid:
		v, err := edm.GuidValue(s)
		if err != nil || v.Str != s {
			return bad()
		}
		return v, nil
	case edm.Binary:
		b, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil {
			return bad()
		}
		if b == nil {
			b = []byte{}
		}
		return edm.BinaryValue(b), nil
	}
	return bad()
}

// appendRequestEntity appends the request body of e for an insert-or-replace:
// keys and properties with the annotations that make every type exact on the
// service, Azurite and partita. Finite doubles are annotated too, since
// Azurite re-serializes 5.0 as 5 and would read it back as Int32.
func appendRequestEntity(b []byte, e *partita.Entity) []byte {
	b = append(b, `{"PartitionKey":`...)
	b = wire.AppendString(b, e.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b = wire.AppendString(b, e.RowKey)
	for i := range e.Properties {
		p := &e.Properties[i]
		if annotated(p.Value.Type) {
			b = append(b, ',')
			// The name's JSON string with "@odata.type" inside its quotes,
			// without building the concatenated name.
			b = wire.AppendString(b, p.Name)
			b = append(b[:len(b)-1], `@odata.type":"`...)
			b = append(b, p.Value.Type.String()...)
			b = append(b, '"')
		}
		b = append(b, ',')
		b = wire.AppendString(b, p.Name)
		b = append(b, ':')
		b = appendRequestValue(b, p.Value)
	}
	return append(b, '}')
}

// annotated reports whether a request body annotates a value of type t.
func annotated(t edm.Type) bool {
	switch t {
	case edm.Int64, edm.Double, edm.DateTime, edm.Guid, edm.Binary:
		return true
	}
	return false
}

// appendRequestValue appends v as a request body's JSON value.
func appendRequestValue(b []byte, v edm.Value) []byte {
	switch v.Type {
	case edm.Int32:
		return strconv.AppendInt(b, v.Int, 10)
	case edm.Boolean:
		return strconv.AppendBool(b, v.Bool())
	case edm.Double:
		f := v.Float
		if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			return appendValueText(b, v)
		}
		return edm.AppendDouble(b, f)
	}
	return appendValueText(b, v)
}

// fastRecord reads a line in exactly the layout AppendRecord writes, with
// no escapes in any string; ok is false for anything else, which the
// encoding/json path then reads (and explains when it is wrong). The fast
// path is several times cheaper and gives what encoding/json gives
// (FuzzFastRecord checks that).
func fastRecord(b []byte) (j jsonRecord, ok bool) {
	i := 0
	lit := func(s string) bool {
		if len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	str := func() (string, bool) {
		if i >= len(b) || b[i] != '"' {
			return "", false
		}
		start := i + 1
		// Plain bytes a word at a time (a 1 KiB value is most of a line),
		// then byte by byte from the word that holds the end.
		for k := start + wire.PlainPrefix(b[start:]); k < len(b); k++ {
			c := b[k]
			if c == '"' {
				seg := b[start:k]
				if !utf8.Valid(seg) {
					return "", false
				}
				i = k + 1
				return string(seg), true
			}
			if c == '\\' || c < 0x20 {
				return "", false
			}
		}
		return "", false
	}
	var t, pk, rk string
	if !lit(`{"table":`) {
		return j, false
	}
	if t, ok = str(); !ok || !lit(`,"PartitionKey":`) {
		return j, false
	}
	if pk, ok = str(); !ok || !lit(`,"RowKey":`) {
		return j, false
	}
	if rk, ok = str(); !ok || !lit(`,"props":[`) {
		return j, false
	}
	j = jsonRecord{Table: &t, PartitionKey: &pk, RowKey: &rk, Props: [][]string{}}
	if lit("]}") {
		return j, i == len(b)
	}
	for {
		p := make([]string, 3)
		if !lit("[") {
			return j, false
		}
		for k := 0; k < 3; k++ {
			if k > 0 && !lit(",") {
				return j, false
			}
			if p[k], ok = str(); !ok {
				return j, false
			}
		}
		if !lit("]") {
			return j, false
		}
		j.Props = append(j.Props, p)
		if lit(",") {
			continue
		}
		if lit("]}") {
			return j, i == len(b)
		}
		return j, false
	}
}

// annotationLike reports whether a property name would read as an OData
// annotation in an entity's JSON ("A@odata.type" types property A;
// "odata.etag" is the entity's): no property can carry such a name (it is
// not a C# identifier), and writing one would silently change the entity.
func annotationLike(name string) bool {
	return strings.IndexByte(name, '@') >= 0 || strings.HasPrefix(name, "odata.")
}
