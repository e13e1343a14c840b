package odata

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partita/partita/edm"
)

// testEntity is an entity of the golden eval tests.
type testEntity struct {
	name  string
	names []string // property names in input order
	props map[string]edm.Value
}

func (e *testEntity) get(name string) (edm.Value, bool) {
	v, ok := e.props[name]
	return v, ok
}

func (e *testEntity) String() string {
	var sb strings.Builder
	sb.WriteString(e.name + ":")
	for _, n := range e.names {
		sb.WriteString(" " + n + "=" + FormatLiteral(e.props[n]))
	}
	return sb.String()
}

// parseEntity parses "name Prop=literal Prop=literal ...", where literal is
// a $filter literal or NaN, Infinity, -Infinity.
func parseEntity(line string) (*testEntity, error) {
	name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	e := &testEntity{name: name, props: map[string]edm.Value{}}
	for {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return e, nil
		}
		prop, lit, ok := strings.Cut(rest, "=")
		if !ok {
			return nil, fmt.Errorf("missing '=' in %q", rest)
		}
		var v edm.Value
		special := map[string]float64{"NaN": math.NaN(), "Infinity": math.Inf(1), "-Infinity": math.Inf(-1)}
		end := strings.IndexByte(lit, ' ')
		if end < 0 {
			end = len(lit)
		}
		if f, ok := special[lit[:end]]; ok {
			v = edm.DoubleValue(f)
		} else {
			p := &parser{lx: lexer{src: lit}}
			if err := p.advance(); err != nil {
				return nil, err
			}
			o, err := p.parseOperand()
			if err != nil {
				return nil, err
			}
			if o.kind != opLit {
				return nil, fmt.Errorf("not a literal: %q", lit)
			}
			v = o.val
			end = p.tok().start
		}
		e.names = append(e.names, prop)
		e.props[prop] = v
		rest = lit[end:]
	}
}

func formatParseResult(e Expr, err error) string {
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			return fmt.Sprintf("error of type %T: %v", err, err)
		}
		return fmt.Sprintf("error %s pos=%d: %s", pe.Kind, pe.Pos, pe.Message)
	}
	if e == nil {
		return "<nil>"
	}
	return e.String()
}

func formatPlan(p Plan) string {
	var sb strings.Builder
	sb.WriteString(p.Class.String())
	if len(p.Ranges) == 0 {
		sb.WriteString("\n  (none)")
	}
	for _, r := range p.Ranges {
		sb.WriteString("\n  " + r.String())
	}
	return sb.String()
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no golden files", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var entities []*testEntity
			runDataDriven(t, path, func(t *testing.T, c *ddCase) string {
				switch c.cmd {
				case "parse":
					var out []string
					for _, in := range c.input {
						e, err := Parse(in)
						out = append(out, formatParseResult(e, err))
						if err == nil && e != nil {
							checkRoundTrip(t, in, e)
						}
					}
					return strings.Join(out, "\n")
				case "entities":
					entities = nil
					var out []string
					for _, in := range c.input {
						e, err := parseEntity(in)
						if err != nil {
							t.Fatalf("line %d: entity %q: %v", c.line, in, err)
						}
						entities = append(entities, e)
						out = append(out, e.String())
					}
					return strings.Join(out, "\n")
				case "eval":
					var out []string
					for _, in := range c.input {
						e, err := Parse(in)
						if err != nil {
							out = append(out, in+" -> "+formatParseResult(nil, err))
							continue
						}
						var names []string
						for _, ent := range entities {
							if Eval(e, ent.get) {
								names = append(names, ent.name)
							}
						}
						if len(names) == 0 {
							names = []string{"(none)"}
						}
						out = append(out, in+" -> "+strings.Join(names, " "))
					}
					return strings.Join(out, "\n")
				case "plan":
					in := strings.Join(c.input, "\n")
					e, err := Parse(in)
					if err != nil {
						return formatParseResult(nil, err)
					}
					p := PlanQuery(e)
					checkPlanInvariants(t, p)
					return formatPlan(p)
				}
				t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
				return ""
			})
		})
	}
}

// checkRoundTrip checks that e prints as text that parses back to e and
// prints identically.
func checkRoundTrip(t testing.TB, in string, e Expr) {
	t.Helper()
	s := e.String()
	e2, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q) = %v; printed %q does not parse: %v", in, e, s, err)
	}
	if !Equal(e, e2) {
		t.Fatalf("Parse(%q) printed %q, which parses to a different tree %q", in, s, e2)
	}
	if s2 := e2.String(); s2 != s {
		t.Fatalf("Parse(%q) printed %q, which prints as %q", in, s, s2)
	}
}

// checkPlanInvariants checks the structure of a plan: at most MaxRanges
// ranges, each non-empty, sorted and disjoint.
func checkPlanInvariants(t testing.TB, p Plan) {
	t.Helper()
	if len(p.Ranges) > MaxRanges {
		t.Fatalf("plan has %d ranges", len(p.Ranges))
	}
	if p.Class > ClassTable {
		t.Fatalf("bad class %d", p.Class)
	}
	for i, r := range p.Ranges {
		if posLine(r.Start, true).cmp(posLine(r.End, false)) >= 0 {
			t.Fatalf("plan %v: range %d is empty", p, i)
		}
		if i > 0 && posLine(p.Ranges[i-1].End, false).cmp(posLine(r.Start, true)) > 0 {
			t.Fatalf("plan %v: ranges %d and %d overlap or are out of order", p, i-1, i)
		}
	}
}
