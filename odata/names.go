package odata

import (
	"unicode"
	"unicode/utf8"
)

// NameRune reports whether r may stand in a property name, first or
// after the first: the C# identifier rules the service applies to
// property names (a letter or '_' first; then also decimal digits,
// combining marks and connector punctuation). The entity model
// (partita.ValidPropertyName) and the $filter lexer share it, so every
// name that can be stored can be filtered on.
func NameRune(r rune, first bool) bool {
	if r == '_' || unicode.IsLetter(r) {
		return true
	}
	return !first && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))
}

// nameLen returns the length in bytes of the property name that starts
// src (0 when none does).
func nameLen(src string) int {
	i := 0
	for i < len(src) {
		if c := src[i]; c < utf8.RuneSelf {
			if !isIdentChar(c) || i == 0 && isDigit(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n <= 1 || !NameRune(r, i == 0) {
			break
		}
		i += n
	}
	return i
}
