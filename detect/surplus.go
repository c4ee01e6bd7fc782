package detect

import (
	"cmp"
	"math"
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
	// Weight is the node's effective weight now: its weight times its
	// warm-up factor (slow start). Shares are proportional to it. Values of 0
	// or less, and NaN, count as 1, so a Cluster without weights leaves it 0.
	Weight float64
	// Out says the node should hold no connection: every one of its Open is surplus, and it
	// takes no part in the others' shares (lbd: a node outside the local zone while the
	// picks stay in the zone).
	Out bool
}

// Surplus reports, for each entry of loads, how many connections that node
// holds above its fair share. The result has the same length and order as
// loads, or is nil when there is nothing to do.
//
// With T connections open in total over nodes of total weight W, node i's
// exact share is T*w_i/W and its fair share is the floor of that, except
// that the connections those floors leave over (T%k of them when every
// weight is equal) let as many nodes keep one more. Those larger shares go
// to the nodes furthest above their exact share (with equal weights: the
// fullest), which minimises the number of connections that have to move;
// among equals, the ones earlier in loads are preferred. A node's surplus is
// Open minus its share when positive, else 0.
//
// A node warming up has an effective weight below its weight, so its share,
// and with it what the rounds move into it, grows with its warm-up rather
// than arriving in one round.
//
// A node marked Out has all its connections as surplus, and the others' shares are computed
// as if it were not there.
//
// Surplus returns nil when loads has fewer than two entries or when every
// node's distance from its exact share (Open - T*w_i/W) is within one
// connection of every other's (with equal weights: the fullest and the
// emptiest node differ by at most one): such a spread cannot be improved,
// and acting on it would only move connections back and forth. Otherwise at
// least one entry is positive.
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
	over       []float64 // weighted: Open minus the exact share, per node
	in         []Load    // withOut: the loads that are not Out
	at, all    []int     // withOut: where each of in is in loads; the result over loads
}

// compute is Surplus; the result aliases b and is valid until the next call.
func (b *surplusBuf) compute(loads []Load) []int {
	for _, l := range loads {
		if l.Out {
			return b.withOut(loads)
		}
	}
	k := len(loads)
	if k < 2 {
		return nil
	}
	if weighted(loads) {
		return b.weighted(loads)
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

// withOut is compute for loads some of which are Out: those give up all they hold, and the
// others share out what they hold among themselves as compute would without the Out ones.
func (b *surplusBuf) withOut(loads []Load) []int {
	in, at := b.in[:0], b.at[:0]
	for i, l := range loads {
		if !l.Out {
			in, at = append(in, l), append(at, i)
		}
	}
	b.in, b.at = in, at
	inner := b.compute(in)
	all := slices.Grow(b.all[:0], len(loads))[:len(loads)]
	clear(all)
	b.all = all
	any := false
	for j, i := range at {
		if inner != nil && inner[j] > 0 {
			all[i], any = inner[j], true
		}
	}
	for i, l := range loads {
		if l.Out && openOf(l) > 0 {
			all[i], any = openOf(l), true
		}
	}
	clear(in) // drop the Cluster's handles until the next round
	if !any {
		return nil
	}
	return all
}

func openOf(l Load) int { return max(l.Open, 0) }

func weightOf(l Load) float64 {
	if !(l.Weight > 0) || math.IsInf(l.Weight, 0) { // NaN, 0 and below, and +Inf count as 1
		return 1
	}
	return l.Weight
}

// weighted reports whether the loads' weights differ, so that shares are not all equal.
func weighted(loads []Load) bool {
	w := weightOf(loads[0])
	for _, l := range loads[1:] {
		if weightOf(l) != w {
			return true
		}
	}
	return false
}

// weighted is compute for loads whose weights differ.
func (b *surplusBuf) weighted(loads []Load) []int {
	k := len(loads)
	total, sumW := 0, 0.0
	for _, l := range loads {
		total += openOf(l)
		sumW += weightOf(l)
	}
	over := slices.Grow(b.over[:0], k)[:k]
	b.over = over
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, l := range loads {
		over[i] = float64(openOf(l)) - float64(total)*weightOf(l)/sumW
		lo, hi = min(lo, over[i]), max(hi, over[i])
	}
	if hi-lo <= 1+1e-9 {
		return nil
	}
	order := b.order[:0]
	for i := range k {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(over[y], over[x]) })
	b.order = order
	out := slices.Grow(b.out[:0], k)[:k]
	clear(out)
	b.out = out
	shares := 0
	for i, l := range loads {
		out[i] = int(math.Floor(float64(total) * weightOf(l) / sumW)) // the floor, for now
		shares += out[i]
	}
	extra := total - shares
	for rank, i := range order {
		share := out[i]
		if rank < extra {
			share++
		}
		out[i] = max(openOf(loads[i])-share, 0)
	}
	return out
}
