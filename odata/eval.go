package odata

import (
	"bytes"
	"math"

	"github.com/partita/partita/edm"
)

// Getter returns the value of a property of an entity, including the system
// properties PartitionKey, RowKey (edm.String) and Timestamp (edm.DateTime).
// ok=false means the entity does not have the property.
type Getter func(name string) (v edm.Value, ok bool)

// Eval reports whether the entity whose properties get returns matches e. A
// nil e matches everything. The rules are those of the service
// (docs/COMPATIBILITY.md §7):
//
//   - a comparison with a missing property is false, ne included;
//   - values of the same type compare in their natural order: strings (and
//     GUIDs, in canonical form) by UTF-16 code unit, binary bytewise then by
//     length, DateTimes as instants, false before true, doubles per IEEE
//     (with NaN, ne is true and every other operator false);
//   - an Int64 property compares numerically with an Int32 literal, and a
//     Double property with an Int32 or Int64 literal (converted to float64);
//   - any other type mismatch acts as property < literal: eq, gt and ge are
//     false, ne, lt and le true;
//   - not negates; a bare property is true only if it is a Boolean true;
//   - a bare true or false is that constant.
//
// Eval does not allocate.
func Eval(e Expr, get Getter) bool {
	switch e := e.(type) {
	case nil:
		return true
	case *Compare:
		return evalCompare(e, get)
	case *And:
		return Eval(e.L, get) && Eval(e.R, get)
	case *Or:
		return Eval(e.L, get) || Eval(e.R, get)
	case *Not:
		return !Eval(e.X, get)
	case *BoolProp:
		v, ok := get(e.Prop)
		return ok && v.Type == edm.Boolean && v.Bool()
	case *BoolLit:
		return e.Value
	}
	panic("odata: unknown Expr type")
}

func evalCompare(e *Compare, get Getter) bool {
	v, ok := get(e.Prop)
	if !ok {
		return false
	}
	lit := &e.Value
	var c int
	switch {
	case v.Type == lit.Type:
		switch v.Type {
		case edm.String, edm.Guid:
			c = edm.CompareStrings(v.Str, lit.Str)
		case edm.Binary:
			c = bytes.Compare(v.Bin, lit.Bin)
		case edm.Double:
			return compareFloats(e.Op, v.Float, lit.Float)
		case edm.Boolean:
			c = cmpBool(v.Bool(), lit.Bool())
		default:
			c = cmpInt(v.Int, lit.Int)
		}
	case v.Type == edm.Int64 && lit.Type == edm.Int32:
		c = cmpInt(v.Int, lit.Int)
	case v.Type == edm.Double && (lit.Type == edm.Int32 || lit.Type == edm.Int64):
		return compareFloats(e.Op, v.Float, float64(lit.Int))
	default:
		c = -1 // type mismatch: property < literal
	}
	return opHolds(e.Op, c)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

func compareFloats(op Op, a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return op == Ne
	}
	switch op {
	case Eq:
		return a == b
	case Ne:
		return a != b
	case Gt:
		return a > b
	case Ge:
		return a >= b
	case Lt:
		return a < b
	case Le:
		return a <= b
	}
	return false
}

// opHolds reports whether op holds between two values that compare as c.
func opHolds(op Op, c int) bool {
	switch op {
	case Eq:
		return c == 0
	case Ne:
		return c != 0
	case Gt:
		return c > 0
	case Ge:
		return c >= 0
	case Lt:
		return c < 0
	case Le:
		return c <= 0
	}
	return false
}
