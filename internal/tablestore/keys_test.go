package tablestore

import (
	"bytes"
	"cmp"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/partita/partita/odata"
)

// utf16Compare is the reference order: UTF-16 code units, lexicographic.
func utf16Compare(a, b string) int {
	x, y := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := cmp.Compare(x[i], y[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(x), len(y))
}

func keyCompare(pk1, rk1, pk2, rk2 string) int {
	if c := utf16Compare(pk1, pk2); c != 0 {
		return c
	}
	return utf16Compare(rk1, rk2)
}

func sign(c int) int { return cmp.Compare(c, 0) }

func FuzzKeyOrder(f *testing.F) {
	for _, s := range [][4]string{
		{"a", "", "a", "\x00"}, {"a", "b", "aa", ""}, {"", "", "", ""},
		{"\U0001F600", "x", "\ue000", "x"}, {"p", "r\x00", "p", "r"}, {"10", "a", "9", "a"},
		{"\uffff", "", "\U00010000", ""}, {"a\x00b", "", "a", "\x00b"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, pk1, rk1, pk2, rk2 string) {
		for _, s := range []string{pk1, rk1, pk2, rk2} {
			if !utf8.ValidString(s) {
				t.Skip() // stored keys are always valid UTF-8
			}
		}
		k1 := entityKey(nil, 7, pk1, rk1)
		k2 := entityKey(nil, 7, pk2, rk2)
		if got, want := sign(bytes.Compare(k1, k2)), keyCompare(pk1, rk1, pk2, rk2); got != want {
			t.Fatalf("order of (%q,%q) vs (%q,%q): bytes %d, keys %d", pk1, rk1, pk2, rk2, got, want)
		}
		gpk, grk, err := decodeEntityKey(k1)
		if err != nil || gpk != pk1 || grk != rk1 {
			t.Fatalf("round trip of (%q,%q) = (%q,%q), %v", pk1, rk1, gpk, grk, err)
		}
		// Positions bracket the key exactly as the planner expects.
		before := position(7, odata.Position{Kind: odata.BeforeKey, PK: pk1, RK: rk1}, false)
		after := position(7, odata.Position{Kind: odata.AfterKey, PK: pk1, RK: rk1}, true)
		bp := position(7, odata.Position{Kind: odata.BeforePartition, PK: pk1}, false)
		ap := position(7, odata.Position{Kind: odata.AfterPartition, PK: pk1}, true)
		if !(bytes.Compare(bp, k1) <= 0 && bytes.Compare(before, k1) <= 0 && bytes.Compare(k1, after) < 0 && bytes.Compare(k1, ap) < 0) {
			t.Fatalf("positions do not bracket (%q,%q)", pk1, rk1)
		}
		// k2 lies inside [before, after) iff it is the same key, and
		// inside the partition bounds iff it has the same PartitionKey.
		in := bytes.Compare(before, k2) <= 0 && bytes.Compare(k2, after) < 0
		if in != (pk1 == pk2 && rk1 == rk2) {
			t.Fatalf("(%q,%q) in point range of (%q,%q) = %v", pk2, rk2, pk1, rk1, in)
		}
		inPart := bytes.Compare(bp, k2) <= 0 && bytes.Compare(k2, ap) < 0
		if inPart != (pk1 == pk2) {
			t.Fatalf("(%q,%q) in partition %q = %v", pk2, rk2, pk1, inPart)
		}
		// Table bounds.
		lo := position(7, odata.Position{Kind: odata.Unbounded}, false)
		hi := position(7, odata.Position{Kind: odata.Unbounded}, true)
		if bytes.Compare(lo, k1) > 0 || bytes.Compare(k1, hi) >= 0 {
			t.Fatalf("key outside its table's bounds")
		}
	})
}

func BenchmarkEntityKey(b *testing.B) {
	buf := make([]byte, 0, 128)
	for i := 0; i < b.N; i++ {
		buf = entityKey(buf[:0], 42, "partition-0001", "row-0000000042")
	}
}

// TestKeyNamespaces: every kind of key starts with its own namespace byte,
// so no two kinds can collide, and each namespace is a key range of its
// own.
func TestKeyNamespaces(t *testing.T) {
	for _, tt := range []struct {
		what string
		key  []byte
		ns   byte
	}{
		{"catalog", catalogKey("acct", "tbl"), nsCatalog},
		{"next id", nextIDKey, nsMeta},
		{"probe", probeKey, nsMeta},
		{"entity", entityKey(nil, 7, "p", "r"), nsEntities},
		{"ACL", aclKey(7), nsACL},
		{"properties", propertiesKey("acct"), nsProperties},
	} {
		if len(tt.key) == 0 || tt.key[0] != tt.ns {
			t.Errorf("%s key %q does not start with its namespace %#x", tt.what, tt.key, tt.ns)
		}
	}
	seen := map[byte]bool{}
	for _, ns := range []byte{nsCatalog, nsMeta, nsEntities, nsACL, nsProperties} {
		if seen[ns] {
			t.Errorf("namespace %#x declared twice", ns)
		}
		seen[ns] = true
	}
}
