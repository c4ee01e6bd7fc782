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

// fakePool is a Pool over fakeNodes. When static is set, Retire reports
// success without changing the counts, so every round has work to do.
type fakePool struct {
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

func newFakePool(open, idle []int) *fakePool {
	p := &fakePool{}
	for i := range open {
		p.nodes = append(p.nodes, &fakeNode{name: fmt.Sprint("n", i), open: open[i], idle: idle[i]})
	}
	return p
}

func (p *fakePool) enter() {
	if p.inflight.Add(1) != 1 {
		p.overlap.Store(true)
	}
}

func (p *fakePool) leave() { p.inflight.Add(-1) }

func (p *fakePool) Loads(buf []Load) []Load {
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
// which stop counting as open at once, as the real pool does.
func (p *fakePool) Retire(node any, n int) int {
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

func (p *fakePool) roundCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds
}

func (p *fakePool) opens() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, n := range p.nodes {
		out = append(out, n.open)
	}
	return out
}

func (p *fakePool) takeAsks() []ask {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.asks
	p.asks = nil
	return a
}

// refill opens n new connections, each on the emptiest node, as a pool
// that always dials the least-loaded node would.
func (p *fakePool) refill(n int) {
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

func mustRebalancer(t *testing.T, pool Pool, cfg RebalancerConfig) *Rebalancer {
	t.Helper()
	r, err := NewRebalancer(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestNewRebalancerValidatesConfig(t *testing.T) {
	pool := newFakePool(nil, nil)
	if _, err := NewRebalancer(nil, RebalancerConfig{Interval: time.Second}); err == nil {
		t.Error("nil pool accepted")
	}
	for _, iv := range []time.Duration{0, -time.Second} {
		if _, err := NewRebalancer(pool, RebalancerConfig{Interval: iv}); err == nil {
			t.Errorf("interval %v accepted", iv)
		}
	}
}

func TestRebalancerRetiresWholeSurplusInOneRound(t *testing.T) {
	pool := newFakePool([]int{10, 10, 10, 0}, []int{10, 10, 10, 0})
	var reported [][]Retired
	r := mustRebalancer(t, pool, RebalancerConfig{
		Interval: time.Hour,
		Report:   func(rs []Retired) { reported = append(reported, rs) },
	})

	got := r.RunOnce()
	if s, want := retiredString(got), "n0:2 n1:2 n2:3 "; s != want {
		t.Fatalf("retired %q, want %q", s, want)
	}
	if o, want := pool.opens(), []int{8, 8, 7, 0}; !slices.Equal(o, want) {
		t.Fatalf("open counts %v after one round, want %v", o, want)
	}
	if len(reported) != 1 || retiredString(reported[0]) != retiredString(got) {
		t.Fatalf("reported %v, want one report of %v", reported, got)
	}

	// The pool opens the seven replacements on the emptiest node; the
	// spread is now one, and the next round leaves everything alone.
	pool.refill(7)
	if o, want := pool.opens(), []int{8, 8, 7, 7}; !slices.Equal(o, want) {
		t.Fatalf("open counts %v after refilling, want %v", o, want)
	}
	pool.takeAsks()
	if got := r.RunOnce(); got != nil {
		t.Fatalf("balanced pool: retired %v", retiredString(got))
	}
	if a := pool.takeAsks(); len(a) != 0 {
		t.Fatalf("balanced pool was asked to retire: %v", a)
	}
	if len(reported) != 1 {
		t.Fatalf("Report called for a round that retired nothing")
	}
}

func TestRebalancerAsksForTheWholeSurplus(t *testing.T) {
	// Surplus is 2, 2, 3, 0, but few connections are idle: a busy pool. The
	// whole surplus is still asked for (in-use ones close at their return).
	pool := newFakePool([]int{10, 10, 10, 0}, []int{1, 0, 10, 0})
	r := mustRebalancer(t, pool, RebalancerConfig{Interval: time.Hour})

	got := r.RunOnce()
	if s, want := retiredString(got), "n0:2 n1:2 n2:3 "; s != want {
		t.Fatalf("retired %q, want %q", s, want)
	}
	if o := pool.opens(); !slices.Equal(o, []int{8, 8, 7, 0}) {
		t.Fatalf("open after one round = %v, want [8 8 7 0]", o)
	}
	// Marked connections no longer count; once the pool has dialed their
	// replacements on the emptiest node the next round has nothing to do, so no
	// connection is retired twice.
	pool.mu.Lock()
	pool.nodes[3].open = 7
	pool.mu.Unlock()
	if got := r.RunOnce(); got != nil {
		t.Fatalf("second round retired %v, want nothing", retiredString(got))
	}
}

// shortPool retires fewer connections than asked.
type shortPool struct{ fakePool }

func (p *shortPool) Retire(node any, n int) int {
	if node.(*fakeNode).name == "n1" {
		return 0
	}
	return min(n, 1)
}

func TestRebalancerReportsWhatThePoolRetired(t *testing.T) {
	pool := &shortPool{*newFakePool([]int{10, 10, 10, 0}, []int{10, 10, 10, 0})}
	var reported []Retired
	r := mustRebalancer(t, pool, RebalancerConfig{
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
	pool := newFakePool([]int{4, 0}, []int{4, 0})
	pool.static = true
	var reports atomic.Int32
	r := mustRebalancer(t, pool, RebalancerConfig{
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
	if n := pool.roundCount(); n != 0 {
		t.Fatalf("%d rounds before the first interval elapsed", n)
	}
	for want := 1; want <= 3; want++ {
		clk.Advance(time.Millisecond)
		waitFor(t, fmt.Sprint("round ", want), func() bool { return pool.roundCount() == want && clk.Armed() == 1 })
		clk.Advance(99 * time.Millisecond)
		if n := pool.roundCount(); n != want {
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
	if n := pool.roundCount(); n != 3 {
		t.Fatalf("%d rounds after Close, want 3", n)
	}
	testkit.VerifyNone(t)
}

func TestRebalancerRealClock(t *testing.T) {
	pool := newFakePool([]int{10, 10, 0}, []int{10, 10, 0})
	r, err := NewRebalancer(pool, RebalancerConfig{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	waitFor(t, "the loop to even out the pool", func() bool {
		if pool.roundCount() == 0 {
			return false
		}
		pool.refill(20 - sum(pool.opens()))
		return Surplus(loadsOf(pool.opens()...)) == nil && pool.roundCount() >= 3
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
	pool := newFakePool([]int{9, 3, 0}, []int{9, 3, 0})
	pool.static = true
	var mu sync.Mutex
	var reports int
	r, err := NewRebalancer(pool, RebalancerConfig{
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
	waitFor(t, "some loop rounds", func() bool { return pool.roundCount() >= 400+3 })
	r.Close()
	testkit.VerifyNone(t)
	if pool.overlap.Load() {
		t.Fatal("Pool methods ran concurrently")
	}
	mu.Lock()
	defer mu.Unlock()
	if reports != pool.roundCount() {
		t.Fatalf("%d reports for %d rounds", reports, pool.roundCount())
	}
}

func TestRebalancerCloseWaitsForRoundInProgress(t *testing.T) {
	pool := newFakePool([]int{4, 0}, []int{4, 0})
	pool.block = make(chan struct{})
	pool.inLoads = make(chan struct{}, 1)
	r, err := NewRebalancer(pool, RebalancerConfig{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan []Retired)
	go func() { ran <- r.RunOnce() }()
	<-pool.inLoads

	closed := make(chan struct{})
	go func() {
		r.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a round was calling the pool")
	case <-time.After(20 * time.Millisecond):
	}
	close(pool.block)
	if got := retiredString(<-ran); got != "n0:2 " {
		t.Fatalf("round in progress retired %q", got)
	}
	<-closed
	pool.takeAsks()
	if got := r.RunOnce(); got != nil || len(pool.takeAsks()) != 0 {
		t.Fatal("RunOnce after Close used the pool")
	}
	testkit.VerifyNone(t)
}

func TestRebalancerBalancedRoundDoesNotAllocate(t *testing.T) {
	pool := newFakePool([]int{5, 5, 4, 4}, []int{1, 1, 1, 1})
	r := mustRebalancer(t, pool, RebalancerConfig{Interval: time.Hour})
	r.RunOnce()
	if n := testing.AllocsPerRun(100, func() { r.RunOnce() }); n != 0 {
		t.Fatalf("%v allocations per balanced round, want 0", n)
	}
	// Nor does a round whose surplus finds nothing idle.
	pool2 := newFakePool([]int{9, 0, 0}, []int{0, 0, 0})
	r2 := mustRebalancer(t, pool2, RebalancerConfig{Interval: time.Hour})
	r2.RunOnce()
	if n := testing.AllocsPerRun(100, func() { r2.RunOnce() }); n != 0 {
		t.Fatalf("%v allocations per round with nothing idle, want 0", n)
	}
}
