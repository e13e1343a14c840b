package edm

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

func TestDateTimeRoundTrip(t *testing.T) {
	cases := []struct {
		in, out string
	}{
		{"2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z"},
		{"2020-01-01T00:00:00.0000000Z", "2020-01-01T00:00:00Z"},
		{"2024-01-02T03:04:05.1234567Z", "2024-01-02T03:04:05.1234567Z"},
		{"2024-01-02T03:04:05.1200000Z", "2024-01-02T03:04:05.12Z"},
		{"2024-01-02T03:04:05.123Z", "2024-01-02T03:04:05.123Z"},
		{"2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.1234567Z"}, // digits past 7 dropped
		{"2024-01-02T03:04:05", "2024-01-02T03:04:05Z"},                    // no zone: UTC
		{"2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05Z"},
		{"2024-01-02T00:30:00-01:00", "2024-01-02T01:30:00Z"},
		{"2020-01-01T00:00Z", "2020-01-01T00:00:00Z"}, // no seconds
		{"2020-02-29T12:00:00Z", "2020-02-29T12:00:00Z"},
		{"1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z"},
		{"9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z"},
	}
	for _, c := range cases {
		ticks, err := ParseDateTime(c.in)
		if err != nil {
			t.Errorf("ParseDateTime(%q): %v", c.in, err)
			continue
		}
		if got := FormatDateTime(ticks); got != c.out {
			t.Errorf("FormatDateTime(ParseDateTime(%q)) = %q, want %q", c.in, got, c.out)
		}
	}
	if MinDateTime != 504911232000000000 {
		t.Errorf("MinDateTime = %d", MinDateTime)
	}
	if got := FormatDateTime7(TicksFromTime(time.Date(2024, 1, 2, 3, 4, 5, 123000000, time.UTC))); got != "2024-01-02T03:04:05.1230000Z" {
		t.Errorf("FormatDateTime7 = %q", got)
	}
	// The tick count of a known instant (.NET: new DateTime(2000,1,1).Ticks).
	if ticks, _ := ParseDateTime("2000-01-01T00:00:00Z"); ticks != 630822816000000000 {
		t.Errorf("ticks of 2000-01-01 = %d", ticks)
	}
}

func TestDateTimeRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 10000; i++ {
		ticks := MinDateTime + r.Int63n(MaxDateTime-MinDateTime+1)
		s := FormatDateTime(ticks)
		back, err := ParseDateTime(s)
		if err != nil || back != ticks {
			t.Fatalf("ticks %d -> %q -> %d, %v", ticks, s, back, err)
		}
		if TicksFromTime(TimeFromTicks(ticks)) != ticks {
			t.Fatalf("ticks %d do not survive time.Time", ticks)
		}
		// The hand-written digits agree with the time package's layout.
		if want := TimeFromTicks(ticks).Format("2006-01-02T15:04:05"); s[:len(want)] != want {
			t.Fatalf("ticks %d formatted %q, time.Format gives %q", ticks, s, want)
		}
	}
}

func TestParseDateTimeErrors(t *testing.T) {
	syntax := []string{
		"", "2020", "2020-01-01", "2020-13-01T00:00:00Z", "2020-02-30T00:00:00Z",
		"2021-02-29T00:00:00Z", "2020-01-01T24:00:00Z", "2020-01-01T00:60:00Z",
		"2020-01-01T00:00:60Z", "2020-01-01T00:00:00.Z", "2020-01-01T00:00:00+0200",
		"2020-01-01 00:00:00Z", "2020-01-01T00:00:00ZZ", "yesterday.......",
	}
	for _, s := range syntax {
		if _, err := ParseDateTime(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDateTime(%q) = %v, want ErrSyntax", s, err)
		}
	}
	for _, s := range []string{"1600-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999-00:01"} {
		if _, err := ParseDateTime(s); !errors.Is(err, ErrRange) {
			t.Errorf("ParseDateTime(%q) = %v, want ErrRange", s, err)
		}
	}
}

func TestFormatDouble(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{5, "5.0"},
		{-5, "-5.0"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{0.30000000000000004, "0.30000000000000004"},
		{1e21, "1E+21"},
		{1e15, "1E+15"},
		{1e14, "100000000000000.0"},
		{123456789012345.6, "123456789012345.6"},
		{0.0001, "0.0001"},
		{0.00001, "1E-05"},
		{2.5e-5, "2.5E-05"},
		{1e-7, "1E-07"},
		{math.MaxFloat64, "1.7976931348623157E+308"},
		{5e-324, "5E-324"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, c := range cases {
		got := FormatDouble(c.f)
		if got != c.want {
			t.Errorf("FormatDouble(%v) = %q, want %q", c.f, got, c.want)
		}
		back, err := ParseDouble(got)
		if err != nil || math.Float64bits(back) != math.Float64bits(c.f) && !math.IsNaN(c.f) {
			t.Errorf("ParseDouble(%q) = %v, %v; want %v", got, back, err, c.f)
		}
	}
}

func TestFormatDoubleRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 100000; i++ {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := FormatDouble(f)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(f) {
			t.Fatalf("%v -> %q -> %v, %v", f, s, back, err)
		}
	}
}

func TestParseGuid(t *testing.T) {
	const canon = "c9da6455-213d-42c9-9a79-3e9149a57833"
	for _, s := range []string{canon, "C9DA6455-213D-42C9-9A79-3E9149A57833", "{c9da6455-213d-42C9-9a79-3e9149a57833}"} {
		g, err := ParseGuid(s)
		if err != nil || g != canon {
			t.Errorf("ParseGuid(%q) = %q, %v", s, g, err)
		}
	}
	for _, s := range []string{
		"", "c9da6455213d42c99a793e9149a57833", "c9da6455-213d-42c9-9a79-3e9149a5783",
		"c9da6455-213d-42c9-9a79-3e9149a578333", "g9da6455-213d-42c9-9a79-3e9149a57833",
		"c9da6455_213d-42c9-9a79-3e9149a57833", "{c9da6455-213d-42c9-9a79-3e9149a57833",
		"(c9da6455-213d-42c9-9a79-3e9149a57833)",
	} {
		if _, err := ParseGuid(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseGuid(%q) = %v, want ErrSyntax", s, err)
		}
	}
	if v, err := GuidValue("C9DA6455-213D-42C9-9A79-3E9149A57833"); err != nil || v.Type != Guid || v.Str != canon {
		t.Errorf("GuidValue = %+v, %v", v, err)
	}
}

// refCompare is the reference order: UTF-16 code units, lexicographically.
func refCompare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestCompareStrings(t *testing.T) {
	ordered := []string{"", "A", "B", "Z", "a", "aa", "ab", "b", "é", "\u07ff", "\u0800", "\ud7ff", "\U00010000", "\U0001F600", "\U0010FFFF", "\ue000", "\uffff"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := sign(i - j)
			if got := sign(CompareStrings(a, b)); got != want {
				t.Errorf("CompareStrings(%q, %q) = %d, want %d", a, b, got, want)
			}
			if got := sign(refCompare(a, b)); got != want {
				t.Errorf("reference order of %q, %q = %d, want %d", a, b, got, want)
			}
		}
	}
	// The prefix rule and differences after a common multi-byte prefix.
	pairs := [][2]string{
		{"a\U0001F600", "a\ue000"}, {"\U0001F600a", "\U0001F601"}, {"\ue000\U0001F600", "\ue000\ue001"},
		{"10", "9"}, {"B", "a"}, {"x\U0001F600y", "x\U0001F600"},
	}
	// Invalid UTF-8: distinct strings never compare equal.
	for _, p := range [][2]string{{"\xee", "\xf5"}, {"\xef", "\xf6"}, {"a\xee", "a\xf5\x80"}} {
		if CompareStrings(p[0], p[1]) == 0 || sign(CompareStrings(p[0], p[1])) != -sign(CompareStrings(p[1], p[0])) {
			t.Errorf("CompareStrings(%q, %q) = %d", p[0], p[1], CompareStrings(p[0], p[1]))
		}
	}
	for _, p := range pairs {
		if got, want := sign(CompareStrings(p[0], p[1])), sign(refCompare(p[0], p[1])); got != want {
			t.Errorf("CompareStrings(%q, %q) = %d, want %d", p[0], p[1], got, want)
		}
	}
}

func FuzzCompareStrings(f *testing.F) {
	f.Add("a", "b")
	f.Add("\ue000", "\U0001F600")
	f.Add("x\uffff", "x\U00010000")
	f.Add("", "a")
	f.Add("é", "e")
	f.Add("\xee", "\xf5")
	f.Fuzz(func(t *testing.T, a, b string) {
		// For any bytes, only equal strings compare equal.
		if (CompareStrings(a, b) == 0) != (a == b) {
			t.Fatalf("CompareStrings(%q, %q) = %d", a, b, CompareStrings(a, b))
		}
		if sign(CompareStrings(a, b)) != -sign(CompareStrings(b, a)) {
			t.Fatalf("CompareStrings(%q, %q) is not antisymmetric", a, b)
		}
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // the reference would turn invalid bytes into U+FFFD
		}
		if got, want := sign(CompareStrings(a, b)), sign(refCompare(a, b)); got != want {
			t.Fatalf("CompareStrings(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

func TestValueCompare(t *testing.T) {
	if _, ok := Compare(DoubleValue(math.NaN()), DoubleValue(1)); ok {
		t.Error("NaN compared")
	}
	if _, ok := Compare(Int32Value(1), Int64Value(1)); ok {
		t.Error("different types compared")
	}
	if c, ok := Compare(BinaryValue([]byte{1}), BinaryValue([]byte{1, 0})); !ok || c >= 0 {
		t.Error("shorter binary must sort first")
	}
	if !DoubleValue(math.NaN()).Equal(DoubleValue(math.NaN())) {
		t.Error("NaN must Equal NaN bitwise")
	}
}
