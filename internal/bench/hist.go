// Package bench is partita's load generator: a lean SharedKeyLite client
// for any Table endpoint (partita, Azurite, a real account), the workloads of
// `partita bench`, an HDR-like latency histogram and the reports. The
// comparison with Azurite and the do-nothing server, and the growth runs,
// are a developer tool outside the product: internal/cmd/benchcompare.
package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the precision of the histogram: every power-of-two range of
// values is split into 2^subBits linear sub-buckets, so a recorded value is
// off by at most 1/2^subBits (0.8%) of itself.
const subBits = 7

const (
	subCount = 1 << subBits
	// numBuckets covers every int64: values below 2*subCount get one
	// bucket each, then each octave gets subCount buckets.
	numBuckets = (64-subBits-1)*subCount + 2*subCount
)

// Histogram records non-negative durations (nanoseconds) in log-linear
// buckets, like HdrHistogram with 2 significant digits: fixed memory
// (~59 KiB), O(1) Record, no allocation. It is not safe for concurrent use:
// give each goroutine its own and Merge them.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{min: math.MaxInt64} }

// bucketOf returns the bucket index of v >= 0.
func bucketOf(v int64) int {
	u := uint64(v)
	if u < 2*subCount {
		return int(u)
	}
	shift := bits.Len64(u) - subBits - 1 // >= 1
	top := u >> uint(shift)              // in [subCount, 2*subCount)
	return shift*subCount + int(top)
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < 2*subCount {
		return int64(i), int64(i)
	}
	shift := i/subCount - 1
	top := uint64(i - shift*subCount)
	l := top << uint(shift)
	h := (top+1)<<uint(shift) - 1
	if h > math.MaxInt64 {
		h = math.MaxInt64
	}
	return int64(l), int64(h)
}

// Record adds one value. Negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// RecordDuration adds one duration.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{min: math.MaxInt64} }

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Min is the smallest recorded value (0 when empty).
func (h *Histogram) Min() int64 {
	if h.n == 0 {
		return 0
	}
	return h.min
}

// Max is the largest recorded value (exact).
func (h *Histogram) Max() int64 { return h.max }

// Mean is the exact mean of the recorded values.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the value at quantile q in [0, 1]: the upper end of the
// bucket holding the ceil(q*n)-th smallest value, clamped to the recorded
// minimum and maximum (so the result never understates by more than one
// bucket and never exceeds Max).
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			return min(max(hi, h.min), h.max)
		}
	}
	return h.max
}
