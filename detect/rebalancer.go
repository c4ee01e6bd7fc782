package detect

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lbd-go/lbd/internal/clock"
)

// Cluster is what the rebalancer evens out: the up nodes and the physical
// connections database/sql's pool holds to them. The rebalancer never calls
// its methods concurrently with each other: rounds are serialized.
type Cluster interface {
	// Loads appends the current load of every up node to buf and returns
	// the extended slice. The rebalancer passes a buffer of length zero that
	// it reuses between rounds.
	Loads(buf []Load) []Load
	// Retire retires up to n connections of node and returns how many it
	// retired. Idle connections go first and close at once, so they no longer
	// count as open; when fewer are idle, in-use ones are marked to close when
	// they next return to the pool. It must never cut a connection in use (a
	// statement or transaction runs to its end), and connections it marked
	// must no longer count in Load.Open, so a later round does not retire
	// them twice.
	Retire(node any, n int) int
}

// Retired says how many connections one round retired from one node.
type Retired struct {
	// Node is the handle from Load.Node.
	Node any
	// Count is the number of connections retired; always greater than zero.
	Count int
}

// RebalancerConfig configures a Rebalancer.
type RebalancerConfig struct {
	// Interval is the time between the end of one round of the loop and the
	// start of the next; the first round comes one Interval after Start. It
	// must be greater than zero.
	Interval time.Duration
	// Clock schedules the rounds. Nil means clock.Real.
	Clock clock.Clock
	// Report, if not nil, is called at the end of every round that retired
	// at least one connection, whether the round was run by the loop or by
	// RunOnce, with one entry per node that lost connections, in the order
	// Cluster.Loads listed them. The slice is Report's own. Report runs while
	// the round still holds the rebalancer's lock, so reports arrive in
	// round order; it must not block for long and must not call RunOnce or
	// Close.
	Report func(retired []Retired)
	// TriggerGap is the least time between a round Trigger asks for and the round before it
	// (coalesced: triggers within it wait for its end and run one round). 0 means Interval/10.
	TriggerGap time.Duration
}

// Rebalancer evens out the connections a Cluster holds to its up nodes. When
// nodes come back up or are added, they start with no connections while the
// others keep theirs; since new connections go to the least-loaded node,
// retiring the fullest nodes' surplus idle connections lets the pool refill
// evenly.
//
// Each round reads the loads, computes the surplus with Surplus and retires
// it all at once, rather than one connection per round, so a spread of any
// size is evened out in a single round as far as idle connections allow.
// Shares follow the nodes' effective weights (Load.Weight): a node warming
// up has a share that grows with its warm-up, so the rounds move connections
// into it at that pace instead of all at once.
//
// All methods are safe for concurrent use.
type Rebalancer struct {
	cluster  Cluster
	interval time.Duration
	gap      time.Duration // RebalancerConfig.TriggerGap
	clk      clock.Clock
	report   func([]Retired)
	wake     chan struct{} // capacity 1: Trigger asked for a round

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	life    sync.Mutex // guards started and closed
	started bool
	closed  bool

	round   sync.Mutex // serializes rounds; guards the scratch buffers and stopped
	stopped bool       // set by Close once the loop is gone; no round runs after it
	loads   []Load
	scratch surplusBuf
}

// NewRebalancer returns a Rebalancer for cluster; call Start to run its loop.
// It returns an error if cluster is nil or cfg.Interval is not positive.
func NewRebalancer(cluster Cluster, cfg RebalancerConfig) (*Rebalancer, error) {
	switch {
	case cluster == nil:
		return nil, errors.New("detect: rebalancer needs a Cluster")
	case cfg.Interval <= 0:
		return nil, errors.New("detect: rebalancer interval must be positive")
	}
	r := &Rebalancer{
		cluster:  cluster,
		interval: cfg.Interval,
		gap:      cfg.TriggerGap,
		clk:      cfg.Clock,
		report:   cfg.Report,
		wake:     make(chan struct{}, 1),
	}
	if r.gap <= 0 {
		r.gap = cfg.Interval / 10
	}
	if r.clk == nil {
		r.clk = clock.Real
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// Start starts the loop on a goroutine of its own: a round every Interval,
// the first one Interval from now. Calling Start again, or after Close,
// does nothing.
func (r *Rebalancer) Start() {
	r.life.Lock()
	defer r.life.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	r.wg.Go(r.loop)
}

// RunOnce runs one round now, on the calling goroutine, and returns what it
// retired (nil if nothing). It may be called concurrently with the loop and
// with other RunOnce calls: rounds never overlap. After Close it does
// nothing and returns nil.
func (r *Rebalancer) RunOnce() []Retired {
	r.round.Lock()
	defer r.round.Unlock()
	if r.stopped {
		return nil
	}
	return r.roundLocked()
}

// Close stops the loop and waits for it, and for any round in progress, to
// finish; after Close returns, the rebalancer no longer calls the Cluster.
// Close is idempotent and may be called without Start.
func (r *Rebalancer) Close() {
	r.life.Lock()
	r.closed = true
	r.life.Unlock()
	r.cancel()
	r.wg.Wait()
	r.round.Lock()
	r.stopped = true
	r.loads = nil
	r.round.Unlock()
}

// Trigger asks the loop for a round now rather than at the end of the interval, when the loads'
// weights changed (a node slowed: the load policy's speed factors), at most one per
// TriggerGap. It never blocks; triggers before the round runs are one. Before Start or after
// Close it does nothing.
func (r *Rebalancer) Trigger() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Rebalancer) loop() {
	timer := r.clk.NewTimer(r.interval)
	defer timer.Stop()
	var last time.Time // the end of the latest round; zero before the first
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-timer.C():
		case <-r.wake:
			if wait := r.gap - r.clk.Now().Sub(last); wait > 0 {
				// Too soon after the last round: the timer brings the next one no later.
				if !timer.Stop() {
					select {
					case <-timer.C():
					default:
					}
				}
				timer.Reset(wait)
				continue
			}
		}
		r.round.Lock()
		if r.ctx.Err() == nil {
			r.roundLocked()
		}
		r.round.Unlock()
		last = r.clk.Now()
		timer.Reset(r.interval)
	}
}

// roundLocked runs one round; r.round must be held.
//
// For a node with surplus s it asks the cluster to retire s connections. A
// busy pool has almost nothing idle at any instant (a returned connection is taken
// again at once), so asking only for the idle ones would leave the surplus in
// place for as long as the load lasts; the cluster closes idle ones at once and
// marks in-use ones to close at their return. Clients are never made to wait
// for the rebalancer.
func (r *Rebalancer) roundLocked() []Retired {
	r.loads = r.cluster.Loads(r.loads[:0])
	defer clear(r.loads) // drop node handles until the next round

	s := r.scratch.compute(r.loads)
	if s == nil {
		return nil
	}
	var retired []Retired
	for i, l := range r.loads {
		if s[i] <= 0 {
			continue
		}
		if got := r.cluster.Retire(l.Node, s[i]); got > 0 {
			retired = append(retired, Retired{Node: l.Node, Count: got})
		}
	}
	if len(retired) > 0 && r.report != nil {
		r.report(append([]Retired(nil), retired...))
	}
	return retired
}
