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

func TestETag_FormAndRoundTrip(t *testing.T) {
	ticks, err := edm.ParseDateTime("2024-01-02T03:04:05.1234567Z")
	if err != nil {
		t.Fatal(err)
	}
	const want = `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`
	if got := FormatETag(ticks); got != want {
		t.Fatalf("FormatETag = %s, want %s", got, want)
	}
	if got := string(AppendJSONETag(nil, ticks)); got != `"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\""` {
		t.Fatalf("AppendJSONETag = %s", got)
	}
	for _, tk := range []int64{ticks, edm.MinDateTime, edm.MaxDateTime, ticks - ticks%10_000_000} {
		if got, ok := ParseETag(FormatETag(tk)); !ok || got != tk {
			t.Errorf("ParseETag(FormatETag(%d)) = %d, %v", tk, got, ok)
		}
	}
}
