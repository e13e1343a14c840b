// Package edm holds the Entity Data Model types of Azure Table storage
// (Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime,
// Edm.Guid, Edm.Binary) and their canonical text forms.
//
// It is a leaf package: it knows nothing about HTTP, JSON documents or
// storage. The JSON and $filter layers build on the text forms defined here.
package edm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Type is an EDM primitive type.
type Type uint8

// The EDM types that Table storage supports. The numeric values are part of
// the on-disk entity encoding: never renumber them.
const (
	Invalid  Type = 0
	String   Type = 1
	Int32    Type = 2
	Int64    Type = 3
	Double   Type = 4
	Boolean  Type = 5
	DateTime Type = 6
	Guid     Type = 7
	Binary   Type = 8
)

var typeNames = [...]string{
	Invalid:  "",
	String:   "Edm.String",
	Int32:    "Edm.Int32",
	Int64:    "Edm.Int64",
	Double:   "Edm.Double",
	Boolean:  "Edm.Boolean",
	DateTime: "Edm.DateTime",
	Guid:     "Edm.Guid",
	Binary:   "Edm.Binary",
}

// String returns the type's OData name, such as "Edm.Int64".
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("edm.Type(%d)", uint8(t))
}

// Valid reports whether t is one of the eight supported types.
func (t Type) Valid() bool { return t >= String && t <= Binary }

// ParseType returns the type named s ("Edm.Int64"). Names are case-sensitive,
// as in OData.
func ParseType(s string) (Type, bool) {
	for t := String; t <= Binary; t++ {
		if typeNames[t] == s {
			return t, true
		}
	}
	return Invalid, false
}

// Value is a typed property value. Which field holds the value depends on
// Type:
//
//	String          Str
//	Guid            Str, canonical lowercase 8-4-4-4-12 form
//	Int32, Int64    Int
//	Boolean         Int, 0 or 1
//	DateTime        Int, ticks of 100 ns since 0001-01-01T00:00:00Z
//	Double          Float
//	Binary          Bin
//
// The zero Value has Type Invalid.
type Value struct {
	Type  Type
	Str   string
	Int   int64
	Float float64
	Bin   []byte
}

// Constructors for each type.
func StringValue(s string) Value      { return Value{Type: String, Str: s} }
func Int32Value(v int32) Value        { return Value{Type: Int32, Int: int64(v)} }
func Int64Value(v int64) Value        { return Value{Type: Int64, Int: v} }
func DoubleValue(v float64) Value     { return Value{Type: Double, Float: v} }
func BinaryValue(b []byte) Value      { return Value{Type: Binary, Bin: b} }
func DateTimeValue(ticks int64) Value { return Value{Type: DateTime, Int: ticks} }
func BoolValue(b bool) Value {
	if b {
		return Value{Type: Boolean, Int: 1}
	}
	return Value{Type: Boolean}
}

// GuidValue parses s as a GUID and returns it in canonical form.
func GuidValue(s string) (Value, error) {
	g, err := ParseGuid(s)
	if err != nil {
		return Value{}, err
	}
	return Value{Type: Guid, Str: g}, nil
}

// Bool returns the value of a Boolean.
func (v Value) Bool() bool { return v.Int != 0 }

// Equal reports whether a and b have the same type and value. Doubles are
// compared bit for bit, so NaN equals NaN here (this is storage identity,
// not filter semantics).
func (a Value) Equal(b Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case String, Guid:
		return a.Str == b.Str
	case Double:
		return math.Float64bits(a.Float) == math.Float64bits(b.Float)
	case Binary:
		return bytes.Equal(a.Bin, b.Bin)
	default:
		return a.Int == b.Int
	}
}

// Compare orders two values of the same type: strings and GUIDs ordinally by
// UTF-16 code unit, binary bytewise then by length, numbers numerically,
// false before true, DateTimes by instant. Doubles follow IEEE order with NaN
// unordered: Compare reports ok=false when either side is NaN or the types
// differ.
func Compare(a, b Value) (c int, ok bool) {
	if a.Type != b.Type {
		return 0, false
	}
	switch a.Type {
	case String, Guid:
		return CompareStrings(a.Str, b.Str), true
	case Binary:
		return bytes.Compare(a.Bin, b.Bin), true
	case Double:
		if math.IsNaN(a.Float) || math.IsNaN(b.Float) {
			return 0, false
		}
		return cmp.Compare(a.Float, b.Float), true
	default:
		return cmp.Compare(a.Int, b.Int), true
	}
}

// CompareStrings compares a and b ordinally by UTF-16 code unit, the way the
// service (a .NET program) orders keys and strings. It differs from Go's
// byte order only between supplementary characters (U+10000 and above) and
// BMP characters from U+E000 to U+FFFF: UTF-16 puts the supplementary
// character first.
func CompareStrings(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	// a[i] != b[i]. With a common prefix, either both are lead bytes or both
	// are continuation bytes of runes with the same lead; utf16Rank moves
	// only lead bytes.
	return cmp.Compare(utf16Rank(a[i]), utf16Rank(b[i]))
}

// utf16Rank maps a UTF-8 byte to a rank whose order equals UTF-16 code unit
// order. Only lead bytes 0xEE and 0xEF (U+E000 to
// U+FFFF) move: above the 4-byte lead bytes 0xF0 to 0xF4, and above every
// other byte so that the mapping stays one-to-one (distinct strings never
// compare equal, even when they are not valid UTF-8).
func utf16Rank(b byte) int {
	switch b {
	case 0xEE:
		return 0x100
	case 0xEF:
		return 0x101
	}
	return int(b)
}

// Ticks conversion. DateTime values are 100 ns ticks since 0001-01-01 UTC,
// .NET's DateTime.Ticks.
const (
	ticksPerSecond = 10_000_000
	// unixEpochTicks is the tick count of 1970-01-01T00:00:00Z.
	unixEpochTicks = 621_355_968_000_000_000
)

// Range of Edm.DateTime values the service accepts.
var (
	MinDateTime = TicksFromTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC))
	MaxDateTime = TicksFromTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC))
)

// TicksFromTime converts t to ticks, truncating below 100 ns.
func TicksFromTime(t time.Time) int64 {
	t = t.UTC()
	sec := t.Unix()
	return unixEpochTicks + sec*ticksPerSecond + int64(t.Nanosecond())/100
}

// TimeFromTicks converts ticks to a UTC time.
func TimeFromTicks(ticks int64) time.Time {
	d := ticks - unixEpochTicks
	sec := d / ticksPerSecond
	rem := d % ticksPerSecond
	if rem < 0 {
		rem += ticksPerSecond
		sec--
	}
	return time.Unix(sec, rem*100).UTC()
}

// FormatDateTime writes ticks as the service does:
// yyyy-MM-ddTHH:mm:ss[.fffffff]Z with trailing zeros of the fraction removed
// and no '.' when the fraction is zero.
func FormatDateTime(ticks int64) string {
	return string(AppendDateTime(nil, ticks))
}

// AppendDateTime appends the FormatDateTime text of ticks to b.
func AppendDateTime(b []byte, ticks int64) []byte {
	t := TimeFromTicks(ticks)
	// Date and Clock, then digits: several times cheaper than AppendFormat,
	// which interprets its layout on every call (this runs for every
	// entity's Timestamp and ETag in a response).
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = append(b,
		byte('0'+year/1000%10), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	frac := ticks % ticksPerSecond
	if frac < 0 {
		frac += ticksPerSecond
	}
	if frac != 0 {
		var d [7]byte
		for i := 6; i >= 0; i-- {
			d[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 7
		for n > 0 && d[n-1] == '0' {
			n--
		}
		b = append(b, '.')
		b = append(b, d[:n]...)
	}
	return append(b, 'Z')
}

// FormatDateTime7 writes ticks with exactly seven fractional digits, the form
// used in error messages ("Time:2024-01-02T03:04:05.1230000Z").
func FormatDateTime7(ticks int64) string {
	t := TimeFromTicks(ticks)
	frac := ticks % ticksPerSecond
	if frac < 0 {
		frac += ticksPerSecond
	}
	return fmt.Sprintf("%s.%07dZ", t.Format("2006-01-02T15:04:05"), frac)
}

// ErrSyntax is returned (wrapped) when a text form does not parse.
var ErrSyntax = errors.New("edm: invalid syntax")

// ErrRange is returned (wrapped) when a value parses but is out of range.
var ErrRange = errors.New("edm: value out of range")

// ParseDateTime parses an ISO 8601 date-time as clients send it: any number
// of fractional digits (kept to 100 ns, the rest dropped), 'Z', an offset
// ±hh:mm, or no zone (UTC). Seconds may be omitted ("2020-01-01T00:00Z").
// The result is checked against MinDateTime..MaxDateTime (ErrRange).
func ParseDateTime(s string) (int64, error) {
	t, err := parseISO(s)
	if err != nil {
		return 0, err
	}
	ticks := t.ticks
	if ticks < MinDateTime || ticks > MaxDateTime {
		return ticks, fmt.Errorf("%w: %q", ErrRange, s)
	}
	return ticks, nil
}

type isoTime struct{ ticks int64 }

func parseISO(s string) (isoTime, error) {
	bad := func() (isoTime, error) { return isoTime{}, fmt.Errorf("%w: datetime %q", ErrSyntax, s) }
	num := func(p string) (int, bool) {
		if len(p) == 0 {
			return 0, false
		}
		n := 0
		for i := 0; i < len(p); i++ {
			c := p[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	if len(s) < 16 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' {
		return bad()
	}
	year, ok1 := num(s[0:4])
	month, ok2 := num(s[5:7])
	day, ok3 := num(s[8:10])
	hour, ok4 := num(s[11:13])
	minute, ok5 := num(s[14:16])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return bad()
	}
	rest := s[16:]
	sec := 0
	var frac int64
	if len(rest) > 0 && rest[0] == ':' {
		if len(rest) < 3 {
			return bad()
		}
		var ok bool
		if sec, ok = num(rest[1:3]); !ok {
			return bad()
		}
		rest = rest[3:]
		if len(rest) > 0 && rest[0] == '.' {
			i := 1
			digits := 0
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				if digits < 7 {
					frac = frac*10 + int64(rest[i]-'0')
					digits++
				}
				i++
			}
			if i == 1 {
				return bad()
			}
			for ; digits < 7; digits++ {
				frac *= 10
			}
			rest = rest[i:]
		}
	}
	offset := 0
	switch {
	case rest == "" || rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return bad()
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return bad()
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return bad()
	}
	if day > daysIn(year, month) {
		return bad()
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	ticks := TicksFromTime(t) + frac - int64(offset)*ticksPerSecond
	return isoTime{ticks: ticks}, nil
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// FormatDouble writes a finite double the way the service does: the shortest
// round-trip form, with ".0" appended when it would otherwise read as an
// integer ("5.0", "0.1", "1E+21"). Non-finite values give "NaN", "Infinity"
// and "-Infinity".
func FormatDouble(f float64) string { return string(AppendDouble(nil, f)) }

// AppendDouble appends the FormatDouble text of f to b.
func AppendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	start := len(b)
	abs := math.Abs(f)
	// .NET switches to exponent notation below a decimal exponent of -4
	// (0.0001 but 1E-05) and from 15 up (1E+15).
	if abs != 0 && (abs < 1e-4 || abs >= 1e15) {
		b = strconv.AppendFloat(b, f, 'E', -1, 64)
	} else {
		b = strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	if bytes.IndexAny(b[start:], ".E") < 0 {
		b = append(b, ".0"...)
	}
	return b
}

// ParseDouble parses the request forms of a double: a JSON number or one of
// "NaN", "Infinity", "-Infinity".
func ParseDouble(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "INF", "+Infinity":
		return math.Inf(1), nil
	case "-Infinity", "-INF":
		return math.Inf(-1), nil
	}
	if s == "" || strings.ContainsAny(s, "xXpP_") || strings.EqualFold(strings.TrimLeft(s, "+-"), "inf") || strings.EqualFold(strings.TrimLeft(s, "+-"), "infinity") || strings.EqualFold(s, "nan") {
		return 0, fmt.Errorf("%w: double %q", ErrSyntax, s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: double %q", ErrSyntax, s)
	}
	return f, nil
}

// ParseGuid parses the 8-4-4-4-12 hex form (optionally in braces) and
// returns it in lowercase canonical form.
func ParseGuid(s string) (string, error) {
	if len(s) == 38 && s[0] == '{' && s[37] == '}' {
		s = s[1:37]
	}
	if len(s) != 36 {
		return "", fmt.Errorf("%w: guid %q", ErrSyntax, s)
	}
	var out [36]byte
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", fmt.Errorf("%w: guid %q", ErrSyntax, s)
			}
			out[i] = '-'
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			out[i] = c
		case c >= 'A' && c <= 'F':
			out[i] = c + ('a' - 'A')
		default:
			return "", fmt.Errorf("%w: guid %q", ErrSyntax, s)
		}
	}
	return string(out[:]), nil
}
