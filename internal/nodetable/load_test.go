package nodetable

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// loadHarness is a harness whose table picks by load, started with nodes a, b and c.
func loadHarness(t *testing.T, leastLoad bool) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Now()}
	tab, err := New(Config[*payload]{
		RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second, ProbeInterval: probeInterval,
		LeastLoad: leastLoad,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.tab = tab
	if err := tab.Start([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1"}, {Addr: "c:1"}}, build); err != nil {
		t.Fatal(err)
	}
	return h
}

// feed advances the harness's clock by d, observing a sample of rtt on each of the named nodes
// every step (the nodes' round trips, sampled together).
func (h *harness) feed(d, step time.Duration, rtt map[string]time.Duration) {
	for end := h.now.Add(d); h.now.Before(end); {
		h.now = h.now.Add(step)
		for addr, x := range rtt {
			h.tab.Observe(h.node(addr), h.now, x)
		}
	}
}

func (h *harness) speed(addr string) float64 {
	h.t.Helper()
	v, _ := h.view(addr)
	return v.Speed
}

func TestLatencyEstimate(t *testing.T) {
	h := loadHarness(t, true)
	a := h.node("a:1")
	if got := h.tab.Latency(a, h.now); got != 0 {
		t.Fatalf("latency before any sample is %v, want 0", got)
	}
	ms := time.Millisecond
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": ms})
	if got := h.tab.Latency(a, h.now); got < 990*time.Microsecond || got > 1010*time.Microsecond {
		t.Fatalf("steady 1 ms samples give an estimate of %v", got)
	}
	// One stalled statement moves it little: it counts as twice the estimate at most.
	h.feed(ms, ms, map[string]time.Duration{"a:1": 500 * ms})
	if got := h.tab.Latency(a, h.now); got > 1010*time.Microsecond {
		t.Errorf("one 500 ms sample took the estimate to %v", got)
	}
	// A lasting slowdown to 3 ms: the estimate passes 2 ms within two windows.
	h.feed(2*LatencyWindow, ms, map[string]time.Duration{"a:1": 3 * ms})
	if got := h.tab.Latency(a, h.now); got < 2*ms || got > 3*ms {
		t.Errorf("after %v of 3 ms samples the estimate is %v, want from 2 to 3 ms", 2*LatencyWindow, got)
	}
	// Idle, it decays toward 0 with LatencyDecay.
	before := h.tab.Latency(a, h.now)
	got := h.tab.Latency(a, h.now.Add(LatencyDecay))
	if want := time.Duration(float64(before) / math.E); got < want-10*time.Microsecond || got > want+10*time.Microsecond {
		t.Errorf("after %v without samples the estimate is %v, want about %v", LatencyDecay, got, want)
	}
	h.tab.Observe(a, h.now, 0) // ignored
	h.tab.Observe(a, h.now, -ms)
	if got := h.tab.Latency(a, h.now); got != before {
		t.Errorf("round trips of 0 and below moved the estimate from %v to %v", before, got)
	}
}

func TestTickLoadSlowsASlowNode(t *testing.T) {
	h := loadHarness(t, true)
	ms := time.Millisecond
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 9 * ms, "b:1": 10 * ms, "c:1": 30 * ms})
	tickLoad(h.tab, h.now)
	// b is the reference (the median, 10 ms); a is faster; c, over the limit (10×1.5+0.5 ms),
	// is slowed by its speed against the reference plus the floor's noise:
	// 16×log2(30/10.5) rounds up to 25 steps, a factor of 2^(-25/16), about a third.
	for _, a := range []string{"a:1", "b:1"} {
		if s := h.speed(a); s != 1 {
			t.Errorf("%s at or below the median: speed factor %v, want 1", a, s)
		}
	}
	if s, want := h.speed("c:1"), math.Exp2(-25.0/SpeedSteps); s != want {
		t.Errorf("speed factor of a node three times slower is %v, want %v", s, want)
	}
	// The open connections go by the whole effective weight: c holds about a third of a fast
	// node's.
	got := h.counts(50)
	if got["a:1"] < 20 || got["b:1"] < 20 || got["c:1"] < 6 || got["c:1"] > 8 {
		t.Errorf("50 picks went %v, want about a:21 b:21 c:7", got)
	}
	// Back to speed: the factor rises RiseSteps steps per tick, however fast the node is now.
	h.feed(4*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 10 * ms})
	for i := 1; i <= (25+RiseSteps-1)/RiseSteps; i++ {
		h.tab.TickLoad(h.now)
		if want := math.Exp2(-float64(max(25-RiseSteps*i, 0)) / SpeedSteps); math.Abs(h.speed("c:1")-want) > 1e-9 {
			t.Fatalf("tick %d after recovery: speed factor %v, want %v", i, h.speed("c:1"), want)
		}
	}
	if h.tab.byOpen[nodes.RoleUnknown].Weighted() {
		t.Error("with every node back at full speed the index stayed weighted (heap); want the O(1) buckets")
	}
}

func TestTickLoadEqualNodesStayUnweighted(t *testing.T) {
	h := loadHarness(t, true)
	us := time.Microsecond
	// Within 50% plus 500 µs of the fastest: 2.0, 2.6 and 3.4 ms.
	h.feed(2*time.Second, time.Millisecond, map[string]time.Duration{"a:1": 2000 * us, "b:1": 2600 * us, "c:1": 3400 * us})
	tickLoad(h.tab, h.now)
	for _, a := range []string{"a:1", "b:1", "c:1"} {
		if s := h.speed(a); s != 1 {
			t.Errorf("%s: speed factor %v within the band, want 1", a, s)
		}
	}
	if h.tab.byInUse[nodes.RoleUnknown].Weighted() {
		t.Error("nodes within the band put the index in heap mode")
	}
	got := h.counts(30)
	if got["a:1"] != 10 || got["b:1"] != 10 || got["c:1"] != 10 {
		t.Errorf("30 picks went %v, want 10 each", got)
	}
}

func TestTickLoadIdleNodeIsTriedAgain(t *testing.T) {
	h := loadHarness(t, true)
	ms := time.Millisecond
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 40 * ms})
	tickLoad(h.tab, h.now)
	if s := h.speed("c:1"); s >= 1 {
		t.Fatalf("slow node's speed factor %v", s)
	}
	// c gets no more samples; a and b keep answering. c's estimate decays toward zero, so c is
	// at full speed again once it has decayed into the band and enough ticks have passed.
	for range 200 {
		h.feed(LoadTick, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms})
		h.tab.TickLoad(h.now)
	}
	if s := h.speed("c:1"); s != 1 {
		t.Errorf("after 20 s without samples the slow node's speed factor is %v, want 1 (tried again)", s)
	}
}

func TestTickLoadOffWithoutLeastLoad(t *testing.T) {
	h := loadHarness(t, false)
	ms := time.Millisecond
	h.feed(time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 100 * ms})
	tickLoad(h.tab, h.now)
	if s := h.speed("c:1"); s != 1 {
		t.Errorf("least-connections: speed factor %v, want 1", s)
	}
	if got := h.tab.Latency(h.node("c:1"), h.now); got < 90*ms {
		t.Errorf("least-connections keeps estimates too; got %v for 100 ms samples", got)
	}
}

// TestLoadBenchmarkSetupSlowsNodes keeps BenchmarkPickLeastLoad honest: its slow variant must
// put the index in heap mode, which a benchmark cannot check itself.
func TestLoadBenchmarkSetupSlowsNodes(t *testing.T) {
	h := loadHarness(t, true)
	now := h.now
	for i, n := range h.tab.Nodes(nil) {
		rtt := time.Millisecond
		if i == 0 {
			rtt = 3 * time.Millisecond
		}
		h.tab.Observe(n, now.Add(-LatencyWindow), rtt)
		h.tab.Observe(n, now, rtt)
	}
	tickLoad(h.tab, now)
	slowed := h.node(h.tab.Nodes(nil)[0].Addr()).slot()
	if slowed == int(nodes.RoleUnknown) || !h.tab.byOpen[slowed].Weighted() || h.tab.byOpen[nodes.RoleUnknown].Weighted() {
		t.Fatal("one node at 3 ms among nodes at 1 ms is not alone in a weighted index of slowed nodes")
	}
}

// tickLoad calls TickLoad SlowAfterTicks times at now: a node over the limit all along is
// slowed by then.
func tickLoad[P any](t *Table[P], now time.Time) {
	for range SlowAfterTicks {
		t.TickLoad(now)
	}
}

// TestTickLoadWaitsForALastingSlowdown: an estimate that calls for a lower speed factor at
// fewer than SlowAfterTicks ticks in a row (a host's stall) slows nothing; one that lasts does.
func TestTickLoadWaitsForALastingSlowdown(t *testing.T) {
	h := loadHarness(t, true)
	ms := time.Millisecond
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 40 * ms})
	for i := 1; i < SlowAfterTicks; i++ {
		h.tab.TickLoad(h.now)
		if s := h.speed("c:1"); s != 1 {
			t.Fatalf("tick %d over the limit: speed factor %v, want 1 until it lasts %d ticks", i, s, SlowAfterTicks)
		}
	}
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 10 * ms})
	h.tab.TickLoad(h.now) // back within the band: the count starts again
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 40 * ms})
	h.tab.TickLoad(h.now)
	if s := h.speed("c:1"); s != 1 {
		t.Fatalf("one tick over the limit after a tick within it slowed c:1 to %v", s)
	}
	for range SlowAfterTicks - 1 {
		h.tab.TickLoad(h.now)
	}
	if s := h.speed("c:1"); s >= 1 {
		t.Fatalf("%d ticks in a row over the limit left c:1 at full speed", SlowAfterTicks)
	}
}

func TestReferenceIsTheMedian(t *testing.T) {
	for _, tc := range []struct {
		ests []float64
		want float64
	}{
		{nil, math.Inf(1)},
		{[]float64{5}, 5},
		{[]float64{9, 5}, 5},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 9, 1, 5}, 4},
		{[]float64{7, 7, 7, 7, 30}, 7},
		{[]float64{30, 2, 3, 1, 40, 50, 4}, 4},
	} {
		if got := reference(append([]float64(nil), tc.ests...)); got != tc.want {
			t.Errorf("reference(%v) = %v, want %v", tc.ests, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		xs := make([]float64, 3+r.IntN(40))
		for i := range xs {
			xs[i] = float64(r.IntN(20))
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		if got, want := reference(xs), sorted[(len(sorted)-1)/2]; got != want {
			t.Fatalf("reference of %v = %v, want %v", sorted, got, want)
		}
	}
}

// TestTickLoadLeavesANodeJustOverTheLimit: a node at full speed whose estimate is over the limit
// by less than EnterSlowSteps steps keeps its full weight; one clearly over it is slowed.
func TestTickLoadLeavesANodeJustOverTheLimit(t *testing.T) {
	h := loadHarness(t, true)
	ms := time.Millisecond
	// limit = 10 × 1.5 + 0.5 = 15.5 ms; 17 ms is 2^(2.1/16) over it.
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 17 * ms})
	tickLoad(h.tab, h.now)
	if s := h.speed("c:1"); s != 1 {
		t.Fatalf("a node just over the limit was slowed to %v", s)
	}
	h.feed(2*time.Second, ms, map[string]time.Duration{"a:1": 10 * ms, "b:1": 10 * ms, "c:1": 25 * ms})
	tickLoad(h.tab, h.now)
	if s := h.speed("c:1"); s >= 0.7 {
		t.Fatalf("a node 60%% over the limit kept a speed factor of %v", s)
	}
}

// TestEstimateIsNotWeightedByItsOwnRoundTrip: a node answering statement after statement and a
// node asked once in a while, with the same round trips (1 ms or 9 ms at random), get the same
// estimate, about their 5 ms mean: a sample's weight is the time from the previous sample's
// start to its own, not the time to its own end, which would make its own round trip weigh it
// (the busy node measured 8 ms, E[x²]/E[x]).
func TestEstimateIsNotWeightedByItsOwnRoundTrip(t *testing.T) {
	var busy, sparse latency
	now := monoBase
	r := rand.New(rand.NewPCG(7, 8))
	var sumB, sumS float64
	for i := range 20000 {
		rtt := time.Millisecond
		if r.IntN(2) == 1 {
			rtt = 9 * time.Millisecond
		}
		now = now.Add(rtt)
		busy.observe(now, rtt) // back to back: each starts when the one before ended
		if i%3 == 0 {
			sparse.observe(now.Add(20*time.Millisecond), rtt) // a statement now and then, after a gap
		}
		if i >= 1000 { // the estimates over time, past the first seconds
			b, _, _, _ := busy.read(now)
			s, _, _, _ := sparse.read(now)
			sumB, sumS = sumB+b, sumS+s
		}
	}
	for name, est := range map[string]float64{"back to back": sumB / 19000, "sparse": sumS / 19000} {
		if got := time.Duration(est); got < 4*time.Millisecond || got > 6*time.Millisecond {
			t.Errorf("%s: mean estimate %v for round trips of 1 or 9 ms, want about 5 ms", name, got)
		}
	}
}
