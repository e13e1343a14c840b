package partita

import (
	"github.com/partita/partita/edm"
	"testing"
	"unicode/utf16"
)

func FuzzUTF16Len(f *testing.F) {
	for _, s := range []string{"", "abc", "é", "😀", "\ue000", "\xff\xfe", "a\x80b", "\xf0\x9f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := utf16Len(s), len(utf16.Encode([]rune(s))); got != want {
			t.Fatalf("utf16Len(%q) = %d, want %d", s, got, want)
		}
	})
}

func TestEntitySize(t *testing.T) {
	e := &Entity{PartitionKey: "pk", RowKey: "é", Properties: []Property{{Name: "S", Value: edm.StringValue("😀")}}}
	// 4 + 2*2 + 2*1 + (8 + 2*1 + 4 + 2*2)
	if got := e.Size(); got != 4+4+2+8+2+4+4 {
		t.Errorf("Size = %d", got)
	}
}
