package odata

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partita/partita/edm"
)

// goldenInputs returns the filters of the golden files, to seed the fuzzers.
func goldenInputs(t testing.TB) []string {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range files {
		for _, ch := range readDataDriven(t, path) {
			c, ok := ch.(*ddCase)
			if !ok {
				continue
			}
			switch c.cmd {
			case "parse", "eval":
				out = append(out, c.input...)
			case "plan":
				out = append(out, strings.Join(c.input, "\n"))
			}
		}
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, s := range goldenInputs(f) {
		f.Add(s)
	}
	ent := &oracleEntity{pk: "a", rk: "b", age: edm.Int32Value(3), flag: edm.BoolValue(true)}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T %v is not an *Error", s, err, err)
			}
			if e != nil {
				t.Fatalf("Parse(%q) returned both %v and an error", s, e)
			}
			switch pe.Kind {
			case ErrSyntax:
				if pe.Pos < 0 || pe.Pos > len(s) {
					t.Fatalf("Parse(%q): bad position %d for %q", s, pe.Pos, pe.Message)
				}
				if !strings.HasPrefix(pe.Message, "Syntax error at position ") &&
					!strings.HasPrefix(pe.Message, "Unrecognized 'Edm.") {
					t.Fatalf("Parse(%q): unexpected message %q", s, pe.Message)
				}
			case ErrNullComparison, ErrUnsupportedComparison, ErrUnsupportedFunction:
				if pe.Pos != -1 {
					t.Fatalf("Parse(%q): bad position in %+v", s, pe)
				}
			default:
				t.Fatalf("Parse(%q): bad kind in %+v", s, pe)
			}
			return
		}
		if e == nil {
			if strings.Trim(s, " \t\n\r\f\v") != "" {
				t.Fatalf("Parse(%q) = nil, nil for a non-blank filter", s)
			}
			return
		}
		checkRoundTrip(t, s, e)
		Eval(e, ent.get)
		checkPlanInvariants(t, PlanQuery(e))
	})
}
