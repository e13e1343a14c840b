package odata

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDepth(t *testing.T) {
	ok := strings.Repeat("(", MaxDepth) + "A" + strings.Repeat(")", MaxDepth)
	if _, err := Parse(ok); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	nots := strings.Repeat("not ", MaxDepth) + "A"
	if _, err := Parse(nots); err != nil {
		t.Fatalf("%d nots: %v", MaxDepth, err)
	}
	for _, deep := range []string{
		strings.Repeat("(", MaxDepth+1) + "A" + strings.Repeat(")", MaxDepth+1),
		strings.Repeat("not ", MaxDepth+1) + "A",
		strings.Repeat("not (", MaxDepth/2+1) + "A" + strings.Repeat(")", MaxDepth/2+1),
	} {
		_, err := Parse(deep)
		var pe *Error
		if !errors.As(err, &pe) || pe.Kind != ErrSyntax || !strings.HasPrefix(pe.Message, "Syntax error at position ") {
			t.Fatalf("too deep: got %v", err)
		}
	}
	// Long flat chains are not nesting.
	long := strings.Repeat("A eq 1 and ", 5000) + "B"
	if _, err := Parse(long); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrorIsTyped(t *testing.T) {
	e, err := Parse("A eq")
	if e != nil {
		t.Fatal("expression with error")
	}
	pe, ok := err.(*Error)
	if !ok || pe.Kind != ErrSyntax || pe.Pos != 4 {
		t.Fatalf("got %#v", err)
	}
	_, err = Parse("A eq B")
	if pe, ok := err.(*Error); !ok || pe.Kind != ErrUnsupportedComparison || pe.Pos != -1 {
		t.Fatalf("got %#v", err)
	}
	// A nil *Error must never hide in a non-nil error.
	if e, err := Parse("A eq 1"); err != nil || e == nil {
		t.Fatalf("got %v, %v", e, err)
	}
}

func TestFormatLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"'it''s'":  "'it''s'",
		"-5":       "-5",
		"5L":       "5L",
		"5.0":      "5.0",
		"1e300":    "1E+300",
		"0.00001":  "1E-05",
		"X'0AfF'":  "X'0aff'",
		"binary''": "X''",
	} {
		e, err := Parse("P eq " + in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatLiteral(e.(*Compare).Value); got != want {
			t.Errorf("FormatLiteral(%s) = %s, want %s", in, got, want)
		}
	}
}
