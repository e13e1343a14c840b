package partita

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestCodesListsEveryConstant keeps Codes from drifting from the Code
// constants: every constant of type Code declared in error.go is in Codes
// exactly once, and Codes holds nothing else.
func TestCodesListsEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "error.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[Code]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: not a string literal", name.Name)
				}
				declared[Code(lit.Value[1:len(lit.Value)-1])] = name.Name
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no Code constants found in error.go")
	}
	listed := map[Code]bool{}
	for _, c := range Codes {
		if listed[c] {
			t.Errorf("Codes lists %s twice", c)
		}
		listed[c] = true
		if _, ok := declared[c]; !ok {
			t.Errorf("Codes lists %s, which is not a Code constant in error.go", c)
		}
	}
	for c, name := range declared {
		if !listed[c] {
			t.Errorf("%s (%s) is missing from Codes", name, c)
		}
	}
}
