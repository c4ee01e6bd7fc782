package lbd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// The Connector's loops: the prober, the rebalancer, the transition loop that reacts to node
// state changes in order, warm-up ticks, and the stats logger (the stall loop of passive
// outlier detection is in outlier.go). startLoops starts them; Close stops them and waits.

// startLoops starts the prober, the rebalancer and, with logStats, the stats logger.
func (c *Connector) startLoops() error {
	var err error
	c.prober, err = detect.NewProber(detect.ProberConfig{
		Interval: c.cfg.CheckHealthInterval,
		Timeout:  c.cfg.CheckHealthTimeout,
		Clock:    c.cfg.clock,
		Jitter:   c.cfg.jitter,
		Report: func(t detect.Target, err error, took time.Duration) {
			pt := t.(*nodeProbe)
			pt.good = err == nil
			if errors.Is(err, ErrNoCredentials) {
				// The probe never reached the node: no verdict on it.
				c.cfg.Logger.Warn("lbd: probe not run: no credentials for its dial", "node", pt.n.addr, "error", err.Error())
				return
			}
			if exception.ServerShutdown(err) || errors.Is(err, errStatusNotServing) {
				c.table.Shutdown(pt.n.tn, err)
			}
			if pt.confirming {
				c.table.Confirmed(pt.n.tn, c.cfg.clock.Now(), err, took)
			} else {
				c.table.Probed(pt.n.tn, c.cfg.clock.Now(), err, took)
			}
			c.observeProbe(pt.n.addr, took, err)
		},
	})
	if err != nil {
		return fmt.Errorf("lbd: %w", err)
	}
	c.rebal, err = detect.NewRebalancer(&rebalanceCluster{c: c}, detect.RebalancerConfig{
		Interval:   c.cfg.CheckBalanceInterval,
		TriggerGap: triggeredRebalanceGap,
		Clock:      c.cfg.clock,
		Report:     c.logRebalance,
	})
	if err != nil {
		c.prober.Close()
		return fmt.Errorf("lbd: %w", err)
	}
	for _, tn := range c.table.Nodes(nil) {
		at(tn).startProbing()
	}
	c.rebal.Start()
	c.loops.Add(1)
	go c.transitionLoop()
	if c.table.WarmupStep() > 0 {
		// The node table reads no clock of its own: a tick here keeps pick and release free
		// of time, and a node warming up (slow start) rises in steps of 5 % of the window.
		c.every(max(c.table.WarmupStep(), minWarmupStep), func() { c.table.Tick(c.cfg.clock.Now()) })
	}
	if c.cfg.BalancePolicy == LeastLoad {
		// The latency estimates measure real round trips, so the table is given the monotonic
		// time, not the Connector's clock; the clock only schedules the ticks.
		// A node slowed further brings the rebalancer's round forward (at most one a second),
		// so that pooled connections leave a slow proxy within seconds, not a whole interval.
		c.every(nodetable.LoadTick, func() {
			if c.table.TickLoad(time.Now()) {
				c.rebal.Trigger()
			}
		})
	}
	c.loops.Add(1)
	go c.watchStalls()
	if c.cfg.LogStats {
		c.every(c.cfg.StatsInterval, c.logStats)
	}
	return nil
}

// triggeredRebalanceGap is the least time between rebalancing rounds the load policy brings
// forward: a node's speed factor falls at once, so a few rounds in the first seconds of a
// slowdown follow it down.
const triggeredRebalanceGap = time.Second

// every runs fn every d, on a goroutine of its own, until Close: the Connector's loops that
// only tick (warm-up, load estimates, logStats).
func (c *Connector) every(d time.Duration, fn func()) {
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		t := c.cfg.clock.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C():
			}
			fn()
			t.Reset(d)
		}
	}()
}

// onTransition reacts to a node state change, on transitionLoop's goroutine, in the order the
// table made the changes: it is logged once, a down node's idle connections close at once (so
// no stale connection is handed out after it recovers) and its in-use ones at their next
// return; a draining node stops being probed. Checkouts do not wait for it: from the moment
// the table shows a node not up, a checkout of its connections answers driver.ErrBadConn.
func (c *Connector) onTransition(t nodetable.Transition[*physical.Node]) {
	n := at(t.Node)
	if t.Forgot {
		c.cfg.Logger.Info("lbd: node drained and removed", "node", n.addr)
		return
	}
	if t.Cause == nodetable.CauseRole {
		c.onRoleChange(n, t)
		return
	}
	if t.To == nodetable.Up {
		c.topo.changed()
	}
	level := slog.LevelInfo
	if t.To != nodetable.Up {
		level = slog.LevelWarn
	}
	c.cfg.Logger.Log(context.Background(), level, "lbd: node state changed",
		"node", n.addr, "from", t.From.String(), "to", t.To.String(), "cause", t.Cause.String(), "reason", t.Reason)
	switch t.To {
	case nodetable.Down:
		n.phys.RetireBefore(physical.NodeDown, t.Seq)
		if t.Cause != nodetable.CauseProbe {
			n.triggerProbe()
		}
	case nodetable.Draining:
		n.phys.RetireBefore(physical.NodeDraining, t.Seq)
		if t := n.probe.Swap(nil); t != nil && c.prober != nil {
			c.prober.Remove(t)
		}
	}
}

// rebalanceCluster shows the connector to the rebalancer.
type rebalanceCluster struct {
	c     *Connector
	mu    sync.Mutex                       // guards what follows
	views []nodetable.View[*physical.Node] // reused from round to round
	// slow holds the nodes in slow start as the rounds saw them: warming, or warm but still
	// short of their fair share. While one is, a round retires at most budget connections in
	// all (waveBudget), whatever the shares say; -1: no bound.
	slow   map[*physical.Node]bool
	budget int
}

// Loads implements detect.Cluster over the nodes in rotation: the up ones, and the down ones
// served below the panic threshold.
func (r *rebalanceCluster) Loads(buf []detect.Load) []detect.Load {
	r.mu.Lock()
	r.views = r.c.table.Snapshot(r.views[:0])
	_, _, local := r.c.table.Zones()
	start := len(buf)
	total, fullWeight := 0, 0.0
	for _, v := range r.views {
		if v.State == nodetable.Up || r.c.table.InRotation(v.Node) { // down ones serve below the panic threshold
			// Outside the local zone while the picks stay in it, a node's share is none: its
			// pooled connections move back into the zone as the rounds retire them.
			out := local && v.Zone != r.c.cfg.LocalZone
			if !r.c.table.InGroup(v.Node, "") {
				// Outside the Connector's group, or isolated: in connection mode its pooled
				// connections have no place there; in statement mode they are those of the
				// statements that chose its group, not the default picks' to even out.
				if r.c.cfg.Balance == BalanceStatement {
					continue
				}
				out = true
			}
			buf = append(buf, detect.Load{Node: v.Node.Payload(), Open: v.Open, Weight: v.Effective, Out: out})
			total += v.Open
			fullWeight += float64(v.Weight)
		}
	}
	r.budget = r.waveBudget(total, fullWeight)
	clear(r.views) // drop node handles until the next round
	r.mu.Unlock()
	for i := start; i < len(buf); i++ {
		idle, retiring := buf[i].Node.(*physical.Node).ConnCounts()
		buf[i].Idle = idle
		buf[i].Open -= retiring // already on their way out; do not retire them twice
	}
	return buf
}

// waveBudget bounds the waves of slow start: while a node the rounds saw warming has not yet
// reached its fair share (total × its weight / fullWeight, by full weights), a round retires
// at most a third of that share, at least one connection, so that the connections moved into
// it arrive in waves of at most a third of its share even when the warm-up window is short
// beside the rebalancing interval (HAProxy's slowstart and Envoy's slow start ramp the share;
// this bounds each step). It returns -1 when no node is in slow start. r.mu is held and
// r.views is the round's snapshot.
func (r *rebalanceCluster) waveBudget(total int, fullWeight float64) int {
	budget := -1
	if fullWeight <= 0 {
		clear(r.slow)
		return budget
	}
	seen := 0
	for _, v := range r.views {
		pn := v.Node.Payload()
		inRotation := v.State == nodetable.Up || r.c.table.InRotation(v.Node)
		if inRotation && v.Warmth < 1 {
			if r.slow == nil {
				r.slow = make(map[*physical.Node]bool)
			}
			r.slow[pn] = true
		}
		if !r.slow[pn] {
			continue
		}
		fair := float64(total) * float64(v.Weight) / fullWeight
		if !inRotation || (v.Warmth >= 1 && float64(v.Open) >= math.Floor(fair)) {
			delete(r.slow, pn)
			continue
		}
		seen++
		b := max(1, int(fair/3))
		if budget < 0 || b < budget {
			budget = b
		}
	}
	if seen == 0 {
		clear(r.slow) // nodes that left the table
	}
	return budget
}

// Retire implements detect.Cluster, within the round's wave budget.
func (r *rebalanceCluster) Retire(n any, max int) int {
	r.mu.Lock()
	if r.budget >= 0 {
		max = min(max, r.budget)
	}
	r.mu.Unlock()
	if max <= 0 {
		return 0
	}
	got := n.(*physical.Node).RetireSurplus(max)
	r.mu.Lock()
	if r.budget >= 0 {
		r.budget -= got
	}
	r.mu.Unlock()
	return got
}

// logRebalance logs what one round retired, a line per node; round numbers the rounds that
// retired anything, so that the lines of one round can be told apart.
func (c *Connector) logRebalance(retired []detect.Retired) {
	round := c.rebalRounds.Add(1)
	for _, r := range retired {
		c.cfg.Logger.Info("lbd: rebalanced", "node", r.Node.(*physical.Node).Addr(), "retired", r.Count, "round", round)
	}
}

// transitionQueue carries the node table's transitions to one goroutine per Connector, which
// logs them and retires connections (onTransition), in the order the table made them. The
// goroutine of a statement that reported an error only queues; gRPC serialises balancer
// updates on one goroutine the same way. What a checkout must not hand out is decided by the
// table's state itself (nodetable's UpSince), not by this goroutine having caught up.
type transitionQueue struct {
	mu   sync.Mutex
	list []nodetable.Transition[*physical.Node] // queued, oldest first
	done bool                                   // the goroutine has ended: transitions are handled where they are made
	wake chan struct{}                          // one pending wake-up at most
}

// queueTransition is the table's OnTransition: the table delivers one at a time, in order, so
// appending here keeps that order. Stats.Recent lists the transition at once, so that it agrees
// with the states Stats shows; the log line and the retiring follow on transitionLoop.
func (c *Connector) queueTransition(t nodetable.Transition[*physical.Node]) {
	now := c.cfg.clock.Now()
	if t.To == nodetable.Down && !t.Forgot {
		// Before the call that took the node down returns, and so before the probe it
		// asks for runs: that probe paces the next by it (NextProbeIn).
		at(t.Node).downAt.Store(now.UnixNano())
	}
	c.transitions.Add(Transition{At: now, Node: t.Node.Payload().Addr(), From: NodeState(t.From),
		To: NodeState(t.To), Cause: TransitionCause(t.Cause), Reason: t.Reason, Removed: t.Forgot,
		RoleFrom: t.RoleFrom, RoleTo: t.RoleTo})
	q := &c.trq
	q.mu.Lock()
	if q.done { // after Close: late transitions (a probe finishing, a node drained) are still logged
		q.mu.Unlock()
		c.onTransition(t)
		return
	}
	q.list = append(q.list, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// transitionLoop hands queued transitions to onTransition until Close, then those left.
func (c *Connector) transitionLoop() {
	defer c.loops.Done()
	q := &c.trq
	for {
		select {
		case <-q.wake:
		case <-c.stop:
		}
		stopping := c.closed.Load()
		for {
			q.mu.Lock()
			if len(q.list) == 0 {
				q.list = nil // do not keep a burst's backing array
				if stopping {
					q.done = true
				}
				q.mu.Unlock()
				break
			}
			t := q.list[0]
			q.list[0] = nodetable.Transition[*physical.Node]{}
			q.list = q.list[1:]
			q.mu.Unlock()
			c.onTransition(t)
		}
		if stopping {
			return
		}
	}
}

// minWarmupStep bounds how often the warm-up loop ticks, for windows set in code below a
// second (WithWarmup): finer steps buy nothing and would keep a core busy.
const minWarmupStep = 10 * time.Millisecond
