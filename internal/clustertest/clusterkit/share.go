// Package clusterkit holds the helpers lbd's cluster-level tests share: counters and waits
// over an lbdtest cluster's proxies. It is not for users.
package clusterkit

import (
	"math"

	"github.com/lbd-go/lbd/lbdtest"
)

// StatementCounts returns each proxy's statement count, in the cluster's order.
func StatementCounts(cl *lbdtest.Cluster) []int64 {
	out := make([]int64, 0, len(cl.Proxies()))
	for _, p := range cl.Proxies() {
		out = append(out, p.Statements())
	}
	return out
}

// ShareCV returns the coefficient of variation (population standard deviation over mean) of
// counts: 0 for perfectly even counts, sqrt(n-1) when one of n proxies got everything, NaN
// when there is nothing to compare.
func ShareCV(counts []int64) float64 {
	var sum float64
	for _, c := range counts {
		sum += float64(c)
	}
	if len(counts) == 0 || sum == 0 {
		return math.NaN()
	}
	mean := sum / float64(len(counts))
	var sq float64
	for _, c := range counts {
		d := float64(c) - mean
		sq += d * d
	}
	return math.Sqrt(sq/float64(len(counts))) / mean
}
