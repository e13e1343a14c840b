package partita

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/partita/partita/edm"
)

func FuzzUTF16Len(f *testing.F) {
	for _, s := range []string{"", "abc", "é", "😀", "\ue000", "\xff\xfe", "a\x80b", "\xf0\x9f", "abcdefgh", "abcdefghijklmnop😀", "01234567\xf0\x9f", "0123456789abcdeé"} {
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

// wideEntity has n Int32 properties P0..P(n-1).
func wideEntity(n int) *Entity {
	e := &Entity{PartitionKey: "pk", RowKey: "rk"}
	for i := 0; i < n; i++ {
		e.Properties = append(e.Properties, Property{Name: fmt.Sprintf("P%d", i), Value: edm.Int32Value(int32(i))})
	}
	return e
}

func TestValidate_DuplicateNames(t *testing.T) {
	for _, n := range []int{1, 2, 16, 17, 100, MaxCustomProperties} {
		e := wideEntity(n)
		if err := e.Validate(); err != nil {
			t.Errorf("%d distinct properties: %v", n, err)
		}
		if n < 2 {
			continue
		}
		for _, at := range []int{1, n / 2, n - 1} {
			d := wideEntity(n)
			d.Properties[at].Name = d.Properties[at-1].Name
			err := d.Validate()
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeDuplicatePropertiesSpecified {
				t.Errorf("%d properties, duplicate at %d: %v", n, at, err)
			}
		}
	}
}

func BenchmarkValidateWide(b *testing.B) {
	e := wideEntity(MaxCustomProperties)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUTF16Len1K(b *testing.B) {
	s := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", 16)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		if utf16Len(s) != len(s) {
			b.Fatal("wrong length")
		}
	}
}
