package detect

import (
	"github.com/lbd-go/lbd/internal/testkit"

	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeNode struct {
	name       string
	open, idle int
}

func (n *fakeNode) String() string { return n.name }

type ask struct {
	node    *fakeNode
	n, idle int // what was asked, and how many were idle when asked
}

// fakeCluster is a Cluster over fakeNodes. When static is set, Retire reports
// success without changing the counts, so every round has work to do.
type fakeCluster struct {
	mu       sync.Mutex
	nodes    []*fakeNode
	static   bool
	asks     []ask
	rounds   int
	inflight atomic.Int32
	overlap  atomic.Bool
	block    chan struct{} // if set, Loads waits on it
	inLoads  chan struct{} // if set, Loads signals it
}

func newFakeCluster(open, idle []int) *fakeCluster {
	p := &fakeCluster{}
	for i := range open {
		p.nodes = append(p.nodes, &fakeNode{name: fmt.Sprint("n", i), open: open[i], idle: idle[i]})
	}
	return p
}

func (p *fakeCluster) enter() {
	if p.inflight.Add(1) != 1 {
		p.overlap.Store(true)
	}
}

func (p *fakeCluster) leave() { p.inflight.Add(-1) }

func (p *fakeCluster) Loads(buf []Load) []Load {
	p.enter()
	defer p.leave()
	if p.inLoads != nil {
		p.inLoads <- struct{}{}
	}
	if p.block != nil {
		<-p.block
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rounds++
	for _, n := range p.nodes {
		buf = append(buf, Load{Node: n, Open: n.open, Idle: n.idle})
	}
	return buf
}

// Retire closes idle connections first and marks in-use ones for the rest,
// which stop counting as open at once, as the real cluster does.
func (p *fakeCluster) Retire(node any, n int) int {
	p.enter()
	defer p.leave()
	p.mu.Lock()
	defer p.mu.Unlock()
	fn := node.(*fakeNode)
	p.asks = append(p.asks, ask{node: fn, n: n, idle: fn.idle})
	got := min(n, fn.open)
	if !p.static {
		fn.idle -= min(got, fn.idle)
		fn.open -= got
	}
	return got
}

func (p *fakeCluster) roundCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds
}

func (p *fakeCluster) opens() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, n := range p.nodes {
		out = append(out, n.open)
	}
	return out
}

func (p *fakeCluster) takeAsks() []ask {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.asks
	p.asks = nil
	return a
}

// refill opens n new connections, each on the emptiest node, as a pool
// that always dials the least-loaded node would.
func (p *fakeCluster) refill(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		least := p.nodes[0]
		for _, x := range p.nodes {
			if x.open < least.open {
				least = x
			}
		}
		least.open++
		least.idle++
	}
}

func retiredString(rs []Retired) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%v:%d ", r.Node, r.Count)
	}
	return s
}

func mustRebalancer(t *testing.T, cluster Cluster, cfg RebalancerConfig) *Rebalancer {
	t.Helper()
	r, err := NewRebalancer(cluster, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestNewRebalancerValidatesConfig(t *testing.T) {
	cluster := newFakeCluster(nil, nil)
	if _, err := NewRebalancer(nil, RebalancerConfig{Interval: time.Second}); err == nil {
		t.Error("nil cluster accepted")
	}
	for _, iv := range []time.Duration{0, -time.Second} {
		if _, err := NewRebalancer(cluster, RebalancerConfig{Interval: iv}); err == nil {
			t.Errorf("interval %v accepted", iv)
		}
	}
}

func TestRebalancerRetiresWholeSurplusInOneRound(t *testing.T) {
	cluster := newFakeCluster([]int{10, 10, 10, 0}, []int{10, 10, 10, 0})
	var reported [][]Retired
	r := mustRebalancer(t, cluster, RebalancerConfig{
		Interval: time.Hour,
		Report:   func(rs []Retired) { reported = append(reported, rs) },
	})

	got := r.RunOnce()
	if s, want := retiredString(got), "n0:2 n1:2 n2:3 "; s != want {
		t.Fatalf("retired %q, want %q", s, want)
	}
	if o, want := cluster.opens(), []int{8, 8, 7, 0}; !slices.Equal(o, want) {
		t.Fatalf("open counts %v after one round, want %v", o, want)
	}
	if len(reported) != 1 || retiredString(reported[0]) != retiredString(got) {
		t.Fatalf("reported %v, want one report of %v", reported, got)
	}

	// The pool opens the seven replacements on the emptiest node; the
	// spread is now one, and the next round leaves everything alone.
	cluster.refill(7)
	if o, want := cluster.opens(), []int{8, 8, 7, 7}; !slices.Equal(o, want) {
		t.Fatalf("open counts %v after refilling, want %v", o, want)
	}
	cluster.takeAsks()
	if got := r.RunOnce(); got != nil {
		t.Fatalf("balanced cluster: retired %v", retiredString(got))
	}
	if a := cluster.takeAsks(); len(a) != 0 {
		t.Fatalf("balanced cluster was asked to retire: %v", a)
	}
	if len(reported) != 1 {
		t.Fatalf("Report called for a round that retired nothing")
	}
}

func TestRebalancerAsksForTheWholeSurplus(t *testing.T) {
	// Surplus is 2, 2, 3, 0, but few connections are idle: a busy pool. The
	// whole surplus is still asked for (in-use ones close at their return).
	cluster := newFakeCluster([]int{10, 10, 10, 0}, []int{1, 0, 10, 0})
	r := mustRebalancer(t, cluster, RebalancerConfig{Interval: time.Hour})

	got := r.RunOnce()
	if s, want := retiredString(got), "n0:2 n1:2 n2:3 "; s != want {
		t.Fatalf("retired %q, want %q", s, want)
	}
	if o := cluster.opens(); !slices.Equal(o, []int{8, 8, 7, 0}) {
		t.Fatalf("open after one round = %v, want [8 8 7 0]", o)
	}
	// Marked connections no longer count; once the pool has dialed their
	// replacements on the emptiest node the next round has nothing to do, so no
	// connection is retired twice.
	cluster.mu.Lock()
	cluster.nodes[3].open = 7
	cluster.mu.Unlock()
	if got := r.RunOnce(); got != nil {
		t.Fatalf("second round retired %v, want nothing", retiredString(got))
	}
}

// shortCluster retires fewer connections than asked.
type shortCluster struct{ fakeCluster }

func (p *shortCluster) Retire(node any, n int) int {
	if node.(*fakeNode).name == "n1" {
		return 0
	}
	return min(n, 1)
}

func TestRebalancerReportsWhatTheClusterRetired(t *testing.T) {
	cluster := &shortCluster{*newFakeCluster([]int{10, 10, 10, 0}, []int{10, 10, 10, 0})}
	var reported []Retired
	r := mustRebalancer(t, cluster, RebalancerConfig{
		Interval: time.Hour,
		Report:   func(rs []Retired) { reported = rs },
	})
	got := r.RunOnce()
	if s, want := retiredString(got), "n0:1 n2:1 "; s != want {
		t.Fatalf("retired %q, want %q", s, want)
	}
	if retiredString(reported) != retiredString(got) {
		t.Fatalf("reported %v, returned %v", reported, got)
	}
	reported[0].Count = 99 // Report's slice is its own
	if got[0].Count != 1 {
		t.Fatal("Report's slice shares memory with RunOnce's result")
	}
}

func TestRebalancerLoopRunsEveryInterval(t *testing.T) {
	clk := newFakeClock()
	cluster := newFakeCluster([]int{4, 0}, []int{4, 0})
	cluster.static = true
	var reports atomic.Int32
	r := mustRebalancer(t, cluster, RebalancerConfig{
		Interval: 100 * time.Millisecond,
		Clock:    clk,
		Report:   func([]Retired) { reports.Add(1) },
	})
	r.Start()
	r.Start() // a second Start does nothing
	waitArmed(t, clk, 1)
	if n := clk.Created(); n != 1 {
		t.Fatalf("%d timers created, want one loop", n)
	}

	clk.Advance(99 * time.Millisecond)
	if n := cluster.roundCount(); n != 0 {
		t.Fatalf("%d rounds before the first interval elapsed", n)
	}
	for want := 1; want <= 3; want++ {
		clk.Advance(time.Millisecond)
		testkit.WaitFor(t, waitWithin, fmt.Sprint("round ", want), func() bool { return cluster.roundCount() == want && clk.Armed() == 1 })
		clk.Advance(99 * time.Millisecond)
		if n := cluster.roundCount(); n != want {
			t.Fatalf("%d rounds, want %d", n, want)
		}
	}
	if n := reports.Load(); n != 3 {
		t.Fatalf("%d reports, want 3", n)
	}

	r.Close()
	testkit.VerifyNone(t)
	if n := clk.Armed(); n != 0 {
		t.Fatalf("%d timers still armed after Close", n)
	}
	clk.Advance(time.Second)
	r.Start()
	r.Close()
	if got := r.RunOnce(); got != nil {
		t.Fatalf("RunOnce after Close retired %v", got)
	}
	if n := cluster.roundCount(); n != 3 {
		t.Fatalf("%d rounds after Close, want 3", n)
	}
	testkit.VerifyNone(t)
}

func TestRebalancerRealClock(t *testing.T) {
	cluster := newFakeCluster([]int{10, 10, 0}, []int{10, 10, 0})
	r, err := NewRebalancer(cluster, RebalancerConfig{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	testkit.WaitFor(t, waitWithin, "the loop to even out the cluster", func() bool {
		if cluster.roundCount() == 0 {
			return false
		}
		cluster.refill(20 - sum(cluster.opens()))
		return Surplus(loadsOf(cluster.opens()...)) == nil && cluster.roundCount() >= 3
	})
	r.Close()
	testkit.VerifyNone(t)
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func TestRebalancerRunOnceConcurrentWithLoop(t *testing.T) {
	cluster := newFakeCluster([]int{9, 3, 0}, []int{9, 3, 0})
	cluster.static = true
	var mu sync.Mutex
	var reports int
	r, err := NewRebalancer(cluster, RebalancerConfig{
		Interval: time.Millisecond,
		Report: func(rs []Retired) {
			mu.Lock()
			reports++
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := retiredString(r.RunOnce()); got != "n0:5 " {
					t.Errorf("RunOnce retired %q", got)
				}
			}
		})
	}
	wg.Wait()
	testkit.WaitFor(t, waitWithin, "some loop rounds", func() bool { return cluster.roundCount() >= 400+3 })
	r.Close()
	testkit.VerifyNone(t)
	if cluster.overlap.Load() {
		t.Fatal("Cluster methods ran concurrently")
	}
	mu.Lock()
	defer mu.Unlock()
	if reports != cluster.roundCount() {
		t.Fatalf("%d reports for %d rounds", reports, cluster.roundCount())
	}
}

func TestRebalancerCloseWaitsForRoundInProgress(t *testing.T) {
	cluster := newFakeCluster([]int{4, 0}, []int{4, 0})
	cluster.block = make(chan struct{})
	cluster.inLoads = make(chan struct{}, 1)
	r, err := NewRebalancer(cluster, RebalancerConfig{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan []Retired)
	go func() { ran <- r.RunOnce() }()
	<-cluster.inLoads

	closed := make(chan struct{})
	go func() {
		r.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a round was calling the cluster")
	case <-time.After(20 * time.Millisecond):
	}
	close(cluster.block)
	if got := retiredString(<-ran); got != "n0:2 " {
		t.Fatalf("round in progress retired %q", got)
	}
	<-closed
	cluster.takeAsks()
	if got := r.RunOnce(); got != nil || len(cluster.takeAsks()) != 0 {
		t.Fatal("RunOnce after Close used the cluster")
	}
	testkit.VerifyNone(t)
}

func TestRebalancerBalancedRoundDoesNotAllocate(t *testing.T) {
	cluster := newFakeCluster([]int{5, 5, 4, 4}, []int{1, 1, 1, 1})
	r := mustRebalancer(t, cluster, RebalancerConfig{Interval: time.Hour})
	r.RunOnce()
	if n := testing.AllocsPerRun(100, func() { r.RunOnce() }); n != 0 {
		t.Fatalf("%v allocations per balanced round, want 0", n)
	}
	// Nor does a round whose surplus finds nothing idle.
	cluster2 := newFakeCluster([]int{9, 0, 0}, []int{0, 0, 0})
	r2 := mustRebalancer(t, cluster2, RebalancerConfig{Interval: time.Hour})
	r2.RunOnce()
	if n := testing.AllocsPerRun(100, func() { r2.RunOnce() }); n != 0 {
		t.Fatalf("%v allocations per round with nothing idle, want 0", n)
	}
}

// Trigger runs a round at once, without waiting for the interval, and triggers within
// TriggerGap of a round wait for the gap's end and run one round between them.
func TestRebalancerTrigger(t *testing.T) {
	clk := newFakeClock()
	cluster := newFakeCluster([]int{4, 0}, []int{4, 0})
	cluster.static = true
	r := mustRebalancer(t, cluster, RebalancerConfig{Interval: time.Hour, TriggerGap: time.Second, Clock: clk})
	r.Trigger() // before Start: nothing runs, and Start's loop takes it at once
	r.Start()
	testkit.WaitFor(t, waitWithin, "the triggered round", func() bool { return cluster.roundCount() == 1 })
	r.Trigger()
	r.Trigger()
	r.Trigger()
	testkit.WaitFor(t, waitWithin, "the loop to wait out the gap", func() bool { return clk.Armed() == 1 })
	clk.Advance(999 * time.Millisecond)
	if n := cluster.roundCount(); n != 1 {
		t.Fatalf("%d rounds within the gap after a triggered round, want 1", n)
	}
	clk.Advance(time.Millisecond)
	testkit.WaitFor(t, waitWithin, "one round for three triggers", func() bool { return cluster.roundCount() == 2 })
	clk.Advance(10 * time.Second)
	if n := cluster.roundCount(); n != 2 {
		t.Fatalf("%d rounds, want 2: the triggers coalesced into one", n)
	}
	r.Close()
	r.Trigger() // after Close: nothing
	testkit.VerifyNone(t)
}
