package lbd

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// The Connector's loops: the rebalancer, warm-up and load ticks, and the stats logger; the
// prober, the transition loop and the stall loop are internal/health's. startLoops starts them;
// Close stops them and waits.

// startLoops starts the rebalancer, health's prober and loops and, with logStats, the stats
// logger.
func (c *Connector) startLoops() error {
	var err error
	c.rebal, err = detect.NewRebalancer(&rebalanceCluster{c: c}, detect.RebalancerConfig{
		Interval:   c.cfg.CheckBalanceInterval,
		TriggerGap: triggeredRebalanceGap,
		Clock:      c.cfg.clock,
		Report:     c.logRebalance,
	})
	if err != nil {
		return fmt.Errorf("lbd: %w", err)
	}
	if err := c.health.Start(); err != nil {
		return err
	}
	c.rebal.Start()
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

// minWarmupStep bounds how often the warm-up loop ticks, for windows set in code below a
// second (WithWarmup): finer steps buy nothing and would keep a core busy.
const minWarmupStep = 10 * time.Millisecond
