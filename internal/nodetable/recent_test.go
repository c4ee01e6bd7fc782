package nodetable

import (
	"math/rand/v2"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

// runWorkers drives statement mode's in-use pick with k workers for picks picks: each worker
// holds one claim, and at each step the worker whose statement ends first (chosen by each
// node's relative duration, slow[addr] times as long as the others) gives its claim back and
// picks again. It returns the picks per address.
func runWorkers(t *testing.T, h *harness, k, picks int, slow map[string]int) map[string]int {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(k), 7))
	type claim struct {
		n    *Node[*payload]
		left int // time units until it ends
	}
	held := make([]claim, 0, k)
	got := map[string]int{}
	dur := func(n *Node[*payload]) int {
		d := 10 + r.IntN(5) // jitter, so that workers do not move in lockstep
		if f := slow[n.Addr()]; f > 0 {
			d *= f
		}
		return d
	}
	for range k {
		n := h.tab.PickInUse(nil)
		got[n.Addr()]++
		held = append(held, claim{n, dur(n)})
	}
	for range picks - k {
		first := 0
		for i := range held {
			if held[i].left < held[first].left {
				first = i
			}
		}
		elapsed := held[first].left
		for i := range held {
			held[i].left -= elapsed
		}
		h.tab.Unclaim(held[first].n)
		n := h.tab.PickInUse(nil)
		got[n.Addr()]++
		held[first] = claim{n, dur(n)}
	}
	for _, c := range held {
		h.tab.Unclaim(c.n)
	}
	return got
}

// TestWeightsAreSharesAtEveryConcurrency: 3:1:1 gives 60/20/20 of the picks with one statement
// in flight as with sixteen (a strict minimum over (in use+1)/weight gave 100/0/0 at one), and
// equal nodes take exact turns.
func TestWeightsAreSharesAtEveryConcurrency(t *testing.T) {
	for _, k := range []int{1, 2, 4, 16, 64} {
		h := warmHarness(t, nodes.Node{Addr: "a:1", Weight: 3}, nodes.Node{Addr: "b:1"}, nodes.Node{Addr: "c:1"})
		got := runWorkers(t, h, k, 10000, nil)
		t.Logf("%d workers, 3:1:1: %v", k, got)
		for addr, want := range map[string]float64{"a:1": 0.6, "b:1": 0.2, "c:1": 0.2} {
			if share := float64(got[addr]) / 10000; share < want-0.03 || share > want+0.03 {
				t.Errorf("%d workers: %s has %.3f of the picks (%v), want %.2f", k, addr, share, got, want)
			}
		}
		h = warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"}, nodes.Node{Addr: "c:1"})
		got = runWorkers(t, h, k, 9000, nil)
		for addr, n := range got {
			if n < 2900 || n > 3100 {
				t.Errorf("%d workers, equal nodes: %s has %d of 9000 picks (%v), want 3000 ± 100", k, addr, n, got)
			}
		}
	}
}

// TestSlowedNodeKeepsItsShare: a node the load policy slowed to a speed factor of about a
// fifth still gets about a fifth of a full-speed node's picks at one worker (it went without
// any under a strict minimum, so it was never measured again), and at sixteen workers, where
// its statements also take ten times as long, least-connections sheds it to about 1/20 with
// no other noise in the durations, and still measures it. (On a busy host, where the host's
// delays ride on every round trip, internal/clustertest/leastload's
// TestSlowProxyShedsWithoutStarving holds the same node to 1/16 to 1/3.)
func TestSlowedNodeKeepsItsShare(t *testing.T) {
	for _, k := range []int{1, 16} {
		h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"}, nodes.Node{Addr: "c:1"})
		c := h.node("c:1")
		h.tab.mu.Lock()
		move := c.byInUse.Indexed()
		if move {
			h.tab.unindexLocked(c)
		}
		c.slow = 37 // 2^(-37/16): a speed factor of 0.2
		if move {
			h.tab.indexLocked(c)
		}
		h.tab.applyWeightLocked(c)
		h.tab.mu.Unlock()
		got := runWorkers(t, h, k, 20000, map[string]int{"c:1": 10})
		ratio := float64(got["c:1"]) / float64(got["a:1"])
		t.Logf("%d workers: slowed c:1 got %.3f of a full-speed node's picks (%v)", k, ratio, got)
		lo, hi := 0.15, 0.25
		if k > 1 {
			lo, hi = 1.0/32, 1.0/3
		}
		if ratio < lo || ratio > hi {
			t.Errorf("%d workers: slowed c:1 got %.3f of a full-speed node's picks (%v), want %.3f to %.3f", k, ratio, got, lo, hi)
		}
	}
}

// TestHungNodeDrawsLikeLeastConnections: a node whose statements never end draws no more than
// least-connections would give it: its units in flight count against it, whatever the window.
func TestHungNodeDrawsLikeLeastConnections(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"}, nodes.Node{Addr: "c:1"})
	got := runWorkers(t, h, 16, 20000, map[string]int{"c:1": 1 << 20})
	t.Logf("16 workers, c:1 hung: %v", got)
	if got["c:1"] > 16/3+2 {
		t.Fatalf("a hung node drew %d of 16 workers (%v), want at most %d", got["c:1"], got, 16/3+2)
	}
}
