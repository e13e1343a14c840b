// Package odata parses, prints, evaluates and plans the $filter language of
// the Azure Table service (docs/COMPATIBILITY.md §7, §12).
//
// Parse turns filter text into an Expr tree. Eval evaluates an Expr against
// one entity with the service's type-mismatch rules. PlanQuery derives, from
// the PartitionKey and RowKey conditions of an Expr, the key ranges of the
// clustered (PartitionKey, RowKey) index that a scan has to visit.
package odata

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/partita/partita/edm"
)

// Expr is a parsed $filter. Implementations: *Compare, *And, *Or, *Not,
// *BoolProp, *BoolLit.
type Expr interface {
	// String returns canonical filter text that parses back to an equal
	// tree: every operand of and/or/not is parenthesized.
	String() string
	isExpr()
}

// Op is a comparison operator.
type Op uint8

// The comparison operators.
const (
	Eq Op = iota
	Ne
	Gt
	Ge
	Lt
	Le
)

var opNames = [...]string{Eq: "eq", Ne: "ne", Gt: "gt", Ge: "ge", Lt: "lt", Le: "le"}

// String returns the operator's keyword ("eq").
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Flip returns the operator with its operands swapped: a lt b is b gt a.
func (o Op) Flip() Op {
	switch o {
	case Gt:
		return Lt
	case Ge:
		return Le
	case Lt:
		return Gt
	case Le:
		return Ge
	}
	return o
}

// Negate returns the operator testing the opposite condition on totally
// ordered values: not (a lt b) is a ge b.
func (o Op) Negate() Op {
	switch o {
	case Eq:
		return Ne
	case Ne:
		return Eq
	case Gt:
		return Le
	case Ge:
		return Lt
	case Lt:
		return Ge
	case Le:
		return Gt
	}
	return o
}

// Compare compares a property with a literal: Prop Op Value. Input written
// literal-first ("5 lt Age") is normalized by flipping the operator
// ("Age gt 5").
type Compare struct {
	Op    Op
	Prop  string
	Value edm.Value
}

// And is L and R.
type And struct{ L, R Expr }

// Or is L or R.
type Or struct{ L, R Expr }

// Not is not X.
type Not struct{ X Expr }

// BoolProp is a bare property name used as a condition. It is true only if
// the property exists, is Edm.Boolean and is true.
type BoolProp struct{ Prop string }

// BoolLit is the literal true or false used as a condition ($filter=false,
// true and RowKey eq '1'): a constant.
type BoolLit struct{ Value bool }

func (*Compare) isExpr()  {}
func (*BoolLit) isExpr()  {}
func (*And) isExpr()      {}
func (*Or) isExpr()       {}
func (*Not) isExpr()      {}
func (*BoolProp) isExpr() {}

func (e *Compare) String() string  { return string(appendExpr(nil, e)) }
func (e *And) String() string      { return string(appendExpr(nil, e)) }
func (e *Or) String() string       { return string(appendExpr(nil, e)) }
func (e *Not) String() string      { return string(appendExpr(nil, e)) }
func (e *BoolProp) String() string { return e.Prop }
func (e *BoolLit) String() string  { return string(appendExpr(nil, e)) }

func appendExpr(b []byte, e Expr) []byte {
	switch e := e.(type) {
	case *Compare:
		b = append(b, e.Prop...)
		b = append(b, ' ')
		b = append(b, e.Op.String()...)
		b = append(b, ' ')
		return AppendLiteral(b, e.Value)
	case *And:
		return appendBinary(b, e.L, " and ", e.R)
	case *Or:
		return appendBinary(b, e.L, " or ", e.R)
	case *Not:
		b = append(b, "not ("...)
		b = appendExpr(b, e.X)
		return append(b, ')')
	case *BoolProp:
		return append(b, e.Prop...)
	case *BoolLit:
		return AppendLiteral(b, edm.BoolValue(e.Value))
	case nil:
		return b
	}
	panic("odata: unknown Expr type")
}

func appendBinary(b []byte, l Expr, op string, r Expr) []byte {
	b = append(b, '(')
	b = appendExpr(b, l)
	b = append(b, ')')
	b = append(b, op...)
	b = append(b, '(')
	b = appendExpr(b, r)
	return append(b, ')')
}

// FormatLiteral returns v as a $filter literal: 'text' with quotes doubled,
// 123 (Int32), 123L (Int64), 1.5 or 5.0 (Double, in a form that reads back
// as a double with the same value), true/false,
// datetime'2020-01-01T00:00:00Z', guid'…', X'0aff'. Non-finite doubles have
// no literal form; they are written as NaN, Infinity and -Infinity, which do
// not parse.
func FormatLiteral(v edm.Value) string { return string(AppendLiteral(nil, v)) }

// AppendLiteral appends the FormatLiteral text of v to b.
func AppendLiteral(b []byte, v edm.Value) []byte {
	switch v.Type {
	case edm.String:
		return appendQuoted(b, v.Str)
	case edm.Int32:
		return strconv.AppendInt(b, v.Int, 10)
	case edm.Int64:
		b = strconv.AppendInt(b, v.Int, 10)
		return append(b, 'L')
	case edm.Double:
		// edm.AppendDouble always writes a '.' or an exponent, both of
		// which make the lexer read a double, and the shortest round-trip
		// digits.
		return edm.AppendDouble(b, v.Float)
	case edm.Boolean:
		if v.Bool() {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case edm.DateTime:
		b = append(b, "datetime'"...)
		b = edm.AppendDateTime(b, v.Int)
		return append(b, '\'')
	case edm.Guid:
		b = append(b, "guid'"...)
		b = append(b, v.Str...)
		return append(b, '\'')
	case edm.Binary:
		b = append(b, "X'"...)
		b = hex.AppendEncode(b, v.Bin)
		return append(b, '\'')
	}
	return append(b, "null"...)
}

// appendQuoted appends s as a quoted string literal, doubling quotes.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b = append(b, s[:i+1]...)
		b = append(b, '\'')
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '\'')
}

// Equal reports whether a and b are the same tree. Literal values are
// compared with edm.Value.Equal (doubles bit for bit).
func Equal(a, b Expr) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case *Compare:
		b, ok := b.(*Compare)
		return ok && a.Op == b.Op && a.Prop == b.Prop && a.Value.Equal(b.Value)
	case *And:
		b, ok := b.(*And)
		return ok && Equal(a.L, b.L) && Equal(a.R, b.R)
	case *Or:
		b, ok := b.(*Or)
		return ok && Equal(a.L, b.L) && Equal(a.R, b.R)
	case *Not:
		b, ok := b.(*Not)
		return ok && Equal(a.X, b.X)
	case *BoolProp:
		b, ok := b.(*BoolProp)
		return ok && a.Prop == b.Prop
	case *BoolLit:
		b, ok := b.(*BoolLit)
		return ok && a.Value == b.Value
	}
	return false
}
