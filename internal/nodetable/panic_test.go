package nodetable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// panicPick picks in panic mode at the harness's clock and returns the address, "-" for none.
func (h *harness) panicPick(skip ...*Node[*payload]) string {
	if n := h.tab.PanicPick(skip, h.now); n != nil {
		return n.Addr()
	}
	return "-"
}

// downByProbe takes each node of addrs down with a failed probe, in that order.
func (h *harness) downByProbe(addrs ...string) {
	h.t.Helper()
	for _, a := range addrs {
		h.tab.Probed(h.node(a), h.now, errRefused, 0)
		if h.state(a) != Down {
			h.t.Fatalf("%s is %v after a failed probe, want down", a, h.state(a))
		}
	}
}

func TestPanicPickOnlyWhenNoNodeIsUp(t *testing.T) {
	h := started(t, "a:1", "b:1")
	h.downByProbe("a:1")
	if got := h.panicPick(); got != "-" {
		t.Fatalf("panic pick with b:1 up = %s, want none (Pick serves)", got)
	}
	h.downByProbe("b:1")
	if got := h.panicPick(); got != "a:1" {
		t.Fatalf("panic pick = %s, want a:1 (failed before b:1)", got)
	}
	if v, _ := h.view("a:1"); v.Open != 1 || h.tab.Total() != 1 {
		t.Fatalf("a:1 open %d, total %d after a panic pick; want 1 and 1 (charged as Pick charges)", v.Open, h.tab.Total())
	}
	if got := h.panicPick(); got != "b:1" {
		t.Fatalf("second panic pick = %s, want b:1 (a:1 has a panic dial in flight)", got)
	}
	if got := h.panicPick(); got != "-" {
		t.Fatalf("third panic pick = %s, want none (one panic dial per node in flight)", got)
	}
	// a:1's dial fails: it is now the node that failed last, and its next try waits for the
	// spacing.
	a, b := h.node("a:1"), h.node("b:1")
	h.tab.Dialed(a, errRefused)
	h.tab.PanicDialed(a, errRefused)
	h.tab.Release(a)
	if got := h.panicPick(); got != "-" {
		t.Fatalf("panic pick right after a:1's failed panic dial = %s, want none (spacing)", got)
	}
	h.now = h.now.Add(panicSpacing - time.Nanosecond)
	if got := h.panicPick(); got != "-" {
		t.Fatalf("panic pick just before the spacing passed = %s, want none", got)
	}
	h.now = h.now.Add(time.Nanosecond)
	if got := h.panicPick(); got != "a:1" {
		t.Fatalf("panic pick once the spacing passed = %s, want a:1", got)
	}
	h.tab.PanicDialed(a, errors.New("caller gave up")) // not the node's fault: nothing recorded
	h.tab.Release(a)
	h.wantTransitions("a:1 up>down", "b:1 up>down")

	// b:1's dial succeeds while no node is up: b:1 comes up at once, for cause panic.
	h.tab.PanicDialed(b, nil)
	h.wantTransitions("b:1 down>up")
	v, _ := h.view("b:1")
	if v.State != Up || v.TransitionsBy[CausePanic] != 1 {
		t.Fatalf("b:1 %v with %v transitions by cause, want up with one panic transition", v.State, v.TransitionsBy)
	}
	if got := h.picks(1)[0]; got != "b:1" {
		t.Fatalf("pick after the panic success = %s, want b:1", got)
	}
	h.now = h.now.Add(panicSpacing)
	if got := h.panicPick(); got != "-" {
		t.Fatalf("panic pick with b:1 up again = %s, want none", got)
	}
	if h.state("a:1") != Down {
		t.Fatal("a:1 came up without a good probe")
	}
}

func TestPanicTransitionNamesItsCause(t *testing.T) {
	h := started(t, "a:1")
	h.downByProbe("a:1")
	h.took()
	a := h.node("a:1")
	if h.tab.PanicPick(nil, h.now) != a {
		t.Fatal("no panic pick of the only node")
	}
	h.tab.PanicDialed(a, nil)
	// A second report of the same dial, after the node went down again, is not a second success.
	h.downByProbe("a:1")
	h.tab.PanicDialed(a, nil)
	if h.state("a:1") != Down {
		t.Fatal("a second report of one panic-mode dial brought the node up again")
	}
	h.mu.Lock()
	got := append([]Transition[*payload](nil), h.trans...)
	h.mu.Unlock()
	if len(got) != 2 || got[0].Cause != CausePanic || got[0].Reason != "panic-mode dial succeeded while no node was up" {
		t.Fatalf("transitions %+v, want one with cause panic and its reason, then the probe's markdown", got)
	}
	if CausePanic.String() != "panic" {
		t.Fatalf("CausePanic.String() = %q, want panic", CausePanic.String())
	}
}

func TestPanicPickLeastRecentlyFailed(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1", "d:1")
	h.downByProbe("c:1", "a:1", "d:1", "b:1")
	var got []string
	for range 5 {
		got = append(got, h.panicPick())
	}
	if fmt.Sprint(got) != "[c:1 a:1 d:1 b:1 -]" {
		t.Fatalf("panic picks %v, want the order the nodes failed in, then none", got)
	}
	// A fatal error is a failure too: c:1 failed last now.
	for _, a := range []string{"a:1", "b:1", "c:1", "d:1"} {
		h.tab.PanicDialed(h.node(a), errRefused)
	}
	h.tab.Fatal(h.node("c:1"), h.now, errRefused)
	h.tab.Dialed(h.node("a:1"), errRefused)
	h.now = h.now.Add(panicSpacing)
	if got := h.panicPick(h.node("d:1")); got != "b:1" {
		t.Fatalf("panic pick skipping d:1 = %s, want b:1 (d:1 skipped, then b:1 failed before a:1 and c:1)", got)
	}
}

func TestPanicNeverTriesDrainingOrStandbyNodes(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	b := h.node("b:1")
	h.tab.Charge(b) // b:1 holds a connection, so it stays draining
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1", Standby: true}, {Addr: "c:1"}}, build); err != nil {
		t.Fatal(err)
	}
	h.downByProbe("a:1")
	h.tab.Probed(b, h.now, errRefused, 0) // draining: not down, but its failure is recorded first
	h.downByProbe("c:1")
	if h.state("b:1") != Draining {
		t.Fatalf("b:1 is %v, want draining", h.state("b:1"))
	}
	if got := h.panicPick(); got != "c:1" {
		t.Fatalf("panic pick = %s, want c:1 (a:1 is standby, b:1 draining)", got)
	}
	if got := h.panicPick(); got != "-" {
		t.Fatalf("second panic pick = %s, want none", got)
	}
	// A standby node up does not end panic mode: it takes no connections.
	h.tab.Probed(h.node("a:1"), h.tick(), nil, 0)
	h.tab.Probed(h.node("a:1"), h.tick(), nil, 0)
	if h.state("a:1") != Up || h.tab.Ups() != 0 {
		t.Fatalf("a:1 %v with %d nodes taking connections, want up and 0", h.state("a:1"), h.tab.Ups())
	}
	h.tab.PanicDialed(h.node("c:1"), nil)
	if h.state("c:1") != Up {
		t.Fatalf("c:1 is %v after its panic dial succeeded with only a standby node up, want up", h.state("c:1"))
	}
}

func TestPanicSuccessAfterAnotherNodeCameUpLeavesItToProbes(t *testing.T) {
	h := newHarness(t, 1, 3, time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	h.downByProbe("a:1", "b:1")
	a := h.node("a:1")
	if h.tab.PanicPick(nil, h.now) != a {
		t.Fatal("no panic pick of a:1")
	}
	h.tab.Probed(h.node("b:1"), h.tick(), nil, 0) // b:1 recovers while a:1's dial is in flight
	h.tab.PanicDialed(a, nil)
	if h.state("a:1") != Down {
		t.Fatal("a:1 came up by a panic dial that ended after b:1 was up")
	}
	h.tab.Release(a)
	// Its panic dial is no longer in flight: with b:1 down again, a:1 is tried once more.
	h.downByProbe("b:1")
	h.now = h.now.Add(panicSpacing)
	if got := h.panicPick(); got != "a:1" {
		t.Fatalf("panic pick = %s, want a:1", got)
	}
}

func TestPanicPickInUseClaims(t *testing.T) {
	h := started(t, "a:1")
	h.downByProbe("a:1")
	a := h.tab.PanicPickInUse(nil, h.now)
	if a == nil {
		t.Fatal("no panic pick by in-use count")
	}
	if v, _ := h.view("a:1"); v.InUse != 1 || v.Open != 0 {
		t.Fatalf("a:1 in use %d, open %d; want 1 and 0 (the dial charges its own)", v.InUse, v.Open)
	}
	h.tab.Unclaim(a)
	h.tab.PanicDialed(a, errRefused)
}

func TestDownListFollowsEveryWayInAndOut(t *testing.T) {
	h := newHarness(t, 1, 1, time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	// In: probe, dial, fatal, added at run time; out: probe, drained, panic success.
	h.downByProbe("a:1")
	h.tab.Dialed(h.node("b:1"), errRefused)
	h.tab.Dialed(h.node("b:1"), errRefused)
	h.tab.Probed(h.node("a:1"), h.tick(), nil, 0)
	h.tab.Fatal(h.node("c:1"), h.now, errRefused)
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1", "c:1", "d:1"), build); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "c:1", "d:1"), build); err != nil {
		t.Fatal(err)
	}
	h.downByProbe("a:1")
	h.now = h.now.Add(panicSpacing)
	// Down now: c:1 (fatal), d:1 (never up), a:1; b:1 drained away.
	var got []string
	for range 4 {
		got = append(got, h.panicPick())
	}
	if fmt.Sprint(got) != "[d:1 c:1 a:1 -]" {
		t.Fatalf("panic picks %v, want d:1 (never failed), c:1, a:1, then none", got)
	}
	h.tab.PanicDialed(h.node("c:1"), nil)
	if h.state("c:1") != Up {
		t.Fatal("c:1 did not come up")
	}
	h.downByProbe("c:1")
	h.tab.PanicDialed(h.node("a:1"), nil)
	h.tab.PanicDialed(h.node("d:1"), errRefused)
	h.now = h.now.Add(panicSpacing)
	if got := h.panicPick(); got != "-" {
		t.Fatalf("panic pick with a:1 up = %s", got)
	}
	h.downByProbe("a:1")
	got = got[:0]
	for range 3 {
		got = append(got, h.panicPick())
	}
	if fmt.Sprint(got) != "[d:1 c:1 a:1]" {
		t.Fatalf("panic picks %v, want d:1 c:1 a:1", got)
	}
}

func TestIsUpFollowsTheState(t *testing.T) {
	var h *harness
	var sawUp atomic.Int32
	h = newHarness(t, 1, 1, time.Second)
	h.tab.cfg.OnTransition = func(x Transition[*payload]) {
		if h.tab.IsUp(x.Node) {
			sawUp.Add(1)
		}
	}
	if err := h.tab.Start(nodes.StaticAddrs("a:1"), build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	if !h.tab.IsUp(a) {
		t.Fatal("IsUp false for a node trusted at start")
	}
	h.tab.Probed(a, h.tick(), errRefused, 0)
	if h.tab.IsUp(a) || sawUp.Load() != 0 {
		t.Fatalf("IsUp after the markdown: %v (true during its delivery %d times), want false", h.tab.IsUp(a), sawUp.Load())
	}
	h.tab.Probed(a, h.tick(), nil, 0)
	if !h.tab.IsUp(a) {
		t.Fatal("IsUp false after recovery")
	}
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	if h.tab.IsUp(h.node("c:1")) {
		t.Fatal("IsUp true for a node added at run time before its first probe")
	}
}

// TestUpSinceRefusesConnectionsOpenedBeforeAMarkdown: UpSince answers as IsUp for a connection
// opened since the node's latest down or draining transition, and false for one opened before
// it, also once the node is up again.
func TestUpSinceRefusesConnectionsOpenedBeforeAMarkdown(t *testing.T) {
	h := newHarness(t, 1, 1, time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	old := a.Epoch()
	if !h.tab.UpSince(a, old) {
		t.Fatal("UpSince false for a node trusted at start")
	}
	h.tab.Probed(a, h.tick(), errRefused, 0)
	if h.tab.UpSince(a, old) || h.tab.UpSince(a, a.Epoch()) {
		t.Fatal("UpSince true for a down node")
	}
	h.tab.Probed(a, h.tick(), nil, 0)
	if h.tab.UpSince(a, old) {
		t.Fatal("UpSince true for a connection opened before the markdown")
	}
	if !h.tab.UpSince(a, a.Epoch()) {
		t.Fatal("UpSince false for a connection opened after the recovery")
	}
	// A drain and a listing again are a markdown too; an open connection keeps a draining.
	mid := a.Epoch()
	h.tab.Charge(a)
	h.tab.SetNodes(nodes.StaticAddrs("b:1"), build)
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	h.tab.Probed(a, h.tick(), nil, 0)
	if !h.tab.IsUp(a) || h.tab.UpSince(a, mid) || !h.tab.UpSince(a, a.Epoch()) {
		t.Fatalf("after a drain and a recovery: IsUp %v, UpSince(before) %v, UpSince(now) %v",
			h.tab.IsUp(a), h.tab.UpSince(a, mid), h.tab.UpSince(a, a.Epoch()))
	}
}

// TestTransitionsAreDeliveredInOrder: many goroutines flap one node; every transition reaches
// OnTransition once, one call at a time, each starting where the one before it ended.
func TestTransitionsAreDeliveredInOrder(t *testing.T) {
	var (
		mu      sync.Mutex
		got     []Transition[*payload]
		inside  atomic.Int32
		overlap atomic.Bool
	)
	tab, err := New(Config[*payload]{
		RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: probeInterval,
		OnTransition: func(x Transition[*payload]) {
			if inside.Add(1) > 1 {
				overlap.Store(true)
			}
			mu.Lock()
			got = append(got, x)
			mu.Unlock()
			if rand.IntN(4) == 0 {
				time.Sleep(time.Microsecond) // widen the window in which others make transitions
			}
			inside.Add(-1)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Start(nodes.StaticAddrs("a:1"), build); err != nil {
		t.Fatal(err)
	}
	a := tab.Nodes(nil)[0]
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				var err error
				if (g+i)%2 == 0 {
					err = errRefused
				}
				tab.Probed(a, start.Add(time.Duration(i)*probeInterval), err, 0)
			}
		}()
	}
	wg.Wait()
	if overlap.Load() {
		t.Fatal("OnTransition calls overlapped")
	}
	v := tab.Snapshot(nil)[0]
	if uint64(len(got)) != v.Transitions || len(got) < 2 {
		t.Fatalf("%d transitions delivered, the table counted %d; want all of them (at least 2)", len(got), v.Transitions)
	}
	prev := Up
	for i, x := range got {
		if x.From != prev {
			t.Fatalf("transition %d goes %v>%v after one that ended %v: delivered out of order", i, x.From, x.To, prev)
		}
		prev = x.To
	}
	if prev != v.State {
		t.Fatalf("last delivered transition ends %v, the node is %v", prev, v.State)
	}
}
