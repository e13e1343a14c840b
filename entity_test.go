package partita

import (
	"errors"
	"fmt"
	"math/rand/v2"
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

// FuzzSizeBound: sizeBound never undercounts Size, so Validate, which
// counts UTF-16 units only past it, refuses exactly what it refused.
func FuzzSizeBound(f *testing.F) {
	f.Add("pk", "é", "S", "😀", []byte{1})
	f.Fuzz(func(t *testing.T, pk, rk, name, str string, bin []byte) {
		e := &Entity{PartitionKey: pk, RowKey: rk, Properties: []Property{
			{Name: name, Value: edm.StringValue(str)}, {Name: "B", Value: edm.BinaryValue(bin)}, {Name: "I", Value: edm.Int64Value(1)}}}
		if b, s := e.sizeBound(), e.Size(); b < s {
			t.Fatalf("sizeBound %d < Size %d", b, s)
		}
	})
}

// TestValidate_SizeAtTheLimit: an entity of exactly MaxEntitySize in
// UTF-16 terms (but more in bytes: 'é' is two of each) passes, and one
// unit more does not.
func TestValidate_SizeAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		over int
		ok   bool
	}{{0, true}, {2, false}} {
		// The string is split over properties (each is limited too), and
		// the last one sized so that the entity is MaxEntitySize+over.
		var props []Property
		for i := 0; i < 18; i++ {
			props = append(props, Property{Name: fmt.Sprintf("S%02d", i), Value: edm.StringValue(strings.Repeat("é", 30000))})
		}
		e := &Entity{PartitionKey: "p", RowKey: "r", Properties: props}
		last := &e.Properties[len(props)-1].Value
		*last = edm.StringValue(strings.Repeat("é", 30000+(MaxEntitySize+tc.over-e.Size())/2))
		if e.Size() != MaxEntitySize+tc.over {
			t.Fatalf("test entity of %d", e.Size())
		}
		err := e.Validate()
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), string(CodeEntityTooLarge))) {
			t.Errorf("size %d (limit %d): Validate = %v", e.Size(), MaxEntitySize, err)
		}
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

// BenchmarkValidate1K validates the bench tool's entity: keys, an Int32
// and a 1 KiB string.
func BenchmarkValidate1K(b *testing.B) {
	e := &Entity{PartitionKey: "p0001", RowKey: "r000000000002", Properties: []Property{
		{Name: "Bucket", Value: edm.Int32Value(7)}, {Name: "Payload", Value: edm.StringValue(strings.Repeat("x", 1024))}}}
	for b.Loop() {
		if err := e.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMerge_WideMatchesPairwise checks the indexed merge of wide entities
// against comparing names pairwise: same values, same order (existing
// properties in place, new ones appended in src's order).
func TestMerge_WideMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	props := func(n, tag int) []Property {
		var ps []Property
		for _, k := range rng.Perm(400)[:n] {
			ps = append(ps, Property{Name: fmt.Sprintf("p%d", k), Value: edm.Value{Type: edm.Int32, Int: int64(tag)}})
		}
		return ps
	}
	for round := 0; round < 200; round++ {
		dst, src := props(rng.IntN(253), 1), props(rng.IntN(253), 2)
		want := &Entity{Properties: append([]Property(nil), dst...)}
		want.mergePairwise(src)
		got := &Entity{Properties: append([]Property(nil), dst...)}
		got.mergeIndexed(src)
		if fmt.Sprint(got.Properties) != fmt.Sprint(want.Properties) {
			t.Fatalf("merge of %d into %d properties:\n got %v\nwant %v", len(src), len(dst), got.Properties, want.Properties)
		}
	}
}

// BenchmarkMergeWide merges 252 properties into an entity of the same 252
// names, in reverse order.
func BenchmarkMergeWide(b *testing.B) {
	var dst, src []Property
	for i := 0; i < 252; i++ {
		dst = append(dst, Property{Name: fmt.Sprintf("property_name_%03d", i), Value: edm.Value{Type: edm.Int32, Int: 1}})
		src = append(src, Property{Name: fmt.Sprintf("property_name_%03d", 251-i), Value: edm.Value{Type: edm.Int32, Int: 2}})
	}
	b.ReportAllocs()
	for b.Loop() {
		e := Entity{Properties: append([]Property(nil), dst...)}
		e.Merge(src)
	}
}
