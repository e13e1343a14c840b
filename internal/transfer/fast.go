package transfer

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
	"github.com/partita/partita/internal/wire"
)

// The export fast path: a query page's entity JSON straight to its JSONL
// record, without building a *partita.Entity (DecodeEntity's strings,
// tokens and values were half of an export's CPU). It reads only the
// plainest form of entity JSON — no whitespace, no escapes in any string,
// no nulls, no nesting, no repeated member — and says ok=false for
// anything else, which the general path (DecodeEntity, AppendRecord) then
// handles. When ok, the record is byte for byte what the general path
// writes (FuzzFastExport and TestFastExportOracle check it): string values
// go through verbatim (with no escapes and valid UTF-8, the JSON text is the
// string, and AppendString writes it back unchanged), other values through
// the same parse and format functions the general path uses.

// liteMember is one member of an entity object: its name and the raw text
// of its value (a string's contents without the quotes).
type liteMember struct {
	name []byte
	val  []byte
	kind byte // '"' string, '0' number, 't' true, 'f' false
}

// liteEntity is a scanned entity; its slices point into the page body.
type liteEntity struct {
	members []liteMember
}

// scanLite scans one entity object in the plainest form. ok is false for
// anything else.
func (l *liteEntity) scan(b []byte) bool {
	l.members = l.members[:0]
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || !utf8.Valid(b) {
		return false
	}
	i := 1
	if b[i] == '}' {
		return i+1 == len(b)
	}
	for {
		name, j, ok := plainString(b, i)
		if !ok || j >= len(b) || b[j] != ':' {
			return false
		}
		i = j + 1
		if i >= len(b) {
			return false
		}
		m := liteMember{name: name}
		switch c := b[i]; {
		case c == '"' && bytes.HasPrefix(name, []byte("odata.")):
			// odata.etag has escaped quotes; DecodeEntity reads and drops
			// odata.* members, so only their syntax matters.
			m.kind = '"'
			if i, ok = skipEscaped(b, i); !ok {
				return false
			}
		case c == '"':
			m.kind = '"'
			m.val, i, ok = plainString(b, i)
			if !ok {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			m.kind = '0'
			j := jsonNumber(b, i)
			if j < 0 {
				return false
			}
			m.val, i = b[i:j], j
		case c == 't' && bytes.HasPrefix(b[i:], []byte("true")):
			m.kind, m.val, i = 't', b[i:i+4], i+4
		case c == 'f' && bytes.HasPrefix(b[i:], []byte("false")):
			m.kind, m.val, i = 'f', b[i:i+5], i+5
		default:
			return false
		}
		// DecodeEntity refuses an @odata.type annotation that is not a
		// string, whichever member it annotates.
		if a := bytes.IndexByte(name, '@'); a >= 0 && string(name[a:]) == "@odata.type" && m.kind != '"' {
			return false
		}
		for k := range l.members {
			if string(l.members[k].name) == string(name) {
				return false // DecodeEntity refuses it
			}
		}
		if len(l.members) >= 300 {
			return false // a long entity: the general path's map is cheaper
		}
		l.members = append(l.members, m)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(b)
		default:
			return false
		}
	}
}

// plainString reads the JSON string at b[i] when it has no escapes and no
// control characters; it returns its contents and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	for k := start + wire.PlainPrefix(b[start:]); k < len(b); k++ {
		switch c := b[k]; {
		case c == '"':
			return b[start:k], k + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipEscaped returns the index after the JSON string at b[i], which may
// hold the escapes \", \\ and \/ (any other escape: ok is false).
func skipEscaped(b []byte, i int) (int, bool) {
	for k := i + 1; k < len(b); k++ {
		switch c := b[k]; {
		case c == '"':
			return k + 1, true
		case c == '\\':
			if k+1 >= len(b) || b[k+1] != '"' && b[k+1] != '\\' && b[k+1] != '/' {
				return 0, false
			}
			k++
		case c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// jsonNumber returns the index after the JSON number at b[i] (RFC 8259
// grammar), or -1.
func jsonNumber(b []byte, i int) int {
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return -1
		}
	}
	return i
}

// typeOf returns the @odata.type annotation of the property name, as
// DecodeEntity reads it: the member "name@odata.type" (the name's first
// '@'), whose value must be a string.
func (l *liteEntity) typeOf(name []byte) (typ []byte, ok bool) {
	for k := range l.members {
		m := &l.members[k]
		n := m.name
		if len(n) == len(name)+len("@odata.type") && string(n[:len(name)]) == string(name) && string(n[len(name):]) == "@odata.type" {
			if m.kind != '"' {
				return nil, false
			}
			return m.val, true
		}
	}
	return nil, true
}

// isProperty reports whether a member is a property (not an annotation or
// an odata. member), as DecodeEntity sorts them.
func isProperty(name []byte) bool {
	return bytes.IndexByte(name, '@') < 0 && !bytes.HasPrefix(name, []byte("odata."))
}

// liteValue is a property value read from a member: a string's text in
// str (verbatim), anything else in v.
type liteValue struct {
	v   edm.Value
	str []byte
}

// value converts member m of type typ ("" when unannotated) as toValue in
// internal/wire does; ok is false for anything it would refuse and for
// forms the fast path leaves to it (unannotated non-integers).
func (m *liteMember) value(typ []byte) (lv liteValue, ok bool) {
	text := m.val
	isStr, isNum := m.kind == '"', m.kind == '0'
	if typ == nil {
		switch m.kind {
		case '"':
			return liteValue{v: edm.Value{Type: edm.String}, str: text}, true
		case 't', 'f':
			return liteValue{v: edm.BoolValue(m.kind == 't')}, true
		}
		// An integer in Int32's range is Int32; the rest is Double, left to
		// the general path.
		for _, c := range text {
			if c == '.' || c == 'e' || c == 'E' {
				return lv, false
			}
		}
		n, err := strconv.ParseInt(string(text), 10, 32)
		if err != nil {
			return lv, false
		}
		return liteValue{v: edm.Int32Value(int32(n))}, true
	}
	t, tok := edm.ParseType(string(typ))
	if !tok {
		return lv, false
	}
	switch t {
	case edm.String:
		if !isStr {
			return lv, false
		}
		return liteValue{v: edm.Value{Type: edm.String}, str: text}, true
	case edm.Boolean:
		if m.kind == 't' || m.kind == 'f' {
			return liteValue{v: edm.BoolValue(m.kind == 't')}, true
		}
		if isStr && (string(text) == "true" || string(text) == "false") {
			return liteValue{v: edm.BoolValue(string(text) == "true")}, true
		}
		return lv, false
	case edm.Int32, edm.Int64:
		if !isStr && !isNum {
			return lv, false
		}
		bits := 64
		if t == edm.Int32 {
			bits = 32
		}
		n, err := strconv.ParseInt(string(text), 10, bits)
		if err != nil {
			return lv, false
		}
		if t == edm.Int32 {
			return liteValue{v: edm.Int32Value(int32(n))}, true
		}
		return liteValue{v: edm.Int64Value(n)}, true
	case edm.Double:
		if !isStr && !isNum {
			return lv, false
		}
		f, err := edm.ParseDouble(string(text))
		if err != nil {
			return lv, false
		}
		return liteValue{v: edm.DoubleValue(f)}, true
	case edm.DateTime:
		if !isStr {
			return lv, false
		}
		ticks, err := edm.ParseDateTime(string(text))
		if err != nil {
			return lv, false
		}
		return liteValue{v: edm.DateTimeValue(ticks)}, true
	case edm.Guid:
		if !isStr {
			return lv, false
		}
		v, err := edm.GuidValue(string(text))
		if err != nil {
			return lv, false
		}
		return liteValue{v: v}, true
	case edm.Binary:
		if !isStr {
			return lv, false
		}
		b, err := base64.StdEncoding.DecodeString(string(text))
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(string(text), "="))
			if err != nil {
				return lv, false
			}
		}
		return liteValue{v: edm.BinaryValue(b)}, true
	}
	return lv, false
}

// key returns the PartitionKey or RowKey member's text; ok is false when
// it is missing or not what DecodeEntity takes as a key.
func (l *liteEntity) key(name string) ([]byte, bool) {
	for k := range l.members {
		m := &l.members[k]
		if string(m.name) == name {
			if m.kind != '"' {
				return nil, false
			}
			typ, ok := l.typeOf(m.name)
			if !ok || typ != nil && string(typ) != "Edm.String" {
				return nil, false
			}
			return m.val, true
		}
	}
	return nil, false
}

// props calls fn for each property of the scanned entity in order, with
// its value as DecodeEntity reads it; ok is false when the fast path
// leaves the entity to DecodeEntity.
func (l *liteEntity) props(fn func(name []byte, lv liteValue)) bool {
	for k := range l.members {
		m := &l.members[k]
		if !isProperty(m.name) {
			continue
		}
		switch string(m.name) {
		case partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp:
			continue
		}
		typ, ok := l.typeOf(m.name)
		if !ok {
			return false
		}
		lv, ok := m.value(typ)
		if !ok {
			return false
		}
		fn(m.name, lv)
	}
	return true
}

// keys scans raw and returns its PartitionKey and RowKey; ok is false when
// the fast path leaves raw to DecodeEntity.
func (l *liteEntity) keys(raw []byte) (pk, rk []byte, ok bool) {
	if !l.scan(raw) {
		return nil, nil, false
	}
	for k := range l.members {
		if badMemberName(l.members[k].name) {
			return nil, nil, false // the general path refuses it, saying why
		}
	}
	if pk, ok = l.key(partita.PropPartitionKey); !ok {
		return nil, nil, false
	}
	if rk, ok = l.key(partita.PropRowKey); !ok {
		return nil, nil, false
	}
	return pk, rk, true
}

// appendRecordFast appends the JSONL record of the entity JSON raw in
// table, as AppendRecord(DecodeEntity(raw)) would, and returns its keys
// (pointing into raw); ok is false (and b unchanged) when it leaves raw
// to them.
func (l *liteEntity) appendRecordFast(b []byte, table string, raw []byte) (out, pk, rk []byte, ok bool) {
	pk, rk, ok = l.keys(raw)
	if !ok {
		return b, nil, nil, false
	}
	b0 := len(b)
	b = append(b, `{"table":`...)
	b = wire.AppendString(b, table)
	b = append(b, `,"PartitionKey":"`...)
	b = append(b, pk...)
	b = append(b, `","RowKey":"`...)
	b = append(b, rk...)
	b = append(b, `","props":[`...)
	first := true
	ok = l.props(func(name []byte, lv liteValue) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `["`...)
		b = append(b, name...)
		b = append(b, `","`...)
		b = append(b, lv.v.Type.String()...)
		b = append(b, `",`...)
		if lv.v.Type == edm.String {
			b = append(b, '"')
			b = append(b, lv.str...)
			b = append(b, '"')
		} else {
			b = appendValueText(b, lv.v)
		}
		b = append(b, ']')
	})
	if !ok {
		return b[:b0], nil, nil, false
	}
	return append(b, "]}\n"...), pk, rk, true
}

// appendRequestFast appends the insert-or-replace request body of the
// entity JSON raw, as appendRequestEntity(DecodeEntity(raw)) would, and
// returns its keys (pointing into raw); ok is false (and b unchanged) when
// it leaves raw to them.
func (l *liteEntity) appendRequestFast(b, raw []byte) (out, pk, rk []byte, ok bool) {
	pk, rk, ok = l.keys(raw)
	if !ok {
		return b, nil, nil, false
	}
	b0 := len(b)
	b = append(b, `{"PartitionKey":"`...)
	b = append(b, pk...)
	b = append(b, `","RowKey":"`...)
	b = append(b, rk...)
	b = append(b, '"')
	ok = l.props(func(name []byte, lv liteValue) {
		if annotated(lv.v.Type) {
			b = append(b, `,"`...)
			b = append(b, name...)
			b = append(b, `@odata.type":"`...)
			b = append(b, lv.v.Type.String()...)
			b = append(b, '"')
		}
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		if lv.v.Type == edm.String {
			b = append(b, '"')
			b = append(b, lv.str...)
			b = append(b, '"')
		} else {
			b = appendRequestValue(b, lv.v)
		}
	})
	if !ok {
		return b[:b0], nil, nil, false
	}
	return append(b, '}'), pk, rk, true
}

// appendImportFast reads a JSONL line (without its newline) in exactly the
// layout AppendRecord writes, with no escapes in any string, and appends
// the insert-or-replace request body appendRequestEntity would write for
// its entity; it returns the record's table and keys (pointing into line).
// ok is false (and b unchanged) for anything else, which DecodeRecord then
// reads (and explains when it is wrong); when ok, DecodeRecord reads the
// line without error and to the same entity (TestFastImportOracle,
// FuzzFastImport).
func appendImportFast(b, line []byte) (out, table, pk, rk []byte, ok bool) {
	i := 0
	lit := func(s string) bool {
		if len(line)-i < len(s) || string(line[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	str := func() ([]byte, bool) {
		s, j, ok := plainString(line, i)
		if !ok || !utf8.Valid(s) {
			return nil, false
		}
		i = j
		return s, true
	}
	if !lit(`{"table":`) {
		return b, nil, nil, nil, false
	}
	if table, ok = str(); !ok || len(table) == 0 || !lit(`,"PartitionKey":`) {
		return b, nil, nil, nil, false
	}
	if pk, ok = str(); !ok || !lit(`,"RowKey":`) {
		return b, nil, nil, nil, false
	}
	if rk, ok = str(); !ok || !lit(`,"props":[`) {
		return b, nil, nil, nil, false
	}
	b0 := len(b)
	fail := func() ([]byte, []byte, []byte, []byte, bool) { return b[:b0], nil, nil, nil, false }
	b = append(b, `{"PartitionKey":"`...)
	b = append(b, pk...)
	b = append(b, `","RowKey":"`...)
	b = append(b, rk...)
	b = append(b, '"')
	if lit("]}") {
		if i != len(line) {
			return fail()
		}
		return append(b, '}'), table, pk, rk, true
	}
	var names [32][]byte
	n := 0
	for {
		if !lit("[") {
			return fail()
		}
		name, ok := str()
		if !ok || !lit(",") {
			return fail()
		}
		typ, ok := str()
		if !ok || !lit(",") {
			return fail()
		}
		text, ok := str()
		if !ok || !lit("]") {
			return fail()
		}
		switch string(name) {
		case "", partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp:
			return fail()
		}
		if annotationLike(string(name)) {
			return fail() // DecodeRecord says why
		}
		if n == len(names) {
			return fail() // many properties: DecodeRecord's set
		}
		for _, m := range names[:n] {
			if string(m) == string(name) {
				return fail()
			}
		}
		names[n] = name
		n++
		var v edm.Value
		if string(typ) == "Edm.String" {
			v.Type = edm.String
		} else {
			var err error
			if v, err = parseValueText(string(typ), string(text)); err != nil {
				return fail()
			}
		}
		if annotated(v.Type) {
			b = append(b, `,"`...)
			b = append(b, name...)
			b = append(b, `@odata.type":"`...)
			b = append(b, v.Type.String()...)
			b = append(b, '"')
		}
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		if v.Type == edm.String {
			b = append(b, '"')
			b = append(b, text...)
			b = append(b, '"')
		} else {
			b = appendRequestValue(b, v)
		}
		if lit(",") {
			continue
		}
		if lit("]}") && i == len(line) {
			return append(b, '}'), table, pk, rk, true
		}
		return fail()
	}
}
