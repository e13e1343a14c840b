// Package wire holds the bytes on the wire that are not HTTP routing:
// entity JSON in the three OData metadata levels, query response pages,
// error bodies and continuation tokens. It knows the domain types but not
// the store.
package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/partita/partita"
	"github.com/partita/partita/edm"
)

// Metadata is an OData JSON metadata level.
type Metadata uint8

const (
	MinimalMetadata Metadata = iota
	NoMetadata
	FullMetadata
)

// String returns the odata= parameter value.
func (m Metadata) String() string {
	switch m {
	case NoMetadata:
		return "nometadata"
	case FullMetadata:
		return "fullmetadata"
	}
	return "minimalmetadata"
}

// ContentType returns the response Content-Type for m.
func (m Metadata) ContentType() string {
	return "application/json;odata=" + m.String() + ";streaming=true;charset=utf-8"
}

func invalidInput() error { return partita.NewError(partita.CodeInvalidInput, partita.MsgInvalidInput) }

type rawProp struct {
	name string
	tok  json.Token // string, json.Number, bool or nil
}

// DecodeEntity parses an entity JSON body (docs/COMPATIBILITY.md §5). Keys are
// taken from the body when present; the caller overrides them from the URL
// for PUT/MERGE. Null properties are dropped. Type errors are *partita.Error
// values with the service's codes.
func DecodeEntity(body []byte) (*partita.Entity, bool, bool, error) {
	return decodeEntity(body, false)
}

// DecodeEntityInPlace is DecodeEntity, except that the entity's string
// property values written without escapes are not copied: they alias body
// (keys, property names and every other value are copies). The caller must
// not modify body while it uses the entity, and should not keep the entity
// long after body: a value keeps all of body alive. $batch uses it, whose
// body outlives the write of its entities and is never modified; a 1 KiB
// string is then neither copied nor allocated.
func DecodeEntityInPlace(body []byte) (*partita.Entity, bool, bool, error) {
	return decodeEntity(body, true)
}

func decodeEntity(body []byte, share bool) (*partita.Entity, bool, bool, error) {
	if !utf8.Valid(body) {
		return nil, false, false, invalidInput()
	}
	// Room for a typical entity's members up front, so the appends below
	// do not regrow slice after slice.
	props := make([]rawProp, 0, 16)
	var types annotations
	names := dupSet{list: make([]string, 0, 16)}
	err := scanObject(body, share, func(name string, v any) error {
		if names.add(name) {
			return partita.NewError(partita.CodeDuplicatePropertiesSpecified, partita.MsgDuplicateProperties)
		}
		if i := strings.IndexByte(name, '@'); i >= 0 {
			if name[i:] == "@odata.type" {
				s, ok := v.(string)
				if !ok {
					return invalidInput()
				}
				types.add(name[:i], s)
			}
			return nil
		}
		if !strings.HasPrefix(name, "odata.") {
			props = append(props, rawProp{name, v})
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, errJSON) || errors.Is(err, errNested) {
			return nil, false, false, invalidInput()
		}
		return nil, false, false, err
	}

	e := &partita.Entity{Properties: make([]partita.Property, 0, len(props))}
	var hasPK, hasRK bool
	for _, p := range props {
		switch p.name {
		case partita.PropTimestamp:
			continue
		case partita.PropPartitionKey, partita.PropRowKey:
			s, ok := p.tok.(string)
			if !ok {
				if p.tok == nil {
					return nil, false, false, partita.NewError(partita.CodePropertiesNeedValue, partita.MsgPropertiesNeedValue)
				}
				return nil, false, false, invalidInput()
			}
			if t, ok := types.get(p.name); ok && t != "Edm.String" {
				return nil, false, false, invalidInput()
			}
			if share {
				s = strings.Clone(s) // keys outlive the request (the advisor keeps some)
			}
			if p.name == partita.PropPartitionKey {
				e.PartitionKey, hasPK = s, true
			} else {
				e.RowKey, hasRK = s, true
			}
			continue
		}
		if p.tok == nil {
			continue
		}
		t, annotated := types.get(p.name)
		if annotated && t == "" {
			return nil, false, false, invalidInput() // a type name, but none known
		}
		v, err := toValue(p.name, p.tok, t)
		if err != nil {
			return nil, false, false, err
		}
		e.Properties = append(e.Properties, partita.Property{Name: p.name, Value: v})
	}
	return e, hasPK, hasRK, nil
}

// annotations holds (property, type name) pairs: a slice for the usual
// handful, a map beyond that, since every property looks its type up (a
// body of 4 MiB holds ~127,000 annotations, and a scan of all of them per
// property took ~38 s of CPU before the body was refused).
type annotations struct {
	list [][2]string
	m    map[string]string
}

// annotationsListMax is the most annotations the list holds before the map.
const annotationsListMax = 16

func (a *annotations) add(prop, typ string) {
	if a.m != nil {
		a.m[prop] = typ
		return
	}
	a.list = append(a.list, [2]string{prop, typ})
	if len(a.list) > annotationsListMax {
		a.m = make(map[string]string, 2*len(a.list))
		for _, x := range a.list {
			a.m[x[0]] = x[1]
		}
		a.list = nil
	}
}

func (a *annotations) get(prop string) (string, bool) {
	if a.m != nil {
		t, ok := a.m[prop]
		return t, ok
	}
	for _, x := range a.list {
		if x[0] == prop {
			return x[1], true
		}
	}
	return "", false
}

// dupSet detects repeated member names: a linear scan for the usual
// handful, a map beyond that.
type dupSet struct {
	list []string
	m    map[string]struct{}
}

// add records name and reports whether it was already there.
func (d *dupSet) add(name string) bool {
	if d.m != nil {
		if _, ok := d.m[name]; ok {
			return true
		}
		d.m[name] = struct{}{}
		return false
	}
	for _, n := range d.list {
		if n == name {
			return true
		}
	}
	d.list = append(d.list, name)
	if len(d.list) > 32 {
		d.m = make(map[string]struct{}, 2*len(d.list))
		for _, n := range d.list {
			d.m[n] = struct{}{}
		}
	}
	return false
}

func toValue(name string, tok json.Token, typ string) (edm.Value, error) {
	if typ == "" {
		switch v := tok.(type) {
		case string:
			return edm.StringValue(v), nil
		case bool:
			return edm.BoolValue(v), nil
		case json.Number:
			s := string(v)
			if !strings.ContainsAny(s, ".eE") {
				if i, err := strconv.ParseInt(s, 10, 32); err == nil {
					return edm.Int32Value(int32(i)), nil
				}
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return edm.Value{}, invalidInput()
			}
			if math.IsInf(f, 0) {
				return edm.Value{}, invalidInput()
			}
			return edm.DoubleValue(f), nil
		}
		return edm.Value{}, invalidInput()
	}
	t, ok := edm.ParseType(typ)
	if !ok {
		return edm.Value{}, invalidInput()
	}
	text, isStr := tok.(string)
	num, isNum := tok.(json.Number)
	if isNum {
		text = string(num)
	}
	switch t {
	case edm.String:
		if !isStr {
			return edm.Value{}, invalidInput()
		}
		return edm.StringValue(text), nil
	case edm.Boolean:
		if b, ok := tok.(bool); ok {
			return edm.BoolValue(b), nil
		}
		if isStr && (text == "true" || text == "false") {
			return edm.BoolValue(text == "true"), nil
		}
		return edm.Value{}, invalidInput()
	case edm.Int32:
		if !isStr && !isNum {
			return edm.Value{}, invalidInput()
		}
		i, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return edm.Value{}, invalidInput()
		}
		return edm.Int32Value(int32(i)), nil
	case edm.Int64:
		if !isStr && !isNum {
			return edm.Value{}, invalidInput()
		}
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return edm.Value{}, invalidInput()
		}
		return edm.Int64Value(i), nil
	case edm.Double:
		if !isStr && !isNum {
			return edm.Value{}, invalidInput()
		}
		f, err := edm.ParseDouble(text)
		if err != nil {
			return edm.Value{}, invalidInput()
		}
		return edm.DoubleValue(f), nil
	case edm.DateTime:
		if !isStr {
			return edm.Value{}, invalidInput()
		}
		ticks, err := edm.ParseDateTime(text)
		if errors.Is(err, edm.ErrRange) {
			return edm.Value{}, partita.Errorf(partita.CodeOutOfRangeInput, "The '%s' parameter of value '%s' is out of range.", name, outOfRangeText(text))
		}
		if err != nil {
			return edm.Value{}, invalidInput()
		}
		return edm.DateTimeValue(ticks), nil
	case edm.Guid:
		if !isStr {
			return edm.Value{}, invalidInput()
		}
		v, err := edm.GuidValue(text)
		if err != nil {
			return edm.Value{}, invalidInput()
		}
		return v, nil
	case edm.Binary:
		if !isStr {
			return edm.Value{}, invalidInput()
		}
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(text, "="))
			if err != nil {
				return edm.Value{}, invalidInput()
			}
		}
		return edm.BinaryValue(b), nil
	}
	return edm.Value{}, invalidInput()
}

// outOfRangeText renders an out-of-range date-time as the service's
// MM/dd/yyyy HH:mm:ss.
func outOfRangeText(s string) string {
	if len(s) >= 19 {
		return s[5:7] + "/" + s[8:10] + "/" + s[0:4] + " " + s[11:19]
	}
	return s
}

// EntityOptions control how an entity is written.
type EntityOptions struct {
	Metadata Metadata
	// Base is the service root as the client addressed it, e.g.
	// http://127.0.0.1:10002/devstoreaccount1.
	Base    string
	Account string
	Table   string
	// Select lists the properties to write (nil: all). Selected properties
	// an entity lacks are written as null.
	Select []string
	// Element adds odata.metadata for a single-entity response.
	Element bool

	// sel indexes a long Select for the entities written with these
	// options (built on first use: options are used by one request).
	sel *selectIndex
}

// selectIndex places an entity's properties in a long $select in one pass
// over the entity. Looking each selected name up among the properties
// costs names × properties comparisons an entity: $select with 1,000
// names over 250-property entities took 0.85 s of CPU for one page.
type selectIndex struct {
	names []string       // the Select it indexes
	place map[string]int // selected name → its place in Select (names are distinct: parseSelect)
	slot  []int32        // by place: 1 + the entity's property index, 0 when it lacks it
}

// selectIndexMin is the product of selected names and an entity's
// properties above which the index is used (a variable for tests).
var selectIndexMin = 64

// AppendEntity appends the JSON object of e.
func AppendEntity(b []byte, e *partita.Entity, o *EntityOptions) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) { b = appendKey(b, &first, k) }
	if o.Metadata != NoMetadata {
		if o.Element {
			key("odata.metadata")
			b = append(b, '"')
			b = appendStringBody(b, o.Base)
			b = append(b, "/$metadata#"...)
			b = appendStringBody(b, o.Table)
			b = append(b, "/@Element\""...)
		}
		// Full metadata's strings are appended piece by piece, not built
		// with + first: JSON escaping works byte by byte, so the escaped
		// pieces are the escaped whole, without a string per entity.
		if o.Metadata == FullMetadata {
			key("odata.type")
			b = append(b, '"')
			b = appendStringBody(b, o.Account)
			b = append(b, '.')
			b = appendStringBody(b, o.Table)
			b = append(b, '"')
			key("odata.id")
			b = append(b, '"')
			b = appendStringBody(b, o.Base)
			b = append(b, '/')
			b = appendEntityPath(b, o.Table, e.PartitionKey, e.RowKey)
			b = append(b, '"')
		}
		key("odata.etag")
		b = partita.AppendJSONETag(b, e.Timestamp)
		if o.Metadata == FullMetadata {
			key("odata.editLink")
			b = append(b, '"')
			b = appendEntityPath(b, o.Table, e.PartitionKey, e.RowKey)
			b = append(b, '"')
		}
	}
	writeSys := func(name string) {
		switch name {
		case partita.PropPartitionKey:
			key(name)
			b = appendString(b, e.PartitionKey)
		case partita.PropRowKey:
			key(name)
			b = appendString(b, e.RowKey)
		case partita.PropTimestamp:
			if o.Metadata == FullMetadata {
				key("Timestamp@odata.type")
				b = appendString(b, "Edm.DateTime")
			}
			key(name)
			b = append(b, '"')
			b = edm.AppendDateTime(b, e.Timestamp)
			b = append(b, '"')
		}
	}
	if o.Select == nil {
		writeSys(partita.PropPartitionKey)
		writeSys(partita.PropRowKey)
		writeSys(partita.PropTimestamp)
		for i := range e.Properties {
			p := &e.Properties[i]
			b = appendProp(b, &first, p.Name, p.Value, o.Metadata)
		}
	} else {
		for _, s := range []string{partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp} {
			for _, n := range o.Select {
				if n == s {
					writeSys(s)
					break
				}
			}
		}
		var slot []int32
		if len(o.Select)*len(e.Properties) > selectIndexMin {
			slot = o.placeSelected(e)
		}
		for j, n := range o.Select {
			switch n {
			case partita.PropPartitionKey, partita.PropRowKey, partita.PropTimestamp:
				continue
			}
			var v edm.Value
			var ok bool
			if slot == nil {
				v, ok = e.Get(n)
			} else if i := slot[j]; i > 0 {
				v, ok = e.Properties[i-1].Value, true
			}
			if !ok {
				if strings.IndexByte(n, '@') >= 0 || strings.HasPrefix(n, "odata.") {
					// An annotation or metadata name, never a property
					// (DecodeEntity): a null for it would stand beside,
					// or instead of, the real member of that name.
					continue
				}
				key(n)
				b = append(b, "null"...)
				continue
			}
			b = appendProp(b, &first, n, v, o.Metadata)
		}
	}
	return append(b, '}')
}

// placeSelected returns, for each place in o.Select, 1 + the index of e's
// property of that name, or 0.
func (o *EntityOptions) placeSelected(e *partita.Entity) []int32 {
	if o.sel == nil || len(o.sel.names) != len(o.Select) || &o.sel.names[0] != &o.Select[0] {
		o.sel = &selectIndex{names: o.Select, place: make(map[string]int, len(o.Select)), slot: make([]int32, len(o.Select))}
		for j, n := range o.Select {
			o.sel.place[n] = j
		}
	}
	clear(o.sel.slot)
	for i := range e.Properties {
		if j, ok := o.sel.place[e.Properties[i].Name]; ok {
			o.sel.slot[j] = int32(i + 1)
		}
	}
	return o.sel.slot
}

// appendKey appends a member name, after a comma unless it is the first.
func appendKey(b []byte, first *bool, k string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = appendString(b, k)
	return append(b, ':')
}

func appendProp(b []byte, first *bool, name string, v edm.Value, m Metadata) []byte {
	key := func(k string) { b = appendKey(b, first, k) }
	annotate := func() {
		if m != NoMetadata {
			key(name + "@odata.type")
			b = appendString(b, v.Type.String())
		}
	}
	switch v.Type {
	case edm.String:
		key(name)
		b = appendString(b, v.Str)
	case edm.Int32:
		key(name)
		b = strconv.AppendInt(b, v.Int, 10)
	case edm.Boolean:
		key(name)
		b = strconv.AppendBool(b, v.Bool())
	case edm.Double:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			annotate()
			key(name)
			b = append(b, '"')
			b = edm.AppendDouble(b, v.Float)
			b = append(b, '"')
		} else {
			key(name)
			b = edm.AppendDouble(b, v.Float)
		}
	case edm.Int64:
		annotate()
		key(name)
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Int, 10)
		b = append(b, '"')
	case edm.DateTime:
		annotate()
		key(name)
		b = append(b, '"')
		b = edm.AppendDateTime(b, v.Int)
		b = append(b, '"')
	case edm.Guid:
		annotate()
		key(name)
		b = appendString(b, v.Str)
	case edm.Binary:
		annotate()
		key(name)
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bin)
		b = append(b, '"')
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

// appendStringBody appends s JSON-escaped, without the quotes.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	// Plain bytes go a word at a time (most strings have nothing to
	// escape; a 1 KiB payload is the bulk of a query response), up to the
	// word that holds a byte to escape, which the loop reaches byte by
	// byte; after it, words again.
	i := PlainPrefix(s)
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
		i += PlainPrefix(s[i:])
	}
	return append(b, s[start:]...)
}

// escapeBits is not zero when any of the eight bytes in x (read little
// endian) is below 0x20, '"' or '\\', the bytes a JSON string must escape
// (bytewise SWAR tests; exact: a byte of 0x80 or more never matches, so
// UTF-8 passes through). Its results for several words may be or-ed and
// tested once.
func escapeBits(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less20 := (x - ones*0x20) &^ x
	quote := x ^ (ones * '"')
	quote = (quote - ones) &^ quote
	bslash := x ^ (ones * '\\')
	bslash = (bslash - ones) &^ bslash
	return (less20 | quote | bslash) & highs
}

// PlainPrefix returns the length of the longest prefix of s made of whole
// eight-byte words in which no byte needs a JSON escape (escapeBits): a
// string's plain run, which its caller then goes on from byte by byte;
// partita copy's fast paths use it too. It
// tests 32 bytes at a time, four independent words and one branch, which
// a 1 KiB payload (the bulk of an insert, a $batch or a query response)
// goes through about 1.5 times as fast as one word per branch.
func PlainPrefix[T string | []byte](s T) int {
	// The first word alone first: a string with many escapes costs a word
	// per escape, as before.
	if len(s) < 8 || escapeBits(le64(s, 0)) != 0 {
		return 0
	}
	i := 8
	for ; i+32 <= len(s); i += 32 {
		if escapeBits(le64(s, i))|escapeBits(le64(s, i+8))|escapeBits(le64(s, i+16))|escapeBits(le64(s, i+24)) != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if escapeBits(le64(s, i)) != 0 {
			break
		}
	}
	return i
}

// le64 reads s[i:i+8] as a little-endian word (the compiler merges the
// loads into one).
func le64[T string | []byte](s T, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendString appends s as a JSON string (exported for other encoders).
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

// EntityPath returns table(PartitionKey='pk',RowKey='rk') with the keys as
// OData literals, percent-encoded like .NET's Uri.EscapeDataString.
func EntityPath(table, pk, rk string) string {
	return table + "(PartitionKey='" + escapeData(strings.ReplaceAll(pk, "'", "''")) +
		"',RowKey='" + escapeData(strings.ReplaceAll(rk, "'", "''")) + "')"
}

// appendEntityPath appends EntityPath(table, pk, rk) JSON-escaped (without
// quotes). The escaped keys are all unreserved bytes and %XX, which JSON
// leaves alone; the table name goes through the JSON escaper.
func appendEntityPath(b []byte, table, pk, rk string) []byte {
	b = appendStringBody(b, table)
	b = append(b, "(PartitionKey='"...)
	b = appendKeyLiteral(b, pk)
	b = append(b, "',RowKey='"...)
	b = appendKeyLiteral(b, rk)
	return append(b, "')"...)
}

// appendKeyLiteral appends escapeData(strings.ReplaceAll(k, "'", "”")).
func appendKeyLiteral(b []byte, k string) []byte {
	start := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		if unreserved(c) && c != '\'' {
			continue
		}
		b = append(b, k[start:i]...)
		if c == '\'' {
			b = append(b, '\'', '\'')
		} else {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&0xF])
		}
		start = i + 1
	}
	return append(b, k[start:]...)
}

// escapeData percent-encodes every byte but A-Z a-z 0-9 - _ . ~ and the
// quote of the OData literal.
func escapeData(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('%')
			sb.WriteByte("0123456789ABCDEF"[c>>4])
			sb.WriteByte("0123456789ABCDEF"[c&0xF])
		}
	}
	return sb.String()
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~' || c == '\''
}
