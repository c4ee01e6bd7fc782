package detect

import (
	"cmp"
	"slices"
)

// Load is the connection count of one up node, as the rebalancer sees it.
type Load struct {
	// Node is the Cluster's own handle for the node. The rebalancer never
	// looks inside it; it only passes it back to Cluster.Retire.
	Node any
	// Open is the number of open physical connections to the node, idle or
	// in use, leaving out those already marked for retirement. Negative
	// values are treated as 0.
	Open int
	// Idle is how many of the Open connections sit idle in the pool right
	// now; for the Cluster's own reports (the rebalancer asks for the whole
	// surplus either way). Negative values are treated as 0.
	Idle int
}

// Surplus reports, for each entry of loads, how many connections that node
// holds above its fair share. The result has the same length and order as
// loads, or is nil when there is nothing to do.
//
// With T connections open in total over k nodes, every node's fair share is
// floor(T/k), except that T%k nodes may keep one more, ceil(T/k). Those
// larger shares go to the fullest nodes, which minimises the number of
// connections that have to move; among nodes with the same Open count, the
// ones earlier in loads are preferred. A node's surplus is Open minus its
// share when positive, else 0.
//
// Surplus returns nil when loads has fewer than two entries or when the
// fullest and the emptiest node differ by at most one connection: such a
// spread cannot be improved, and acting on it would only move connections
// back and forth. Otherwise at least one entry is positive.
//
// Surplus is a pure function that does not modify loads. It runs in
// O(k log k) time.
func Surplus(loads []Load) []int {
	return new(surplusBuf).compute(loads)
}

// surplusBuf holds scratch space for Surplus so that a long-running
// rebalancer does not allocate every round.
type surplusBuf struct {
	out, order []int
}

// compute is Surplus; the result aliases b and is valid until the next call.
func (b *surplusBuf) compute(loads []Load) []int {
	k := len(loads)
	if k < 2 {
		return nil
	}
	lo, hi, total := openOf(loads[0]), openOf(loads[0]), 0
	for _, l := range loads {
		n := openOf(l)
		lo, hi = min(lo, n), max(hi, n)
		total += n
	}
	if hi-lo <= 1 {
		return nil
	}

	// Rank nodes fullest first; the stable sort keeps input order among
	// equals, so the outcome depends only on the input.
	order := b.order[:0]
	for i := range k {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(openOf(loads[y]), openOf(loads[x]))
	})
	b.order = order

	floor, extra := total/k, total%k
	out := slices.Grow(b.out[:0], k)[:k]
	clear(out)
	b.out = out
	for rank, i := range order {
		share := floor
		if rank < extra {
			share++
		}
		if n := openOf(loads[i]); n > share {
			out[i] = n - share
		}
	}
	return out
}

func openOf(l Load) int { return max(l.Open, 0) }
