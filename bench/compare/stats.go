package main

import (
	"math"
	"slices"
)

// percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted, which must be in ascending
// order, by the nearest-rank method: the smallest value such that at least p % of the values
// are less than or equal to it. It never interpolates, so the answer is always one of the
// observed values. An empty slice gives NaN.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	// The tolerance keeps a rank that is an exact integer on paper (99.9 % of 1000 = 999)
	// from being pushed to the next one by floating-point noise.
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	rank = max(rank, 1)
	rank = min(rank, n)
	return sorted[rank-1]
}

// meanStd returns the mean and the population standard deviation of values.
func meanStd(values []float64) (mean, std float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	for _, v := range values {
		d := v - mean
		std += d * d
	}
	return mean, math.Sqrt(std / float64(len(values)))
}

// cv returns the coefficient of variation of values: population standard deviation divided by
// the mean, as a fraction (0.1 = 10 %). It is NaN for an empty slice or a zero mean, where a
// share spread means nothing.
func cv(values []float64) float64 {
	mean, std := meanStd(values)
	if len(values) == 0 || mean == 0 {
		return math.NaN()
	}
	return std / math.Abs(mean)
}

// median returns the median of values (the mean of the two middle ones for an even count),
// ignoring NaNs. +Inf values count as very large. With no number at all it returns NaN.
func median(values []float64) float64 {
	vs := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	mid := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[mid]
	}
	a, b := vs[mid-1], vs[mid]
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.Inf(1)
	}
	return (a + b) / 2
}

// cdfPoint is one point of an empirical distribution function: the fraction of samples whose
// value is at most x.
type cdfPoint struct {
	X float64 // a sample value
	F float64 // fraction of samples at or below X
}

// cdfPoints thins the ascending samples in sorted to at most about maxPoints points of their
// empirical CDF. Half of the points are spread evenly over the whole distribution and half over
// its slowest 1 %, so the tail that decides p99 and p99.9 keeps its shape; the largest sample
// is always included.
func cdfPoints(sorted []float64, maxPoints int) []cdfPoint {
	n := len(sorted)
	if n == 0 || maxPoints < 2 {
		return nil
	}
	if n <= maxPoints {
		out := make([]cdfPoint, n)
		for i, v := range sorted {
			out[i] = cdfPoint{X: v, F: float64(i+1) / float64(n)}
		}
		return out
	}
	idx := make([]int, 0, maxPoints+1)
	half := maxPoints / 2
	for k := range half {
		idx = append(idx, k*(n-1)/half)
	}
	tailStart := n - n/100
	tailLen := n - tailStart
	for k := range maxPoints - half {
		idx = append(idx, tailStart+k*tailLen/(maxPoints-half))
	}
	idx = append(idx, n-1)
	slices.Sort(idx)
	idx = slices.Compact(idx)
	out := make([]cdfPoint, 0, len(idx))
	for _, i := range idx {
		out = append(out, cdfPoint{X: sorted[i], F: float64(i+1) / float64(n)})
	}
	return out
}
