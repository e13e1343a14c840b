package odata

import (
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/partita/partita/edm"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tLParen
	tRParen
	tIdent    // text: the name
	tString   // val: the decoded string
	tInt32    // text: digits with optional '-'
	tInt64    // text: digits with optional '-', suffix removed
	tDouble   // text: the number, 'd' suffix removed
	tDateTime // val
	tGuid     // val
	tBinary   // val
	tComma    // only inside a function call's arguments (lexer.args > 0)
)

// token is one lexical token. start and end are byte offsets into the
// filter: the token is src[start:end].
type token struct {
	kind       tokKind
	start, end int
	text       string
	val        edm.Value
}

// lexer produces tokens one at a time. Errors are syntax errors at the byte
// offset where scanning could not continue.
type lexer struct {
	src  string
	pos  int
	tok  token
	args int // function calls being read: a comma is a token inside one
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// next scans the next token into l.tok. It returns the byte offset of a
// lexical error, or -1.
func (l *lexer) next() int {
	src := l.src
	for l.pos < len(src) && isSpace(src[l.pos]) {
		l.pos++
	}
	start := l.pos
	l.tok = token{start: start}
	if start == len(src) {
		l.tok.kind = tEOF
		l.tok.end = start
		return -1
	}
	c := src[start]
	switch {
	case c == '(':
		l.pos++
		l.tok.kind = tLParen
	case c == ')':
		l.pos++
		l.tok.kind = tRParen
	case c == ',' && l.args > 0:
		l.pos++
		l.tok.kind = tComma
	case c == '\'':
		s, end, bad := scanQuoted(src, start)
		if bad >= 0 {
			return bad
		}
		l.pos = end
		l.tok.kind = tString
		l.tok.val = edm.StringValue(s)
	case isDigit(c) || c == '-' && start+1 < len(src) && isDigit(src[start+1]):
		if bad := l.scanNumber(); bad >= 0 {
			return bad
		}
	case isIdentStart(c) || c >= utf8.RuneSelf:
		i := start + nameLen(src[start:])
		if i == start {
			return start // no character that may start a name
		}
		name := src[start:i]
		l.pos = i
		if i < len(src) && src[i] == '\'' {
			if kind := typedPrefix(name); kind != tEOF {
				return l.scanTyped(kind)
			}
		}
		l.tok.kind = tIdent
		l.tok.text = name
	default:
		return start
	}
	l.tok.end = l.pos
	return -1
}

// typedPrefix reports which typed literal a prefix introduces, or tEOF.
func typedPrefix(name string) tokKind {
	switch {
	case strings.EqualFold(name, "datetime"):
		return tDateTime
	case strings.EqualFold(name, "guid"):
		return tGuid
	case strings.EqualFold(name, "X"), strings.EqualFold(name, "binary"):
		return tBinary
	}
	return tEOF
}

// scanQuoted scans a quoted string whose opening quote is src[start]. It returns
// the decoded text and the offset just past the closing quote, or bad >= 0,
// the offset of the error (the end of the input for an unterminated string).
func scanQuoted(src string, start int) (s string, end, bad int) {
	i := start + 1
	var b []byte // only allocated when the text contains a doubled quote
	segStart := i
	for {
		j := strings.IndexByte(src[i:], '\'')
		if j < 0 {
			return "", 0, len(src)
		}
		i += j
		if i+1 < len(src) && src[i+1] == '\'' {
			b = append(b, src[segStart:i+1]...)
			i += 2
			segStart = i
			continue
		}
		if b == nil {
			return src[segStart:i], i + 1, -1
		}
		b = append(b, src[segStart:i]...)
		return string(b), i + 1, -1
	}
}

// scanTyped scans the quoted part of datetime'…', guid'…' or X'…'/binary'…';
// l.pos is at the opening quote.
func (l *lexer) scanTyped(kind tokKind) int {
	s, end, bad := scanQuoted(l.src, l.pos)
	if bad >= 0 {
		return bad
	}
	l.pos = end
	l.tok.kind = kind
	l.tok.end = end
	switch kind {
	case tDateTime:
		ticks, err := edm.ParseDateTime(s)
		if err != nil {
			return end
		}
		l.tok.val = edm.DateTimeValue(ticks)
	case tGuid:
		v, err := edm.GuidValue(s)
		if err != nil {
			return end
		}
		l.tok.val = v
	case tBinary:
		if len(s)%2 != 0 {
			return end
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return end
		}
		if b == nil {
			b = []byte{}
		}
		l.tok.val = edm.BinaryValue(b)
	}
	return -1
}

// scanNumber scans an Int32, Int64 or Double literal at l.pos.
func (l *lexer) scanNumber() int {
	src := l.src
	start := l.pos
	i := start
	if src[i] == '-' {
		i++
	}
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	kind := tInt32
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || !isDigit(src[i]) {
			return i // a digit must follow the point
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		kind = tDouble
	}
	if n := expLen(src, i); n > 0 {
		i += n
		kind = tDouble
	}
	text := src[start:i]
	if i < len(src) {
		switch src[i] {
		case 'd', 'D':
			i++
			kind = tDouble
		case 'l', 'L':
			if kind == tInt32 {
				i++
				kind = tInt64
			}
		}
	}
	l.pos = i
	l.tok.kind = kind
	l.tok.text = text
	return -1
}

// expLen returns the length of an exponent ("e5", "E+10", "e-3") at src[i:],
// or 0.
func expLen(src string, i int) int {
	if i >= len(src) || (src[i] != 'e' && src[i] != 'E') {
		return 0
	}
	j := i + 1
	if j < len(src) && (src[j] == '+' || src[j] == '-') {
		j++
	}
	if j >= len(src) || !isDigit(src[j]) {
		return 0
	}
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	return j - i
}
