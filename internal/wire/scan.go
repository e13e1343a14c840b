package wire

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// errJSON is any syntax error in an entity body.
var errJSON = errors.New("wire: malformed JSON")

// errNested reports an object or array as a property value.
var errNested = errors.New("wire: nested JSON value")

// scanObject tokenizes a flat JSON object: string keys, values that are
// strings, numbers, true, false or null. It calls fn for each member in
// order; a string value is a string, a number a json.Number, true/false a
// bool, null nil — the same tokens encoding/json's Decoder.Token gives.
// Objects and arrays as values give errNested. It replaces the Decoder on
// the insert path: it does one pass with no reflection and allocates only
// the strings it returns. With share, a string value without escapes is
// not copied but aliases b (member names are always copies): b must then
// stay unmodified while the values are in use.
func scanObject(b []byte, share bool, fn func(name string, v any) error) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errJSON
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipWS(b, i+1) != len(b) {
			return errJSON
		}
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errJSON
		}
		name, n, err := scanString(b, i, false)
		if err != nil {
			return err
		}
		i = skipWS(b, n)
		if i >= len(b) || b[i] != ':' {
			return errJSON
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return errJSON
		}
		var v any
		switch c := b[i]; {
		case c == '"':
			v, i, err = scanString(b, i, share)
			if err != nil {
				return err
			}
		case c == '{' || c == '[':
			return errNested
		case c == 't':
			if !hasLit(b, i, "true") {
				return errJSON
			}
			v, i = true, i+4
		case c == 'f':
			if !hasLit(b, i, "false") {
				return errJSON
			}
			v, i = false, i+5
		case c == 'n':
			if !hasLit(b, i, "null") {
				return errJSON
			}
			v, i = nil, i+4
		case c == '-' || (c >= '0' && c <= '9'):
			end, ok := scanNumber(b, i)
			if !ok {
				return errJSON
			}
			v, i = json.Number(b[i:end]), end
		default:
			return errJSON
		}
		if err := fn(name, v); err != nil {
			return err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return errJSON
		}
		if b[i] == '}' {
			if skipWS(b, i+1) != len(b) {
				return errJSON
			}
			return nil
		}
		if b[i] != ',' {
			return errJSON
		}
		i = skipWS(b, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanNumber returns the end of the JSON number starting at i.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	return i, true
}

// ScanString decodes the JSON string starting at b[i] == '"' and returns
// it and the index after its closing quote; b must be valid UTF-8. An
// unpaired surrogate escape is an error (scanString).
func ScanString(b []byte, i int) (string, int, error) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, errJSON
	}
	return scanString(b, i, false)
}

// scanString decodes the JSON string starting at b[i] == '"' and returns
// it and the index after its closing quote. An unpaired surrogate escape
// ("\ud800" alone) is errJSON: UTF-8 cannot hold it, and replacing it with
// U+FFFD (as encoding/json does) would make distinct keys collide. With
// share, a string without escapes aliases b instead of being copied.
func scanString(b []byte, i int, share bool) (string, int, error) {
	i++
	start := i
	// Fast path: no escapes, valid ASCII or UTF-8 (the body was checked).
	// Plain bytes go a word at a time (a 1 KiB payload is the bulk of an
	// insert), up to the word that holds the string's end, an escape or a
	// byte that needs one, which the loop then reaches byte by byte.
	i += PlainPrefix(b[i:])
	for i < len(b) {
		c := b[i]
		if c == '"' {
			if share && i > start {
				return unsafe.String(&b[start], i-start), i + 1, nil
			}
			return string(b[start:i]), i + 1, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", 0, errJSON
		}
		i++
	}
	out := make([]byte, 0, i-start+16)
	out = append(out, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return string(out), i + 1, nil
		case c < 0x20:
			return "", 0, errJSON
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return "", 0, errJSON
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
			i += 2
		case 'b':
			out, i = append(out, '\b'), i+2
		case 'f':
			out, i = append(out, '\f'), i+2
		case 'n':
			out, i = append(out, '\n'), i+2
		case 'r':
			out, i = append(out, '\r'), i+2
		case 't':
			out, i = append(out, '\t'), i+2
		case 'u':
			r, ok := hex4(b, i+2)
			if !ok {
				return "", 0, errJSON
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if x, ok := hex4(b, i+2); ok {
						r2 = x
					}
				}
				dec := utf16.DecodeRune(r, r2)
				if dec == utf8.RuneError {
					return "", 0, errJSON
				}
				r = dec
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", 0, errJSON
		}
	}
	return "", 0, errJSON
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}
