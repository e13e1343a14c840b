package odata

import (
	"unicode"
	"unicode/utf8"
)

// NameRune reports whether r may stand in a property name, first or
// after the first: the C# identifier rules the service applies to
// property names (C# specification, "Identifiers": a letter, Lu Ll Lt Lm
// Lo Nl, or '_' first; then also decimal digits Nd, connectors Pc,
// combining marks Mn Mc and formatting characters Cf). The entity model
// (partita.ValidPropertyName) and the $filter lexer share it, so every
// name that can be stored can be filtered on.
func NameRune(r rune, first bool) bool {
	if r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) {
		return true
	}
	return !first && (unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc, unicode.Cf))
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
