package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBucketsContiguous(t *testing.T) {
	// Every bucket's range starts right after the previous one ends, and
	// bucketOf maps both ends back to the bucket.
	prevHi := int64(-1)
	for i := 0; i < numBuckets; i++ {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d]: bucketOf gives %d, %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if hi == math.MaxInt64 {
			return
		}
		prevHi = hi
	}
	t.Fatalf("buckets end at %d before MaxInt64", prevHi)
}

func TestQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHistogram()
	var vals []int64
	for i := 0; i < 100000; i++ {
		// Log-uniform between 1µs and 10s, the range of request latencies.
		v := int64(math.Exp(rng.Float64()*math.Log(1e7)) * 1e3)
		vals = append(vals, v)
		h.Record(v)
	}
	slices.Sort(vals)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		idx := int(math.Ceil(q*float64(len(vals)))) - 1
		idx = max(idx, 0)
		exact := vals[idx]
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/subCount+1 {
			t.Errorf("q%.3f: got %d, exact %d (more than 1/%d off)", q, got, exact, subCount)
		}
	}
	if h.Count() != 100000 || h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
		t.Errorf("count/min/max = %d/%d/%d, want %d/%d/%d", h.Count(), h.Min(), h.Max(), len(vals), vals[0], vals[len(vals)-1])
	}
}

func TestMergeAndSmallValues(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	for v := int64(0); v < 100; v++ {
		a.Record(v)
		b.Record(v + 100)
	}
	a.Merge(b)
	a.Merge(NewHistogram())
	if a.Count() != 200 || a.Min() != 0 || a.Max() != 199 {
		t.Fatalf("count/min/max = %d/%d/%d", a.Count(), a.Min(), a.Max())
	}
	// Values below 256 are exact.
	if got := a.Quantile(0.5); got != 99 {
		t.Errorf("median = %d, want 99", got)
	}
	if got := a.Mean(); got != 99.5 {
		t.Errorf("mean = %v, want 99.5", got)
	}
	a.Record(-5)
	if a.Min() != 0 {
		t.Errorf("negative values count as 0")
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || NewHistogram().Min() != 0 {
		t.Errorf("empty histogram quantile/min not 0")
	}
}

func BenchmarkHistogram(b *testing.B) {
	h := NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 1024)
	for i := range vals {
		vals[i] = int64(rng.ExpFloat64() * 2e6) // ~2 ms mean latencies
	}
	b.Run("Record", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			h.Record(vals[i&1023])
		}
	})
	b.Run("Quantile", func(b *testing.B) {
		for b.Loop() {
			h.Quantile(0.999)
		}
	})
	b.Run("Merge", func(b *testing.B) {
		o := NewHistogram()
		for b.Loop() {
			o.Merge(h)
		}
	})
}
