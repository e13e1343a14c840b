package transfer

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/partita/partita/internal/wire"
)

var errSplit = errors.New("not a query response object")

// splitValues returns the elements of the top-level "value" array of a
// query response body, each an object's bytes (aliasing body). It is a byte
// scanner, several times cheaper than encoding/json on a 1 MiB page; what
// it cannot read it hands to encoding/json, so its result is never less
// strict: each element is then decoded by wire.DecodeEntity, which checks
// the JSON inside.
func splitValues(body []byte) ([][]byte, error) {
	if vs, ok := scanValues(body); ok {
		return vs, nil
	}
	var v struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	out := make([][]byte, len(v.Value))
	for i, r := range v.Value {
		out[i] = r
	}
	return out, nil
}

// scanValues is the fast path of splitValues; ok is false when the body is
// not what it expects.
func scanValues(b []byte) (vals [][]byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i++
	found := false
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' && !found {
			return nil, false
		}
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		end, ok := skipString(b, i)
		if !ok {
			return nil, false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		if string(key) != "value" && bytes.EqualFold(key, []byte("value")) {
			return nil, false // encoding/json would take it for "value"
		}
		if string(key) == "value" {
			if found || i >= len(b) || b[i] != '[' {
				return nil, false
			}
			found = true
			i++
			vals = make([][]byte, 0, 1000)
			for {
				i = skipSpace(b, i)
				if i < len(b) && b[i] == ']' && len(vals) == 0 {
					i++
					break
				}
				if i >= len(b) || b[i] != '{' {
					return nil, false
				}
				end, ok := skipValue(b, i)
				if !ok {
					return nil, false
				}
				vals = append(vals, b[i:end])
				i = skipSpace(b, end)
				if i < len(b) && b[i] == ',' {
					i++
					continue
				}
				if i < len(b) && b[i] == ']' {
					i++
					break
				}
				return nil, false
			}
		} else {
			if bytes.IndexByte(key, '\\') >= 0 {
				return nil, false // an escaped name might spell "value"
			}
			end, ok := skipValue(b, i)
			if !ok {
				return nil, false
			}
			i = end
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			if skipSpace(b, i+1) != len(b) || !found {
				return nil, false
			}
			return vals, true
		}
		return nil, false
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
// It skips words that hold no '"', '\\' or control character
// (wire.PlainPrefix; bytes.IndexAny was a fifth of an export's CPU).
func skipString(b []byte, i int) (int, bool) {
	i++
	i += wire.PlainPrefix(b[i:])
	for i < len(b) {
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			i += 2 // a backslash and the character it escapes
			if i < len(b) {
				i += wire.PlainPrefix(b[i:])
			}
		default:
			// A plain byte of the word PlainPrefix stopped at, or a
			// control character (whose string the decoder refuses),
			// after which words again.
			i++
			if b[i-1] < 0x20 && i < len(b) {
				i += wire.PlainPrefix(b[i:])
			}
		}
	}
	return 0, false
}

// skipValue returns the index after the JSON value at b[i]: strings are
// skipped whole, objects and arrays by bracket depth, scalars up to the
// next delimiter. It checks structure, not the scalars' spelling.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var st [16]byte
		stack := st[:0]
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
					return 0, false
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
			j++
		}
		if j == i {
			return 0, false
		}
		return j, true
	}
}
