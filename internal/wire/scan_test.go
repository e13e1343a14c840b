package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceScan tokenizes a flat object with encoding/json's Decoder, the
// tokenizer scanObject replaced; it is the oracle of FuzzScanObject. Unlike
// the Decoder (which turns them into U+FFFD), it refuses unpaired surrogate
// escapes, as scanObject must.
func referenceScan(b []byte) ([]string, error) {
	if hasLoneSurrogate(b) {
		return nil, errJSON
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errJSON
	}
	var out []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, errJSON
		}
		name, ok := k.(string)
		if !ok {
			return nil, errJSON
		}
		v, err := d.Token()
		if err != nil {
			return nil, errJSON
		}
		if _, ok := v.(json.Delim); ok {
			return nil, errNested
		}
		out = append(out, fmt.Sprintf("%q=%T:%v", name, v, v))
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim('}') {
		return nil, errJSON
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errJSON
	}
	return out, nil
}

// hasLoneSurrogate reports whether b holds a \u escape of a surrogate
// that is not a high surrogate directly followed by an escaped low one.
// (Backslashes occur in valid JSON only inside strings.)
func hasLoneSurrogate(b []byte) bool {
	esc := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		if _, err := fmt.Sscanf(string(b[i+2:i+6]), "%04x", &r); err != nil {
			return 0, false
		}
		return r, true
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := esc(i)
		switch {
		case !ok:
			i++ // a two-character escape, or malformed (the Decoder refuses it)
		case r >= 0xD800 && r < 0xDC00:
			if r2, ok := esc(i + 6); ok && r2 >= 0xDC00 && r2 < 0xE000 {
				i += 11
				continue
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		default:
			i += 5
		}
	}
	return false
}

func scanAll(b []byte) ([]string, error) { return scanAllShare(b, false) }

func scanAllShare(b []byte, share bool) ([]string, error) {
	var out []string
	err := scanObject(b, share, func(name string, v any) error {
		out = append(out, fmt.Sprintf("%q=%T:%v", name, v, v))
		return nil
	})
	return out, err
}

func TestScanObject(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { "a" : 1 , "b":"x\ty\u00e9\ud83d\ude00" , "c":true,"d":false,"e":null,"f":-0.5e+3}  `,
		`{"a":"\ud800"}`, `{"a":"d\ud800"}`, `{"a":"\udc00x"}`, `{"\ud800":1}`, `{"a":"\ud800\u0041"}`, `{"a":"\\ud800"}`, `{"a":1,}`, `{"a"}`, `{"a":01}`, `{"a":1.}`, `{"a":[1]}`, `{"a":{}}`, `{"a":tru}`,
		`{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":1}x`, `[]`, ``, `{"a":"\u12"}`, `{"a":"\/"}`, `{"a":-}`,
	} {
		want, werr := referenceScan([]byte(in))
		for _, share := range []bool{false, true} {
			got, gerr := scanAllShare([]byte(in), share)
			if (gerr == nil) != (werr == nil) || (gerr == nil && fmt.Sprint(got) != fmt.Sprint(want)) {
				t.Errorf("%s (share %v): scan = %v, %v; reference = %v, %v", in, share, got, gerr, want, werr)
			}
		}
	}
}

// FuzzScanObject: scanObject accepts exactly what encoding/json accepts as
// a flat object, with the same members, for every valid UTF-8 input (the
// decoder rejects invalid UTF-8 before scanning).
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"\u00e9","c":[1]}`, `{"x":-1.5E-7,"y":null}`, `{"\ud83d\ude00":"\ud800x"}`,
		`{"long":"0123456789abcdefghijklmnop\"qrstuvwxyz","k":"abcdefgh"}`, "{\"ctl\":\"0123456789abcdef\x01\"}", `{"abcdefghijklmnopq":"abcdefghijklmnopé\\x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		want, werr := referenceScan(b)
		for _, share := range []bool{false, true} {
			got, gerr := scanAllShare(b, share)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("%q (share %v): scan err %v, reference err %v", b, share, gerr, werr)
			}
			if gerr == nil && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%q (share %v):\n scan %v\n  ref %v", b, share, got, want)
			}
		}
	})
}

// needsEscape is the byte-by-byte definition escapeBits tests a word of.
func needsEscape(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }

// checkPlainPrefix checks PlainPrefix(s) against needsEscape: whole words,
// all plain, and the word after them (if whole) holds a byte to escape.
func checkPlainPrefix(t *testing.T, s []byte) {
	t.Helper()
	n := PlainPrefix(s)
	if n2 := PlainPrefix(string(s)); n2 != n {
		t.Fatalf("PlainPrefix of %q: %d as []byte, %d as string", s, n, n2)
	}
	if n%8 != 0 || n < 0 || n > len(s) {
		t.Fatalf("PlainPrefix(%q) = %d: not a whole number of words in the string", s, n)
	}
	for i := 0; i < n; i++ {
		if needsEscape(s[i]) {
			t.Fatalf("PlainPrefix(%q) = %d passes byte %d (%#x), which needs an escape", s, n, i, s[i])
		}
	}
	if n+8 <= len(s) && !hasEscapeByte(s[n:n+8]) {
		t.Fatalf("PlainPrefix(%q) = %d stops before the plain word %q", s, n, s[n:n+8])
	}
}

func hasEscapeByte(w []byte) bool {
	for _, c := range w {
		if needsEscape(c) {
			return true
		}
	}
	return false
}

// TestPlainPrefix puts each byte that needs an escape, and its neighbours
// in value, at every position of strings long enough for the four-word
// blocks, among ASCII and UTF-8 bytes.
func TestPlainPrefix(t *testing.T) {
	fill := []byte(strings.Repeat("abcé€\x7f\x80\xff ~!", 12))
	for _, c := range []byte{0, 1, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7f, 0x80, 0x9f, 0xa0, 0xdc, 0xff} {
		for _, size := range []int{0, 7, 8, 9, 39, 40, 41, 72, 100} {
			for at := 0; at < size; at++ {
				s := append([]byte(nil), fill[:size]...)
				s[at] = c
				checkPlainPrefix(t, s)
			}
		}
	}
}

func FuzzPlainPrefix(f *testing.F) {
	f.Add([]byte(strings.Repeat("x", 70) + `"` + "y"))
	f.Add([]byte("\xff\xfe\x80\x22\x5c\x1f"))
	f.Fuzz(func(t *testing.T, s []byte) { checkPlainPrefix(t, s) })
}
