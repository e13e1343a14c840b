package odata

import (
	"fmt"
	"math"
	"testing"

	"github.com/partita/partita/edm"
)

// The results of the six operators in the order eq, ne, gt, ge, lt, le.
type results [6]bool

var (
	whenLess    = results{false, true, false, false, true, true}
	whenEqual   = results{true, false, false, true, false, true}
	whenGreater = results{false, true, true, true, false, false}
	// A type mismatch acts as property < literal (docs/COMPATIBILITY.md §7 rule 3).
	whenMismatch = whenLess
	allFalse     = results{}
	// NaN: only ne holds.
	whenUnordered = results{false, true, false, false, false, false}
)

var allOps = []Op{Eq, Ne, Gt, Ge, Lt, Le}

func mustGuid(s string) edm.Value {
	v, err := edm.GuidValue(s)
	if err != nil {
		panic(err)
	}
	return v
}

func mustTicks(s string) int64 {
	t, err := edm.ParseDateTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

// matrixProps holds one property value of each type.
var matrixProps = map[edm.Type]edm.Value{
	edm.String:   edm.StringValue("m"),
	edm.Int32:    edm.Int32Value(10),
	edm.Int64:    edm.Int64Value(10),
	edm.Double:   edm.DoubleValue(10),
	edm.Boolean:  edm.BoolValue(true),
	edm.DateTime: edm.DateTimeValue(mustTicks("2020-06-01T00:00:00Z")),
	edm.Guid:     mustGuid("22222222-2222-2222-2222-222222222222"),
	edm.Binary:   edm.BinaryValue([]byte{0x10, 0x00}),
}

// matrixLiterals holds, for each type, literals that sort below, equal to
// and above the property of the same type (and, numerically, the numeric
// properties). Boolean has no literal above true.
var matrixLiterals = map[edm.Type][3]string{
	edm.String:   {"'a'", "'m'", "'z'"},
	edm.Int32:    {"5", "10", "20"},
	edm.Int64:    {"5L", "10L", "20L"},
	edm.Double:   {"5.0", "10.0", "20.5"},
	edm.Boolean:  {"false", "true", ""},
	edm.DateTime: {"datetime'2020-05-31T23:59:59.9999999Z'", "datetime'2020-06-01T00:00:00Z'", "datetime'2020-06-01T00:00:00.0000001Z'"},
	edm.Guid:     {"guid'11111111-1111-1111-1111-111111111111'", "guid'22222222-2222-2222-2222-222222222222'", "guid'33333333-3333-3333-3333-333333333333'"},
	edm.Binary:   {"X'10'", "X'1000'", "X'1001'"},
}

// comparable lists the property/literal type pairs that compare by value;
// every other pair is a mismatch.
var comparablePairs = map[[2]edm.Type]bool{
	{edm.Int64, edm.Int32}:  true,
	{edm.Double, edm.Int32}: true,
	{edm.Double, edm.Int64}: true,
}

func evalOne(t *testing.T, filter string, props map[string]edm.Value) bool {
	t.Helper()
	e, err := Parse(filter)
	if err != nil {
		t.Fatalf("Parse(%q): %v", filter, err)
	}
	return Eval(e, func(name string) (edm.Value, bool) {
		v, ok := props[name]
		return v, ok
	})
}

func checkOps(t *testing.T, prop, lit string, props map[string]edm.Value, want results) {
	t.Helper()
	for i, op := range allOps {
		f := fmt.Sprintf("%s %s %s", prop, op, lit)
		if got := evalOne(t, f, props); got != want[i] {
			t.Errorf("%s with %s=%v: got %v, want %v", f, prop, FormatLiteral(props[prop]), got, want[i])
		}
		// Written literal first, the same comparison.
		f = fmt.Sprintf("%s %s %s", lit, op.Flip(), prop)
		if got := evalOne(t, f, props); got != want[i] {
			t.Errorf("%s with %s=%v: got %v, want %v", f, prop, FormatLiteral(props[prop]), got, want[i])
		}
	}
}

func TestEvalTypeMatrix(t *testing.T) {
	for pt, pv := range matrixProps {
		for lt, lits := range matrixLiterals {
			t.Run(pt.String()+"/"+lt.String(), func(t *testing.T) {
				props := map[string]edm.Value{"P": pv}
				for i, lit := range lits {
					if lit == "" {
						continue
					}
					want := whenMismatch
					if pt == lt || comparablePairs[[2]edm.Type{pt, lt}] {
						// The property sorts above the first literal, equal to
						// the second and below the third.
						want = [3]results{whenGreater, whenEqual, whenLess}[i]
					}
					checkOps(t, "P", lit, props, want)
				}
			})
		}
	}
}

func TestEvalSpecialCases(t *testing.T) {
	cases := []struct {
		name string
		prop edm.Value
		lit  string
		want results
	}{
		// Mismatches that numeric comparison would get wrong.
		{"int32 vs larger int64", edm.Int32Value(100), "5L", whenMismatch},
		{"int32 vs double", edm.Int32Value(100), "5.0", whenMismatch},
		{"int64 vs double", edm.Int64Value(100), "5.0", whenMismatch},
		{"string vs number", edm.StringValue("5"), "5", whenMismatch},
		{"number vs string", edm.Int32Value(5), "'5'", whenMismatch},
		{"bool vs number", edm.BoolValue(true), "1", whenMismatch},
		{"datetime vs guid", edm.DateTimeValue(mustTicks("2020-01-01T00:00:00Z")), "guid'00000000-0000-0000-0000-000000000000'", whenMismatch},
		{"guid vs string", mustGuid("22222222-2222-2222-2222-222222222222"), "'22222222-2222-2222-2222-222222222222'", whenMismatch},
		{"binary vs string", edm.BinaryValue([]byte("a")), "'a'", whenMismatch},
		// Widening.
		{"int64 vs int32, beyond int32", edm.Int64Value(5_000_000_000), "2147483647", whenGreater},
		{"int64 vs negative int32", edm.Int64Value(-5), "-5", whenEqual},
		{"double vs int64", edm.DoubleValue(5e9), "5000000000L", whenEqual},
		{"double fraction vs int32", edm.DoubleValue(4.5), "5", whenLess},
		// NaN, infinities, signed zero.
		{"NaN vs double", edm.DoubleValue(math.NaN()), "1.0", whenUnordered},
		{"NaN vs int32", edm.DoubleValue(math.NaN()), "1", whenUnordered},
		{"NaN vs int64", edm.DoubleValue(math.NaN()), "1L", whenUnordered},
		{"+Inf vs double", edm.DoubleValue(math.Inf(1)), "1.7976931348623157e308", whenGreater},
		{"-Inf vs int32", edm.DoubleValue(math.Inf(-1)), "-2147483648", whenLess},
		{"-0 vs 0", edm.DoubleValue(math.Copysign(0, -1)), "0.0", whenEqual},
		// Strings: ordinal, case-sensitive, UTF-16 order.
		{"upper before lower", edm.StringValue("B"), "'a'", whenLess},
		{"prefix first", edm.StringValue("a"), "'aa'", whenLess},
		{"digits ordinal", edm.StringValue("10"), "'9'", whenLess},
		{"supplementary before U+E000", edm.StringValue("\U0001F600"), "'\ue000'", whenLess},
		{"supplementary after U+D7FF", edm.StringValue("\U0001F600"), "'\ud7ff'", whenGreater},
		{"empty string", edm.StringValue(""), "''", whenEqual},
		// Binary: bytewise, then by length.
		{"binary shorter", edm.BinaryValue([]byte{1}), "X'0100'", whenLess},
		{"binary bytewise", edm.BinaryValue([]byte{2}), "X'01ff'", whenGreater},
		{"binary empty", edm.BinaryValue([]byte{}), "X''", whenEqual},
		// Booleans.
		{"false vs true", edm.BoolValue(false), "true", whenLess},
		{"false vs false", edm.BoolValue(false), "false", whenEqual},
		// Guids compare as canonical strings, whatever case the literal has.
		{"guid case", mustGuid("abcdef00-0000-0000-0000-000000000000"), "guid'ABCDEF00-0000-0000-0000-000000000000'", whenEqual},
		{"guid order", mustGuid("0000000a-0000-0000-0000-000000000000"), "guid'00000009-0000-0000-0000-000000000000'", whenGreater},
		// DateTimes compare as instants.
		{"datetime offset", edm.DateTimeValue(mustTicks("2020-01-01T10:00:00Z")), "datetime'2020-01-01T12:00:00+02:00'", whenEqual},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkOps(t, "P", c.lit, map[string]edm.Value{"P": c.prop}, c.want)
		})
	}
}

func TestEvalMissingProperty(t *testing.T) {
	for _, lits := range matrixLiterals {
		for _, lit := range lits {
			if lit != "" {
				checkOps(t, "Missing", lit, map[string]edm.Value{"P": edm.Int32Value(1)}, allFalse)
			}
		}
	}
	props := map[string]edm.Value{"P": edm.Int32Value(1)}
	for _, c := range []struct {
		f    string
		want bool
	}{
		{"not (Missing eq 1)", true},
		{"not (Missing ne 1)", true},
		{"Missing ne 1 or P eq 1", true},
		{"Missing ne 1 and P eq 1", false},
		{"not (Missing eq 1) and P eq 1", true},
		{"not (not (Missing eq 1))", false},
		{"Missing", false},
		{"not Missing", true},
	} {
		if got := evalOne(t, c.f, props); got != c.want {
			t.Errorf("%s = %v, want %v", c.f, got, c.want)
		}
	}
}

func TestEvalBareBoolean(t *testing.T) {
	cases := []struct {
		v    edm.Value
		has  bool
		want bool
	}{
		{edm.BoolValue(true), true, true},
		{edm.BoolValue(false), true, false},
		{edm.Value{}, false, false},
		{edm.StringValue("true"), true, false},
		{edm.Int32Value(1), true, false},
		{edm.Int64Value(1), true, false},
		{edm.DoubleValue(1), true, false},
	}
	for _, c := range cases {
		props := map[string]edm.Value{}
		if c.has {
			props["F"] = c.v
		}
		if got := evalOne(t, "F", props); got != c.want {
			t.Errorf("F with %v: got %v, want %v", c.v, got, c.want)
		}
		if got := evalOne(t, "not F", props); got == c.want {
			t.Errorf("not F with %v: got %v, want %v", c.v, got, !c.want)
		}
		if got := evalOne(t, "(F)", props); got != c.want {
			t.Errorf("(F) with %v: got %v", c.v, got)
		}
	}
}

func TestEvalNil(t *testing.T) {
	if !Eval(nil, func(string) (edm.Value, bool) { return edm.Value{}, false }) {
		t.Error("a nil filter must match")
	}
}

func TestEvalSystemProperties(t *testing.T) {
	props := map[string]edm.Value{
		"PartitionKey": edm.StringValue("p"),
		"RowKey":       edm.StringValue("r"),
		"Timestamp":    edm.DateTimeValue(mustTicks("2024-01-02T03:04:05.5Z")),
	}
	for f, want := range map[string]bool{
		"Timestamp gt datetime'2024-01-02T03:04:05Z'":                         true,
		"Timestamp lt datetime'2024-01-02T03:04:05.5000001Z'":                 true,
		"Timestamp eq '2024-01-02T03:04:05.5Z'":                               false, // string literal: mismatch
		"Timestamp lt '2024'":                                                 true,  // mismatch: property < literal
		"PartitionKey eq 'p' and RowKey eq 'r'":                               true,
		"PartitionKey eq 'P'":                                                 false,
		"RowKey lt 5":                                                         true,
		"PartitionKey eq 5":                                                   false,
		"PartitionKey ge 'p' and PartitionKey lt 'q' and not (RowKey eq 'x')": true,
	} {
		if got := evalOne(t, f, props); got != want {
			t.Errorf("%s = %v, want %v", f, got, want)
		}
	}
}

type benchEntity struct {
	pk, rk, name string
	age          int32
	flag         bool
}

func (e *benchEntity) get(name string) (edm.Value, bool) {
	switch name {
	case "PartitionKey":
		return edm.Value{Type: edm.String, Str: e.pk}, true
	case "RowKey":
		return edm.Value{Type: edm.String, Str: e.rk}, true
	case "Name":
		return edm.Value{Type: edm.String, Str: e.name}, true
	case "Age":
		return edm.Int32Value(e.age), true
	case "Flag":
		return edm.BoolValue(e.flag), true
	}
	return edm.Value{}, false
}

const benchFilter = "PartitionKey eq 'p1' and (Age gt 30 or Name eq 'Smith') and not Flag and Missing ne 5L and RowKey ge 'r'"

func TestEvalDoesNotAllocate(t *testing.T) {
	e, err := Parse(benchFilter)
	if err != nil {
		t.Fatal(err)
	}
	ent := &benchEntity{pk: "p1", rk: "r5", name: "Smith", age: 20}
	get := ent.get
	var matched bool
	allocs := testing.AllocsPerRun(1000, func() { matched = Eval(e, get) })
	if allocs != 0 {
		t.Errorf("Eval allocates %v times per run", allocs)
	}
	if matched {
		t.Error("Missing ne 5L must be false")
	}
}

func BenchmarkEval(b *testing.B) {
	e, err := Parse(benchFilter)
	if err != nil {
		b.Fatal(err)
	}
	ents := []*benchEntity{
		{pk: "p1", rk: "r1", name: "Smith", age: 20},
		{pk: "p1", rk: "r2", name: "Jones", age: 40, flag: true},
		{pk: "p2", rk: "r1", name: "Smith", age: 35},
	}
	gets := []Getter{ents[0].get, ents[1].get, ents[2].get}
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		if Eval(e, gets[i%len(gets)]) {
			n++
		}
	}
	_ = n
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchFilter); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanQuery(b *testing.B) {
	e, err := Parse("(PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '2')) or (PartitionKey ge 'x' and PartitionKey lt 'y' and RowKey gt 'k')")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		PlanQuery(e)
	}
}
