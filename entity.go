package partita

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/partita/partita/edm"
	"github.com/partita/partita/odata"
)

// Limits of the service (docs/COMPATIBILITY.md §3). Sizes of strings are counted
// in UTF-16 code units because the service stores strings as UTF-16.
const (
	MaxKeyUnits         = 512       // PartitionKey, RowKey: 1 KiB of UTF-16
	MaxStringUnits      = 32 * 1024 // Edm.String: 64 KiB of UTF-16
	MaxBinaryBytes      = 64 * 1024
	MaxPropertyNameLen  = 255
	MaxCustomProperties = 252 // 255 including PartitionKey, RowKey, Timestamp
	MaxEntitySize       = 1 << 20
	MaxPageSize         = 1000
	MaxBatchOperations  = 100
	MaxBatchBodyBytes   = 4 << 20
)

// Names of the system properties.
const (
	PropPartitionKey = "PartitionKey"
	PropRowKey       = "RowKey"
	PropTimestamp    = "Timestamp"
)

// Key identifies an entity within a table.
type Key struct {
	PartitionKey string
	RowKey       string
}

// Property is a custom property of an entity.
type Property struct {
	Name  string
	Value edm.Value
}

// Entity is a stored or to-be-stored entity. Properties holds the custom
// properties in the order the client gave them; system properties live in
// their own fields.
type Entity struct {
	PartitionKey string
	RowKey       string
	// Timestamp is the server-assigned last-modified time in edm ticks; zero
	// until the entity is written. The ETag derives from it.
	Timestamp  int64
	Properties []Property
}

// Key returns the entity's key.
func (e *Entity) Key() Key { return Key{e.PartitionKey, e.RowKey} }

// Get returns a property by name, the system properties included. It is the
// odata.Getter of the entity.
func (e *Entity) Get(name string) (edm.Value, bool) {
	switch name {
	case PropPartitionKey:
		return edm.StringValue(e.PartitionKey), true
	case PropRowKey:
		return edm.StringValue(e.RowKey), true
	case PropTimestamp:
		return edm.DateTimeValue(e.Timestamp), true
	}
	for i := range e.Properties {
		if e.Properties[i].Name == name {
			return e.Properties[i].Value, true
		}
	}
	return edm.Value{}, false
}

// Merge sets every property of src on e, overwriting same-named ones (whose
// type may change) and appending new ones.
func (e *Entity) Merge(src []Property) {
	if len(src)*len(e.Properties) > mergeIndexMin {
		e.mergeIndexed(src)
		return
	}
	e.mergePairwise(src)
}

// mergePairwise is Merge comparing names pairwise.
func (e *Entity) mergePairwise(src []Property) {
	for _, p := range src {
		found := false
		for i := range e.Properties {
			if e.Properties[i].Name == p.Name {
				e.Properties[i].Value = p.Value
				found = true
				break
			}
		}
		if !found {
			e.Properties = append(e.Properties, p)
		}
	}
}

// mergeIndexMin is the product of the two sides' property counts above
// which Merge indexes e's names: two entities of 252 properties took
// ~110 µs comparing names pairwise, 100 such merges 11 ms of one $batch.
const mergeIndexMin = 1024

func (e *Entity) mergeIndexed(src []Property) {
	at := make(map[string]int, len(e.Properties)+len(src))
	for i := range e.Properties {
		at[e.Properties[i].Name] = i
	}
	for _, p := range src {
		if i, ok := at[p.Name]; ok {
			e.Properties[i].Value = p.Value
			continue
		}
		at[p.Name] = len(e.Properties)
		e.Properties = append(e.Properties, p)
	}
}

// ETag returns the entity's ETag, W/"datetime'<Timestamp with : as %3A>'".
func (e *Entity) ETag() string { return FormatETag(e.Timestamp) }

// FormatETag returns the ETag of an entity whose Timestamp is ticks.
func FormatETag(ticks int64) string {
	return string(AppendETag(make([]byte, 0, 48), ticks))
}

// AppendETag appends the FormatETag text to b.
func AppendETag(b []byte, ticks int64) []byte {
	b = append(b, `W/"datetime'`...)
	b = appendETagTime(b, ticks)
	return append(b, `'"`...)
}

// AppendJSONETag appends the ETag as a JSON string (its quotes escaped),
// the odata.etag value of entity bodies.
func AppendJSONETag(b []byte, ticks int64) []byte {
	b = append(b, `"W/\"datetime'`...)
	b = appendETagTime(b, ticks)
	return append(b, `'\""`...)
}

// appendETagTime appends the Timestamp with each ':' percent-encoded.
func appendETagTime(b []byte, ticks int64) []byte {
	var tmp [40]byte
	for _, c := range edm.AppendDateTime(tmp[:0], ticks) {
		if c == ':' {
			b = append(b, "%3A"...)
		} else {
			b = append(b, c)
		}
	}
	return b
}

// ParseETag parses an entity ETag as written by FormatETag, tolerating a
// missing W/ prefix and any percent-encoding of the time, and returns its
// ticks. ok is false for anything that is not an entity-tag of that form.
func ParseETag(s string) (ticks int64, ok bool) {
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return 0, false
	}
	s = s[1 : len(s)-1]
	if !strings.HasPrefix(s, "datetime'") || !strings.HasSuffix(s, "'") {
		return 0, false
	}
	s = s[len("datetime'") : len(s)-1]
	if strings.Contains(s, "%") {
		var sb strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '%' && i+2 < len(s) {
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return 0, false
				}
				sb.WriteByte(byte(v))
				i += 2
				continue
			}
			sb.WriteByte(s[i])
		}
		s = sb.String()
	}
	t, err := edm.ParseDateTime(s)
	if err != nil {
		return 0, false
	}
	return t, true
}

// ValidETagSyntax reports whether s is a syntactically valid entity-tag
// (strong or weak, quoted), so that a well-formed but unknown tag can get 412
// while a malformed one gets 400.
func ValidETagSyntax(s string) bool {
	s = strings.TrimPrefix(s, "W/")
	return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`)
}

// utf16Len returns the number of UTF-16 code units of s: one per rune,
// two for runes beyond the BMP. ASCII, the usual case, is one unit per
// byte and is skipped eight bytes at a time. Past it, on valid UTF-8, the
// count is the byte count less the continuation bytes, plus one per 4-byte
// lead byte; invalid bytes count as one unit each, like the U+FFFD they
// decode to.
func utf16Len(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if (s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7])&0x80 != 0 {
			break
		}
	}
	for i < len(s) && s[i] < 0x80 {
		i++
	}
	if i == len(s) {
		return i
	}
	rest := s[i:] // starts on a rune boundary: everything before is ASCII
	n := len(rest)
	for j := 0; j < len(rest); j++ {
		switch c := rest[j]; {
		case c < 0x80:
		case c&0xC0 == 0x80:
			n--
		case c >= 0xF0:
			n++
		}
	}
	if n < 0 || !utf8.ValidString(rest) {
		n = 0
		for _, r := range rest {
			n += utf16.RuneLen(r)
		}
	}
	return i + n
}

// keyCharAllowed reports whether r may appear in a PartitionKey or RowKey.
func keyCharAllowed(r rune) bool {
	switch {
	case r == '/', r == '\\', r == '#', r == '?':
		return false
	case r <= 0x1F, r >= 0x7F && r <= 0x9F:
		return false
	}
	return true
}

// ValidKeyChars reports whether s holds only characters allowed in a key and
// is valid UTF-8.
func ValidKeyChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !keyCharAllowed(r) {
			return false
		}
	}
	return true
}

// StorableKey reports whether s can be a stored PartitionKey or RowKey:
// allowed characters, valid UTF-8, and not over MaxKeyUnits.
func StorableKey(s string) bool { return ValidKeyChars(s) && utf16Len(s) <= MaxKeyUnits }

// ValidateKey checks a PartitionKey or RowKey (name says which) from a
// request body.
func ValidateKey(name, value string) error {
	if !ValidKeyChars(value) {
		return Errorf(CodeOutOfRangeInput, "The '%s' parameter of value '%s' is out of range.", name, value)
	}
	if utf16Len(value) > MaxKeyUnits {
		return NewError(CodePropertyValueTooLarge, MsgPropertyValueTooLarge)
	}
	return nil
}

// ValidPropertyName reports whether name follows the C# identifier rules
// the service applies: letters, digits and '_', not starting with a digit.
func ValidPropertyName(name string) bool {
	if name == "" || !utf8.ValidString(name) {
		return false
	}
	for i, r := range name {
		if !odata.NameRune(r, i == 0) {
			return false
		}
	}
	return true
}

// ValidateProperty checks one custom property's name and value size.
func ValidateProperty(p Property) error {
	if len(p.Name) > MaxPropertyNameLen && utf16Len(p.Name) > MaxPropertyNameLen {
		return NewError(CodePropertyNameTooLong, MsgPropertyNameTooLong)
	}
	if !ValidPropertyName(p.Name) {
		return NewError(CodePropertyNameInvalid, MsgPropertyNameInvalid)
	}
	switch p.Value.Type {
	case edm.String:
		if len(p.Value.Str) > MaxStringUnits && utf16Len(p.Value.Str) > MaxStringUnits {
			return NewError(CodePropertyValueTooLarge, MsgPropertyValueTooLarge)
		}
	case edm.Binary:
		if len(p.Value.Bin) > MaxBinaryBytes {
			return NewError(CodePropertyValueTooLarge, MsgPropertyValueTooLarge)
		}
	case edm.DateTime:
		if p.Value.Int < edm.MinDateTime || p.Value.Int > edm.MaxDateTime {
			t := edm.TimeFromTicks(p.Value.Int)
			return Errorf(CodeOutOfRangeInput, "The '%s' parameter of value '%s' is out of range.", p.Name, t.Format("01/02/2006 15:04:05"))
		}
	case edm.Invalid:
		return NewError(CodeInvalidInput, MsgInvalidInput)
	}
	return nil
}

// Size returns the entity's size as the service computes it (docs/COMPATIBILITY.md §3).
func (e *Entity) Size() int {
	n := 4 + 2*utf16Len(e.PartitionKey) + 2*utf16Len(e.RowKey)
	for _, p := range e.Properties {
		n += 8 + 2*utf16Len(p.Name) + valueSize(p.Value)
	}
	return n
}

// sizeBound is at least Size, from byte lengths alone: a string has no
// more UTF-16 code units than UTF-8 bytes. Validate counts the code units
// (a pass over every string) only when it exceeds the limit.
func (e *Entity) sizeBound() int {
	n := 4 + 2*len(e.PartitionKey) + 2*len(e.RowKey)
	for _, p := range e.Properties {
		n += 8 + 2*len(p.Name)
		if p.Value.Type == edm.String {
			n += 4 + 2*len(p.Value.Str)
		} else {
			n += valueSize(p.Value)
		}
	}
	return n
}

func valueSize(v edm.Value) int {
	switch v.Type {
	case edm.String:
		return 4 + 2*utf16Len(v.Str)
	case edm.Binary:
		return 4 + len(v.Bin)
	case edm.Boolean:
		return 1
	case edm.Int32:
		return 4
	case edm.Guid:
		return 16
	default: // Int64, Double, DateTime
		return 8
	}
}

// Validate checks every limit that applies to an entity about to be written:
// keys, property names and values, the property count, duplicate names and
// the 1 MiB size. It returns an *Error naming the first violation.
func (e *Entity) Validate() error {
	if err := ValidateKey(PropPartitionKey, e.PartitionKey); err != nil {
		return err
	}
	if err := ValidateKey(PropRowKey, e.RowKey); err != nil {
		return err
	}
	if len(e.Properties) > MaxCustomProperties {
		return NewError(CodeTooManyProperties, MsgTooManyProperties)
	}
	// A set finds duplicates among many properties (up to 252: a wide
	// entity); a few are cheaper to compare pairwise.
	var seen map[string]struct{}
	if len(e.Properties) > 16 {
		seen = make(map[string]struct{}, len(e.Properties))
	}
	for i, p := range e.Properties {
		if err := ValidateProperty(p); err != nil {
			return err
		}
		switch p.Name {
		case PropPartitionKey, PropRowKey, PropTimestamp:
			return NewError(CodePropertyNameInvalid, MsgPropertyNameInvalid)
		}
		if seen != nil {
			if _, dup := seen[p.Name]; dup {
				return NewError(CodeDuplicatePropertiesSpecified, MsgDuplicateProperties)
			}
			seen[p.Name] = struct{}{}
			continue
		}
		for _, q := range e.Properties[:i] {
			if q.Name == p.Name {
				return NewError(CodeDuplicatePropertiesSpecified, MsgDuplicateProperties)
			}
		}
	}
	if e.sizeBound() > MaxEntitySize && e.Size() > MaxEntitySize {
		return NewError(CodeEntityTooLarge, MsgEntityTooLarge)
	}
	return nil
}

// CheckLimits checks only the limits that concern the entity as a whole:
// the number of properties and the size. A merge of valid properties into
// a valid stored entity can break these and nothing else (a merge replaces
// a property of the same name, so it adds no duplicates).
func (e *Entity) CheckLimits() error {
	if len(e.Properties) > MaxCustomProperties {
		return NewError(CodeTooManyProperties, MsgTooManyProperties)
	}
	if e.sizeBound() > MaxEntitySize && e.Size() > MaxEntitySize {
		return NewError(CodeEntityTooLarge, MsgEntityTooLarge)
	}
	return nil
}

// String is for debugging.
func (k Key) String() string { return fmt.Sprintf("(%q,%q)", k.PartitionKey, k.RowKey) }
