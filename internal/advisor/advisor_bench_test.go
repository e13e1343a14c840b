package advisor

import (
	"strconv"
	"testing"
)

// BenchmarkRead and BenchmarkWrite are the per-request costs of the
// advisor alone, over 1000 partitions of one table.
func BenchmarkRead(b *testing.B) {
	a := New(Options{})
	pks := make([]string, 1000)
	for i := range pks {
		pks[i] = "partition" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a.Read("devstoreaccount1", "bench", pks[i%1000])
	}
}

func BenchmarkWrite(b *testing.B) {
	a := New(Options{})
	pks := make([]string, 1000)
	for i := range pks {
		pks[i] = "partition" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a.Write("devstoreaccount1", "bench", pks[i%1000], pks[(i*7)%1000], true, 0)
	}
}
