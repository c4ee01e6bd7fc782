package detect

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func loadsOf(open ...int) []Load {
	loads := make([]Load, len(open))
	for i, n := range open {
		loads[i] = Load{Node: i, Open: n, Idle: n}
	}
	return loads
}

func TestSurplusTable(t *testing.T) {
	tests := []struct {
		name string
		open []int
		want []int
	}{
		{"empty", nil, nil},
		{"one node", []int{0}, nil},
		{"one busy node", []int{40}, nil},
		{"three full one empty", []int{10, 10, 10, 0}, []int{2, 2, 3, 0}},
		{"already fair", []int{8, 8, 7, 7}, nil},
		{"spread of one", []int{5, 4}, nil},
		{"all equal", []int{3, 3, 3}, nil},
		{"one holds all", []int{3, 0, 0}, []int{2, 0, 0}},
		{"two nodes", []int{6, 0}, []int{3, 0}},
		{"odd total on two nodes", []int{7, 0}, []int{3, 0}},
		// Ties: the ceil share goes to the equally full node that comes first.
		{"tie first in input keeps ceil", []int{5, 5, 0}, []int{1, 2, 0}},
		{"tie after an empty node", []int{0, 5, 5}, []int{0, 1, 2}},
		// A node at ceil(T/k) that is not among the fullest T%k gives one up.
		{"ceil holder ranked out", []int{4, 4, 4, 1}, []int{0, 1, 1, 0}},
		{"one node far above", []int{9, 4, 2}, []int{4, 0, 0}},
		{"several donors and takers", []int{12, 1, 9, 0, 3}, []int{7, 0, 4, 0, 0}},
		{"negative counts as zero", []int{-3, 4}, []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loads := loadsOf(tt.open...)
			before := slices.Clone(loads)
			got := Surplus(loads)
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("Surplus(%v) = %v, want %v", tt.open, got, tt.want)
			}
			if !slices.Equal(loads, before) {
				t.Fatalf("Surplus modified its input: %v became %v", before, loads)
			}
		})
	}
}

// fairShares computes the shares the documentation promises, independently of
// the implementation: fullest first, input order among equals, the first T%k
// of that ranking keep ceil(T/k).
func fairShares(open []int) []int {
	k := len(open)
	total := 0
	for _, n := range open {
		total += max(n, 0)
	}
	rank := make([]int, k)
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(a, b int) int { return cmp.Compare(max(open[b], 0), max(open[a], 0)) })
	shares := make([]int, k)
	for r, i := range rank {
		shares[i] = total / k
		if r < total%k {
			shares[i]++
		}
	}
	return shares
}

func spread(open []int) int {
	if len(open) == 0 {
		return 0
	}
	return slices.Max(open) - slices.Min(open)
}

func TestSurplusProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var reused surplusBuf
	for iter := range 20000 {
		k := rng.IntN(12)
		open := make([]int, k)
		hi := 1 + rng.IntN(60)
		for i := range open {
			open[i] = rng.IntN(hi)
			if iter%5 == 0 && rng.IntN(3) == 0 {
				open[i] = hi // force ties among the fullest
			}
		}
		loads := loadsOf(open...)
		got := Surplus(loads)

		// The reusable buffer used by the rebalancer agrees with Surplus.
		if again := reused.compute(loads); !slices.Equal(again, got) || (again == nil) != (got == nil) {
			t.Fatalf("reused buffer gave %v, Surplus gave %v for %v", again, got, open)
		}

		if k < 2 || spread(open) <= 1 {
			if got != nil {
				t.Fatalf("Surplus(%v) = %v, want nil", open, got)
			}
			continue
		}
		if len(got) != k {
			t.Fatalf("Surplus(%v) has length %d, want %d", open, len(got), k)
		}

		shares := fairShares(open)
		total, sumShares, sumSurplus, kept := 0, 0, 0, 0
		for i := range open {
			total += open[i]
			sumShares += shares[i]
			sumSurplus += got[i]
			kept += min(open[i], shares[i])
			if got[i] < 0 || got[i] > open[i] {
				t.Fatalf("Surplus(%v)[%d] = %d out of range", open, i, got[i])
			}
			if want := max(open[i]-shares[i], 0); got[i] != want {
				t.Fatalf("Surplus(%v) = %v, want %d at %d (shares %v)", open, got, want, i, shares)
			}
		}
		if sumShares != total {
			t.Fatalf("shares %v of %v do not add up to %d", shares, open, total)
		}
		if sumSurplus != total-kept {
			t.Fatalf("Surplus(%v) = %v sums to %d, want total-kept = %d", open, got, sumSurplus, total-kept)
		}
		if sumSurplus == 0 {
			t.Fatalf("Surplus(%v) = %v: non-nil but nothing to retire", open, got)
		}

		// Retire the surplus, then hand the same number of connections back
		// one at a time to the emptiest node, as the pool would: everyone
		// ends within one connection of everyone else.
		after := make([]int, k)
		for i := range open {
			after[i] = open[i] - got[i]
		}
		for range sumSurplus {
			after[slices.Index(after, slices.Min(after))]++
		}
		if spread(after) > 1 {
			t.Fatalf("Surplus(%v) = %v leaves %v after refilling", open, got, after)
		}
		if again := Surplus(loadsOf(after...)); again != nil {
			t.Fatalf("balanced loads %v still have surplus %v", after, again)
		}
	}
}

func TestSurplusOut(t *testing.T) {
	// Two nodes in the local zone hold 3 each, two outside it 1 each: the outside ones give up
	// everything, the local ones are even among themselves.
	got := Surplus([]Load{{Open: 3}, {Open: 3}, {Open: 1, Out: true}, {Open: 1, Out: true}})
	if want := []int{0, 0, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("Surplus = %v, want %v", got, want)
	}
	// The local ones uneven too: both kinds of surplus at once.
	got = Surplus([]Load{{Open: 5}, {Open: 1}, {Open: 2, Out: true}})
	if want := []int{2, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("Surplus = %v, want %v", got, want)
	}
	// Nothing outside and the inside even: nothing to do.
	if got := Surplus([]Load{{Open: 2}, {Open: 2}, {Open: 0, Out: true}}); got != nil {
		t.Errorf("Surplus = %v, want nil", got)
	}
}
