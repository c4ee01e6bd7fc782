package detect

import (
	"slices"
	"testing"
)

func weightedLoads(open []int, weight []float64) []Load {
	loads := loadsOf(open...)
	for i := range loads {
		loads[i].Weight = weight[i]
	}
	return loads
}

func TestWeightedSurplus(t *testing.T) {
	tests := []struct {
		name   string
		open   []int
		weight []float64
		want   []int
	}{
		// Shares 10, 20, 30.
		{"weights 1 2 3, all on one", []int{60, 0, 0}, []float64{1, 2, 3}, []int{50, 0, 0}},
		{"weights 1 2 3, fair", []int{10, 20, 30}, []float64{1, 2, 3}, nil},
		{"weights 1 2 3, within one", []int{10, 20, 31}, []float64{1, 2, 3}, nil},
		{"weights 1 2 3, one to move", []int{11, 19, 30}, []float64{1, 2, 3}, []int{1, 0, 0}},
		{"heavy node short", []int{30, 30, 0}, []float64{1, 1, 4}, []int{20, 20, 0}},
		// A warming node at 10% of weight 1 next to two warm ones: share 100*0.1/2.1 = 4.76, so
		// 4 of the 33 a warm newcomer would get move in this round.
		{"warming newcomer", []int{50, 50, 0}, []float64{1, 1, 0.1}, []int{2, 2, 0}},
		// Equal weights other than 1 are the unweighted rule.
		{"equal weights", []int{10, 10, 10, 0}, []float64{5, 5, 5, 5}, []int{2, 2, 3, 0}},
		{"zero and NaN weigh 1", []int{6, 0}, []float64{0, -1}, []int{3, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Surplus(weightedLoads(tt.open, tt.weight))
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("Surplus(%v, weights %v) = %v, want %v", tt.open, tt.weight, got, tt.want)
			}
		})
	}
}

// TestWeightedSurplusMovesAtWarmupPace runs rounds while a newcomer's weight rises from 0.1 to
// 1 in steps, the retired connections coming back by weighted least-connections: each round
// moves a slice into the newcomer, never the whole surplus, and the last leaves it a third.
func TestWeightedSurplusMovesAtWarmupPace(t *testing.T) {
	open := []int{60, 60, 0}
	moved := 0
	for step := 1; step <= 10; step++ {
		w := []float64{1, 1, float64(step) / 10}
		s := Surplus(weightedLoads(open, w))
		retired := 0
		for i, n := range s {
			open[i] -= n
			retired += n
		}
		// Redial what was retired, each to the node with the smallest (open+1)/weight.
		for range retired {
			best := 0
			for i := range open {
				if float64(open[i]+1)/w[i] < float64(open[best]+1)/w[best] {
					best = i
				}
			}
			open[best]++
		}
		if step < 10 && open[2] >= 40 {
			t.Fatalf("step %d (weight %.1f): the newcomer already holds %d of 120", step, w[2], open[2])
		}
		if d := open[2] - moved; step > 1 && d > 12 {
			t.Fatalf("step %d: %d connections moved into the newcomer in one round, want a slice", step, d)
		}
		moved = open[2]
	}
	if open[2] != 40 {
		t.Fatalf("the newcomer holds %d of 120 once warm, want 40", open[2])
	}
}
