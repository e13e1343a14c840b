package transfer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzKeyCmp checks keyCmp against its two oracles, Go's string order
// and UTF-16 code unit order (utf16.Encode), on any two valid keys, and
// keyAfter against them: it takes a step that either order takes.
func FuzzKeyCmp(f *testing.F) {
	f.Add("p\uE000", "p\U0001F600")
	f.Add("a", "ab")
	f.Add("é", "\u07ff")
	f.Add("", "\U0010FFFF")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Skip() // keys come out of JSON decoding: valid UTF-8
		}
		c8, c16 := keyCmp(a, b)
		if want := strings.Compare(a, b); c8 != want {
			t.Fatalf("keyCmp(%q, %q) byte order %d, want %d", a, b, c8, want)
		}
		want16 := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if c16 != want16 {
			t.Fatalf("keyCmp(%q, %q) UTF-16 order %d, want %d", a, b, c16, want16)
		}
		if got, want := keyAfter("p", a, "p", b), c8 < 0 || c16 < 0; got != want {
			t.Fatalf("keyAfter(%q → %q) = %v, want %v", a, b, got, want)
		}
	})
}
