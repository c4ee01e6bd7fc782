package nodetable

import (
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// TestPanicThreshold: below the threshold the down nodes join the picks (least open first),
// a failed dial sits a node out until its next probe, an announced shutdown never joins, and
// back at the threshold the down nodes leave the picks.
func TestPanicThreshold(t *testing.T) {
	h := newHarnessWith(t, func(c *Config[*payload]) { c.PanicThreshold = 50 })
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	h.downByProbe("b:1")
	if h.tab.Panicking() {
		t.Fatal("panicking with two of three up (67% >= 50%)")
	}
	h.downByProbe("c:1")
	if !h.tab.Panicking() {
		t.Fatal("not panicking with one of three up (33% < 50%)")
	}
	got := map[string]int{}
	for _, a := range h.picks(9) {
		got[a]++
	}
	if got["a:1"] != 3 || got["b:1"] != 3 || got["c:1"] != 3 {
		t.Fatalf("picks below the threshold %v, want 3 each", got)
	}
	b, c := h.node("b:1"), h.node("c:1")
	if !h.tab.InRotation(b) || !h.tab.UpSince(b, b.Epoch()) || h.state("b:1") != Down {
		t.Fatal("b:1 must stay down yet be in rotation, its new connections accepted at checkout")
	}
	// c:1's dial fails: it sits out until its next probe result.
	h.tab.Dialed(c, errRefused)
	if h.tab.InRotation(c) {
		t.Fatal("c:1 is in rotation after a failed dial")
	}
	for _, a := range h.picks(4) {
		if a == "c:1" {
			t.Fatal("c:1 picked after a failed dial")
		}
	}
	h.tab.Probed(c, h.tick(), errRefused, 0)
	if !h.tab.InRotation(c) {
		t.Fatal("c:1 not back in rotation after its next probe")
	}
	// b:1 announces its shutdown: it leaves the rotation for good.
	h.tab.Shutdown(b, errShutdown)
	if h.tab.InRotation(b) {
		t.Fatal("a node that announced its shutdown is in rotation")
	}
	// b:1 leaves the share too: one of two (a, c) is up, 50% is not below the threshold.
	if h.tab.Panicking() || h.tab.InRotation(c) {
		t.Fatal("still panicking with one of the two eligible nodes up")
	}
}

// TestPanicThresholdOff: with PanicThreshold 0 down nodes never join the picks while one is up.
func TestPanicThresholdOff(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	h.downByProbe("b:1", "c:1")
	if h.tab.Panicking() {
		t.Fatal("panicking with the threshold off")
	}
	for _, a := range h.picks(6) {
		if a != "a:1" {
			t.Fatalf("picked %s with the threshold off, want a:1 only", a)
		}
	}
}

// TestPanicServedNodeSlowed: a down node served below the panic threshold is slowed by
// least-load while it holds connections in use. Its pick entries must move with its slot, and
// its in-use count come back to zero through the index it is in (a crash of the merged panic
// and load indexes: the entry was inserted under the role's slot and adjusted under the slowed
// one). Then the node's role changes: it stays served below the threshold, not put among the
// nodes up.
func TestPanicServedNodeSlowed(t *testing.T) {
	h := newHarnessWith(t, func(c *Config[*payload]) { c.PanicThreshold = 50; c.LeastLoad = true })
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	h.downByProbe("b:1")
	h.downByProbe("c:1")
	if !h.tab.Panicking() {
		t.Fatal("not panicking with one of three up")
	}
	c := h.node("c:1")
	var claimed []*Node[*payload]
	for range 6 {
		if n := h.tab.PickInUse(nil); n != nil {
			claimed = append(claimed, n)
		}
	}
	// c:1 answers three times slower than the others: the next tick slows it.
	for end := h.now.Add(2 * time.Second); h.now.Before(end); {
		h.now = h.now.Add(time.Millisecond)
		h.tab.Observe(h.node("a:1"), h.now, time.Millisecond)
		h.tab.Observe(h.node("b:1"), h.now, time.Millisecond)
		h.tab.Observe(c, h.now, 30*time.Millisecond)
	}
	tickLoad(h.tab, h.now)
	if c.slow == 0 {
		t.Fatal("c:1 was not slowed: the case proves nothing")
	}
	for _, n := range claimed {
		h.tab.Unclaim(n) // panicked in Adjust before the fix
	}
	h.tab.RoleChecked(c, nodes.RoleReplica, nil)
	if h.state("c:1") != Down || !h.tab.InRotation(c) || h.tab.Ups() != 1 {
		t.Fatalf("after a role change c:1 is %v, in rotation %v, ups %d; want down, served, one up", h.state("c:1"), h.tab.InRotation(c), h.tab.Ups())
	}
}
