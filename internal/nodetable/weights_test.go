package nodetable

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

const testWarmup = 60 * time.Second

// warmHarness is a harness whose table warms nodes up over testWarmup, started with list.
func warmHarness(t *testing.T, list ...nodes.Node) *harness {
	t.Helper()
	return warmHarnessAfter(t, 0, list...)
}

// warmHarnessAfter is warmHarness whose recoveries warm up only after an outage of at least
// after (SlowStartAfterDown).
func warmHarnessAfter(t *testing.T, after time.Duration, list ...nodes.Node) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tab, err := New(Config[*payload]{
		RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second, ProbeInterval: probeInterval,
		Warmup: testWarmup, SlowStartAfterDown: after,
		OnTransition: func(x Transition[*payload]) {
			h.mu.Lock()
			h.trans = append(h.trans, x)
			h.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.tab = tab
	if err := tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	return h
}

// counts picks k connections and returns how many each address got.
func (h *harness) counts(k int) map[string]int {
	out := map[string]int{}
	for _, a := range h.picks(k) {
		out[a]++
	}
	return out
}

// churn is a pool whose connections close oldest first: each step closes one and dials one, as
// a pool under connection-lifetime turnover does. It returns which node each new connection
// went to.
type churn struct {
	h    *harness
	open []*Node[*payload] // oldest first
}

func (c *churn) fill(k int) {
	for range k {
		c.open = append(c.open, c.h.tab.Pick(nil))
	}
}

func (c *churn) step(k int) map[string]int {
	got := map[string]int{}
	for range k {
		c.h.tab.Release(c.open[0])
		c.open = c.open[1:]
		n := c.h.tab.Pick(nil)
		c.open = append(c.open, n)
		got[n.Addr()]++
	}
	return got
}

func TestWeightedShares(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1", Weight: 1}, nodes.Node{Addr: "b:1", Weight: 2},
		nodes.Node{Addr: "c:1", Weight: 3}, nodes.Node{Addr: "d:1"}) // d: no weight, the default 1
	got := h.counts(700)
	want := map[string]int{"a:1": 100, "b:1": 200, "c:1": 300, "d:1": 100}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("connections %v, want %v", got, want)
	}
	v, _ := h.view("d:1")
	if v.Weight != nodes.DefaultWeight || v.Warmth != 1 || v.Effective != 1 {
		t.Fatalf("d:1 weight %d warmth %v effective %v, want the default weight, warm", v.Weight, v.Warmth, v.Effective)
	}
	// The in-use pick of statement mode is weighted the same way.
	got = map[string]int{}
	for range 70 {
		got[h.tab.PickInUse(nil).Addr()]++
	}
	if want := map[string]int{"a:1": 10, "b:1": 20, "c:1": 30, "d:1": 10}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("in use %v, want %v", got, want)
	}
}

func TestNodesListedAtStartDoNotWarmUp(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"})
	for _, a := range []string{"a:1", "b:1"} {
		if v, _ := h.view(a); v.Warmth != 1 {
			t.Fatalf("%s warmth %v at start, want 1: nodes listed at start start warm", a, v.Warmth)
		}
	}
	if got := h.counts(10); got["a:1"] != 5 || got["b:1"] != 5 {
		t.Fatalf("connections %v, want 5 and 5", got)
	}
	// Nodes trusted while none is up start warm too: nothing else could take the load.
	h.tab.Probed(h.node("a:1"), h.tick(), errRefused, 0)
	h.tab.Probed(h.node("b:1"), h.now, errRefused, 0)
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.view("c:1"); v.State != Up || v.Warmth != 1 {
		t.Fatalf("c:1 %v warmth %v, want up and warm (trusted while no node was up)", v.State, v.Warmth)
	}
}

// TestWarmupRamp adds c to a loaded a and b and follows c's share of new connections over
// the window, with connections turning over all the while: it starts at the floor's share, not
// at all of them, rises step by step, and ends at a third.
func TestWarmupRamp(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"})
	pool := &churn{h: h}
	pool.fill(300)
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	start := h.tick()
	h.tab.Probed(h.node("c:1"), start, nil, 0)
	h.wantTransitions("c:1 down>up")
	if v, _ := h.view("c:1"); v.Warmth != 0 || math.Abs(v.Effective-WarmupFloor) > 1e-9 {
		t.Fatalf("c:1 warmth %v effective %v as it comes up, want 0 and the floor", v.Warmth, v.Effective)
	}
	prevHeld := 0
	for step := 0; step <= WarmupSteps; step++ {
		now := start.Add(time.Duration(step) * testWarmup / WarmupSteps)
		h.tab.Tick(now)
		v, _ := h.view("c:1")
		want := float64(step) / WarmupSteps
		if math.Abs(v.Warmth-want) > 1e-9 {
			t.Fatalf("step %d: warmth %v, want %v", step, v.Warmth, want)
		}
		pool.step(600) // two full turnovers: c's count settles at its weighted share
		v, _ = h.view("c:1")
		eff := max(want, WarmupFloor)
		share := 300 * eff / (2 + eff)
		if math.Abs(float64(v.Open)-share) > 1.5 {
			t.Fatalf("step %d (warmth %.2f): c:1 holds %d of 300, want %.1f", step, want, v.Open, share)
		}
		if v.Open < prevHeld {
			t.Fatalf("step %d: c:1's share fell from %d to %d while warming", step, prevHeld, v.Open)
		}
		prevHeld = v.Open
	}
	if prevHeld != 100 {
		t.Fatalf("c:1 holds %d of 300 once warm, want 100", prevHeld)
	}
	// Warm, it leaves the warming list: later ticks change nothing.
	h.tab.Tick(start.Add(2 * testWarmup))
	if len(h.tab.warming) != 0 {
		t.Fatalf("%d nodes still warming after the window", len(h.tab.warming))
	}
}

func TestWarmupRestartsOnRecovery(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1", Weight: 4})
	b := h.node("b:1")
	h.tab.Probed(b, h.tick(), errRefused, 0)
	h.tab.Probed(b, h.tick(), nil, 0)
	if v, _ := h.view("b:1"); v.State != Down || v.Warmth != 1 {
		t.Fatalf("b:1 %v warmth %v after one good probe, want down (recover count 2)", v.State, v.Warmth)
	}
	up := h.tick()
	h.tab.Probed(b, up, nil, 0)
	v, _ := h.view("b:1")
	if v.State != Up || v.Warmth != 0 || math.Abs(v.Effective-4*WarmupFloor) > 1e-9 {
		t.Fatalf("b:1 %v warmth %v effective %v after recovery, want up, warming from the floor of weight 4", v.State, v.Warmth, v.Effective)
	}
	h.tab.Tick(up.Add(testWarmup / 2))
	if v, _ := h.view("b:1"); v.Warmth != 0.5 || v.Effective != 2 {
		t.Fatalf("b:1 warmth %v effective %v half-way, want 0.5 and 2", v.Warmth, v.Effective)
	}
	// Down again half-way: the next recovery starts from the floor again, not from half.
	h.tab.Probed(b, h.tick(), errRefused, 0)
	h.tab.Probed(b, h.tick(), nil, 0)
	again := h.tick()
	h.tab.Probed(b, again, nil, 0)
	h.tab.Tick(again)
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth != 0 {
		t.Fatalf("b:1 %v warmth %v after its second recovery, want up from 0", v.State, v.Warmth)
	}
	if len(h.tab.warming) != 1 {
		t.Fatalf("%d entries in the warming list, want b:1 once", len(h.tab.warming))
	}
}

// TestShortOutageSkipsSlowStart: a node back from an outage shorter than SlowStartAfterDown
// comes back at the weight it had (warm, or its warm-up going on); one down longer warms up
// from the floor; a node added at run time always does.
func TestShortOutageSkipsSlowStart(t *testing.T) {
	const after = 30 * time.Second
	h := warmHarnessAfter(t, after, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"})
	b := h.node("b:1")
	recover := func(at time.Time) {
		h.now = at
		h.tab.Probed(b, h.now, nil, 0)
		h.tab.Probed(b, h.tick(), nil, 0)
		h.tab.Tick(h.now)
	}
	down := h.tick()
	h.tab.Probed(b, down, errRefused, 0)
	recover(down.Add(3 * time.Second))
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth != 1 || v.Effective != 1 {
		t.Fatalf("b:1 %v warmth %v effective %v after a 3 s outage, want up and warm", v.State, v.Warmth, v.Effective)
	}
	down = h.tick()
	h.tab.Probed(b, down, errRefused, 0)
	h.tab.Probed(b, down.Add(time.Second), errRefused, 0) // later failed probes do not move the outage's start
	recover(down.Add(after))
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth >= 0.1 {
		t.Fatalf("b:1 %v warmth %v after a %v outage, want up and warming from the start", v.State, v.Warmth, after+probeInterval)
	}
	// Half-way through that warm-up, a short outage: it goes on where it was.
	half := h.now.Add(testWarmup / 2)
	h.tab.Tick(half)
	h.now = half
	h.tab.Probed(b, h.now, errRefused, 0)
	recover(h.now.Add(2 * time.Second))
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth < 0.5 || v.Warmth >= 1 {
		t.Fatalf("b:1 %v warmth %v after a short outage half-way through its warm-up, want it going on from there", v.State, v.Warmth)
	}
	// A node added at run time warms up however it got there.
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1"}, {Addr: "c:1"}}, build); err != nil {
		t.Fatal(err)
	}
	c := h.node("c:1")
	h.tab.Probed(c, h.tick(), nil, 0)
	h.tab.Tick(h.now)
	if v, _ := h.view("c:1"); v.State != Up || v.Warmth >= 0.1 {
		t.Fatalf("added c:1 %v warmth %v, want up and warming", v.State, v.Warmth)
	}
}

func TestWarmupOff(t *testing.T) {
	h := started(t, "a:1") // Config.Warmup 0
	h.picks(2)
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	h.tab.Probed(h.node("b:1"), h.tick(), nil, 0)
	if v, _ := h.view("b:1"); v.Warmth != 1 {
		t.Fatalf("b:1 warmth %v with slow start off, want 1", v.Warmth)
	}
	if got := h.counts(2); got["b:1"] != 2 {
		t.Fatalf("connections %v, want both on b:1 (fewest open, no slow start)", got)
	}
	if h.tab.WarmupStep() != 0 {
		t.Fatalf("WarmupStep %v with slow start off, want 0", h.tab.WarmupStep())
	}
}

func TestWeightChangesFromSource(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"})
	if got := h.counts(20); got["a:1"] != 10 || got["b:1"] != 10 {
		t.Fatalf("connections %v, want 10 and 10", got)
	}
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1", Weight: 3}, {Addr: "b:1"}}, build); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.view("a:1"); v.Weight != 3 || v.Effective != 3 {
		t.Fatalf("a:1 weight %d effective %v, want 3 and 3", v.Weight, v.Effective)
	}
	// New connections go to a until it holds three times b's: 30 and 10.
	if got := h.counts(20); got["a:1"] != 20 {
		t.Fatalf("connections %v, want all 20 new ones on a:1", got)
	}
	// Weight 0 from the source is the default again.
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.view("a:1"); v.Weight != nodes.DefaultWeight {
		t.Fatalf("a:1 weight %d after the source dropped it, want the default", v.Weight)
	}
	if got := h.counts(20); got["b:1"] != 20 {
		t.Fatalf("connections %v, want all 20 on b:1 (10 against a's 30)", got)
	}
}

func TestWeightedPickAndReleaseAllocateNothing(t *testing.T) {
	h := warmHarness(t, nodes.Node{Addr: "a:1", Weight: 2}, nodes.Node{Addr: "b:1"})
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1", "c:1"), build)
	h.tab.Probed(h.node("c:1"), h.tick(), nil, 0) // warming
	skip := []*Node[*payload]{h.node("a:1")}
	h.tab.Release(h.tab.Pick(nil))
	if n := testing.AllocsPerRun(1000, func() {
		h.tab.Release(h.tab.Pick(skip))
		h.tab.Unclaim(h.tab.PickInUse(nil))
		h.tab.Tick(h.now.Add(time.Second))
	}); n != 0 {
		t.Fatalf("weighted pick, release and tick allocate %v times", n)
	}
}

// TestErrorEjectionWarmsUpAgain: a node back from an ejection for the errors it answered while
// passing its probes (Eject) warms up, however short its hold was; one whose ejection a failed
// probe confirmed (it was unreachable) is back from a short outage and comes back warm.
func TestErrorEjectionWarmsUpAgain(t *testing.T) {
	h := warmHarnessAfter(t, 30*time.Second, nodes.Node{Addr: "a:1"}, nodes.Node{Addr: "b:1"}, nodes.Node{Addr: "c:1"})
	h.tab.cfg.MaxEjectionPercent, h.tab.cfg.BaseEjectionTime = 50, time.Second
	b := h.node("b:1")
	recover := func() {
		for range 3 {
			h.tab.Probed(b, h.tick(), nil, 0)
		}
		h.tab.Tick(h.now)
	}
	if !h.eject("b:1") || h.state("b:1") != Down {
		t.Fatal("b:1 was not ejected by a confirmed signal")
	}
	recover()
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth != 1 {
		t.Fatalf("b:1 %v warmth %v after an ejection its failed probe confirmed, a few seconds long; want up and warm", v.State, v.Warmth)
	}
	h.now = h.now.Add(time.Minute) // past the back-off of the first ejection
	if !h.tab.Eject(b, h.now, "error rate: 90% of its statements failed") || h.state("b:1") != Down {
		t.Fatal("b:1 was not ejected for its error rate")
	}
	recover()
	if v, _ := h.view("b:1"); v.State != Up || v.Warmth >= 0.1 {
		t.Fatalf("b:1 %v warmth %v after an ejection for its errors, a few seconds long; want up and warming", v.State, v.Warmth)
	}
}
