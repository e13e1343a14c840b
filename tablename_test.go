package partita

import (
	"strings"
	"testing"
)

// TestFoldTableName: table names fold in ASCII only, and SameTable agrees
// with FoldTableName.
func TestFoldTableName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"orders", "orders"}, {"Orders", "orders"}, {"ORDERS1", "orders1"},
		{"\u212Aay", "\u212Aay"}, // the Kelvin sign is not "k"
		{"\u0130tems", "\u0130tems"}, {"Stra\u00dfe", "stra\u00dfe"}, {"\xffAB", "\xffab"}, {"", ""},
	} {
		if got := FoldTableName(tt.in); got != tt.want {
			t.Errorf("FoldTableName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	names := []string{"kay", "KAY", "Kay", "\u212Aay", "items", "\u0130tems", "ITEMS", "tables", "Tables", "Table\u017f", "a", "b", ""}
	for _, a := range names {
		for _, b := range names {
			want := FoldTableName(a) == FoldTableName(b)
			if got := SameTable(a, b); got != want {
				t.Errorf("SameTable(%q, %q) = %v, want %v", a, b, got, want)
			}
			if ascii := strings.EqualFold(a, b); isASCII(a) && isASCII(b) && ascii != want {
				t.Errorf("SameTable(%q, %q) = %v, unlike strings.EqualFold on ASCII", a, b, want)
			}
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
