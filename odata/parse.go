package odata

import (
	"strconv"
	"strings"

	"github.com/partita/partita/edm"
)

// MaxDepth is how deeply parentheses and not operators may nest. Deeper
// filters are syntax errors.
const MaxDepth = 1000

// ErrorKind says what is wrong with a filter. odata knows nothing of HTTP
// or of the service's error codes: the HTTP layer maps each kind to the
// status, code and message the service answers with.
type ErrorKind uint8

const (
	// ErrSyntax is a malformed filter or an unrecognized literal. Its
	// Message is the service's, quoting the filter and the position.
	ErrSyntax ErrorKind = iota + 1
	// ErrNullComparison is a comparison with null, which the service
	// refuses as invalid input.
	ErrNullComparison
	// ErrUnsupportedComparison is a comparison of two properties or of two
	// literals, which the service does not implement.
	ErrUnsupportedComparison
	// ErrUnsupportedFunction is a function call (startswith(RowKey,'a')),
	// which the service's parser reads and then does not implement.
	ErrUnsupportedFunction
)

func (k ErrorKind) String() string {
	switch k {
	case ErrSyntax:
		return "syntax"
	case ErrNullComparison:
		return "null-comparison"
	case ErrUnsupportedComparison:
		return "unsupported-comparison"
	case ErrUnsupportedFunction:
		return "unsupported-function"
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// Error is the error Parse returns.
type Error struct {
	Kind    ErrorKind
	Message string
	// Pos is the byte offset in the filter where parsing stopped, for syntax
	// errors and unrecognized literals (where it is the literal's start);
	// -1 for the others.
	Pos int
}

func (e *Error) Error() string { return e.Kind.String() + ": " + e.Message }

// utf16Pos converts a byte offset in s to the UTF-16 code unit offset that
// the service (a .NET program) reports. Invalid UTF-8 bytes count as one unit
// each, as they would after decoding to U+FFFD.
func utf16Pos(s string, pos int) int {
	n := 0
	for _, r := range s[:pos] {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func syntaxError(filter string, pos int) *Error {
	return &Error{
		Kind:    ErrSyntax,
		Message: "Syntax error at position " + strconv.Itoa(utf16Pos(filter, pos)) + " in '" + filter + "'.",
		Pos:     pos,
	}
}

func literalError(filter string, typ edm.Type, tok token) *Error {
	lit := filter[tok.start:tok.end]
	return &Error{
		Kind: ErrSyntax,
		Message: "Unrecognized '" + typ.String() + "' literal '" + lit + "' at '" +
			strconv.Itoa(utf16Pos(filter, tok.start)) + "' in '" + filter + "'.",
		Pos: tok.start,
	}
}

// Parse parses a $filter value. An empty or all-space filter returns
// (nil, nil). Every error it returns is an *Error.
//
// Syntax errors and unrecognized literals stop parsing where they occur. The
// other errors (a comparison with null, of two properties or of two
// literals) are reported only when the whole filter is syntactically valid,
// and then the first one in the text is.
func Parse(filter string) (Expr, error) {
	e, err := parse(filter)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func parse(filter string) (Expr, *Error) {
	if strings.TrimLeft(filter, " \t\n\r\f\v") == "" {
		return nil, nil
	}
	p := &parser{lx: lexer{src: filter}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok().kind != tEOF {
		return nil, p.unexpected()
	}
	if p.deferred != nil {
		return nil, p.deferred
	}
	return e, nil
}

type parser struct {
	lx       lexer
	depth    int
	deferred *Error // first semantic error, reported after a complete parse
}

func (p *parser) tok() *token { return &p.lx.tok }

func (p *parser) advance() *Error {
	if bad := p.lx.next(); bad >= 0 {
		return syntaxError(p.lx.src, bad)
	}
	return nil
}

// unexpected is the error for an unexpected current token: the service
// reports the position just past it.
func (p *parser) unexpected() *Error { return syntaxError(p.lx.src, p.tok().end) }

func (p *parser) isKeyword(kw string) bool {
	t := p.tok()
	return t.kind == tIdent && t.text == kw
}

func (p *parser) parseOr() (Expr, *Error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("or") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &Or{L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseAnd() (Expr, *Error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("and") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		l = &And{L: l, R: r}
	}
	return l, nil
}

func (p *parser) enter() *Error {
	p.depth++
	if p.depth > MaxDepth {
		return p.unexpected()
	}
	return nil
}

func (p *parser) parseUnary() (Expr, *Error) {
	if !p.isKeyword("not") {
		return p.parsePrimary()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	p.depth--
	return &Not{X: x}, nil
}

// operand is one side of a comparison.
type operand struct {
	kind uint8 // opProp, opLit, opNull
	name string
	val  edm.Value
}

const (
	opProp uint8 = iota
	opLit
	opNull
	opFunc // a function call: read, then refused as not implemented
)

func (p *parser) parsePrimary() (Expr, *Error) {
	if p.tok().kind == tLParen {
		if err := p.enter(); err != nil {
			return nil, err
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if p.tok().kind != tRParen {
			return nil, p.unexpected()
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		p.depth--
		return e, nil
	}
	a, err := p.parseOperand()
	if err != nil {
		return nil, err
	}
	op, isOp := p.compareOp()
	if a.kind == opFunc {
		// Alone (startswith(…)) or compared (… eq true): either way the
		// service answers 501 once the whole filter has parsed.
		p.defer_(&Error{Kind: ErrUnsupportedFunction, Message: "a function call", Pos: -1})
		if !isOp {
			return &BoolProp{}, nil // placeholder, as below
		}
	}
	if !isOp {
		switch {
		case a.kind == opProp:
			return &BoolProp{Prop: a.name}, nil
		case a.kind == opLit && a.val.Type == edm.Boolean:
			// A Boolean literal is a condition of its own, as on the
			// service ($filter=false, true and RowKey eq '1').
			return &BoolLit{Value: a.val.Bool()}, nil
		}
		return nil, p.unexpected()
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	b, err := p.parseOperand()
	if err != nil {
		return nil, err
	}
	switch {
	case a.kind == opFunc || b.kind == opFunc:
		p.defer_(&Error{Kind: ErrUnsupportedFunction, Message: "a function call", Pos: -1})
	case a.kind == opProp && b.kind == opLit:
		return &Compare{Op: op, Prop: a.name, Value: b.val}, nil
	case a.kind == opLit && b.kind == opProp:
		return &Compare{Op: op.Flip(), Prop: b.name, Value: a.val}, nil
	case a.kind == opNull || b.kind == opNull:
		p.defer_(&Error{Kind: ErrNullComparison, Message: "a comparison with null", Pos: -1})
	default: // two properties or two literals
		p.defer_(&Error{Kind: ErrUnsupportedComparison, Message: "a comparison of two properties or of two literals", Pos: -1})
	}
	return &BoolProp{}, nil // placeholder; the deferred error is returned
}

// skipCall reads a function call whose name is the current token and
// whose '(' follows it at once, up to its ')': arguments separated by
// commas, each a run of tokens with balanced parentheses (nested calls
// included). What the arguments mean does not matter: any call is refused.
func (p *parser) skipCall() *Error {
	if err := p.advance(); err != nil { // the name
		return err
	}
	if err := p.enter(); err != nil { // the '('
		return err
	}
	p.lx.args++
	depth := p.depth
	argStart, afterComma := true, false // at an argument's start; after a comma
	for {
		if err := p.advance(); err != nil {
			return err
		}
		switch p.tok().kind {
		case tEOF:
			return p.unexpected()
		case tComma:
			if argStart {
				return p.unexpected() // f(,x) or f(x,,y)
			}
			argStart, afterComma = p.depth == depth, p.depth == depth
			continue
		case tLParen:
			if err := p.enter(); err != nil {
				return err
			}
		case tRParen:
			if p.depth == depth {
				if afterComma && argStart {
					return p.unexpected() // f(x,)
				}
				p.lx.args--
				p.depth--
				return p.advance()
			}
			p.depth--
		}
		argStart = false
	}
}

func (p *parser) defer_(e *Error) {
	if p.deferred == nil {
		p.deferred = e
	}
}

// compareOp reports whether the current token is a comparison operator.
func (p *parser) compareOp() (Op, bool) {
	t := p.tok()
	if t.kind != tIdent || len(t.text) != 2 {
		return 0, false
	}
	for op, name := range opNames {
		if t.text == name {
			return Op(op), true
		}
	}
	return 0, false
}

// parseOperand parses a property name or a literal and advances past it.
func (p *parser) parseOperand() (operand, *Error) {
	t := p.tok()
	var o operand
	switch t.kind {
	case tIdent:
		switch {
		case t.text == "true":
			o = operand{kind: opLit, val: edm.BoolValue(true)}
		case t.text == "false":
			o = operand{kind: opLit, val: edm.BoolValue(false)}
		case t.text == "null":
			o = operand{kind: opNull}
		case t.text == "not":
			// Reserved: not cannot be the second operand of a comparison
			// (as a first operand it is the not operator).
			return o, p.unexpected()
		default:
			if t.end < len(p.lx.src) && p.lx.src[t.end] == '(' {
				return operand{kind: opFunc}, p.skipCall()
			}
			o = operand{kind: opProp, name: t.text}
		}
	case tString, tDateTime, tGuid, tBinary:
		o = operand{kind: opLit, val: t.val}
	case tInt32:
		n, err := strconv.ParseInt(t.text, 10, 32)
		if err != nil {
			return o, literalError(p.lx.src, edm.Int32, *t)
		}
		o = operand{kind: opLit, val: edm.Int32Value(int32(n))}
	case tInt64:
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return o, literalError(p.lx.src, edm.Int64, *t)
		}
		o = operand{kind: opLit, val: edm.Int64Value(n)}
	case tDouble:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return o, literalError(p.lx.src, edm.Double, *t)
		}
		o = operand{kind: opLit, val: edm.DoubleValue(f)}
	default:
		return o, p.unexpected()
	}
	return o, p.advance()
}
