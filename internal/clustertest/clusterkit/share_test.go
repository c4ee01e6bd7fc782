package clusterkit

import (
	"math"
	"testing"
)

func TestShareCV(t *testing.T) {
	for _, tc := range []struct {
		counts []int64
		want   float64
	}{
		{[]int64{200, 200, 200}, 0},
		{[]int64{600, 0, 0}, math.Sqrt2},
		{[]int64{190, 200, 210}, math.Sqrt(200.0/3) / 200},
	} {
		if got := ShareCV(tc.counts); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("ShareCV(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
	if !math.IsNaN(ShareCV([]int64{0, 0, 0})) {
		t.Error("ShareCV of no statement is not NaN")
	}
}
