// Package rebalance is the rebalancer's view of the node table: which nodes' pooled
// connections it evens out and with what weights (the nodes in rotation; none outside the
// local zone while the picks stay in it, nor outside the default group), the waves of slow
// start that bound each round, the retirement of surplus connections, and the log line of
// each round. detect.Rebalancer decides how many connections to move; this package shows it
// the table and acts on its verdicts.
//
// Imports run one way (internal/testkit's TestImportsRunOneWay checks it): this package shares
// internal/logical's and internal/health's tier, imports neither them nor the root, and is
// built by the root with a Config of values; it never holds the Connector.
package rebalance

import (
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// Config is what the rebalancer needs of the Connector.
type Config struct {
	Table         *nodetable.Table[*physical.Node]
	LocalZone     string        // the zone the picks stay in while enough of it is up; "" none
	StatementMode bool          // balance=statement: nodes outside the default group are left out, not emptied
	Interval      time.Duration // checkBalanceIntervalSeconds: the time between rounds
	Clock         clock.Clock   // schedules the rounds
	Logger        *slog.Logger  // receives a line per node a round retired connections from
}

// TriggerGap is the least time between rebalancing rounds the load policy brings forward: a
// node's speed factor falls at once, so a few rounds in the first seconds of a slowdown follow
// it down.
const TriggerGap = time.Second

// New returns the rebalancer over cfg.Table, not started. Errors: detect.NewRebalancer's (an
// interval that is not positive), prefixed "lbd: ".
func New(cfg Config) (*detect.Rebalancer, error) {
	var rounds atomic.Uint64 // rounds that retired connections, numbering the log lines
	r, err := detect.NewRebalancer(&cluster{cfg: &cfg}, detect.RebalancerConfig{
		Interval:   cfg.Interval,
		TriggerGap: TriggerGap,
		Clock:      cfg.Clock,
		Report: func(retired []detect.Retired) {
			// A line per node; round numbers the rounds that retired anything, so that the
			// lines of one round can be told apart.
			round := rounds.Add(1)
			for _, r := range retired {
				cfg.Logger.Info("lbd: rebalanced", "node", r.Node.(*physical.Node).Addr(), "retired", r.Count, "round", round)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lbd: %w", err)
	}
	return r, nil
}

// cluster shows the node table to the rebalancer.
type cluster struct {
	cfg   *Config
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
func (r *cluster) Loads(buf []detect.Load) []detect.Load {
	r.mu.Lock()
	r.views = r.cfg.Table.Snapshot(r.views[:0])
	_, _, local := r.cfg.Table.Zones()
	start := len(buf)
	total, fullWeight := 0, 0.0
	for _, v := range r.views {
		if v.State == nodetable.Up || r.cfg.Table.InRotation(v.Node) { // down ones serve below the panic threshold
			// Outside the local zone while the picks stay in it, a node's share is none: its
			// pooled connections move back into the zone as the rounds retire them.
			out := local && v.Zone != r.cfg.LocalZone
			if !r.cfg.Table.InGroup(v.Node, "") {
				// Outside the Connector's group, or isolated: in connection mode its pooled
				// connections have no place there; in statement mode they are those of the
				// statements that chose its group, not the default picks' to even out.
				if r.cfg.StatementMode {
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
func (r *cluster) waveBudget(total int, fullWeight float64) int {
	budget := -1
	if fullWeight <= 0 {
		clear(r.slow)
		return budget
	}
	seen := 0
	for _, v := range r.views {
		pn := v.Node.Payload()
		inRotation := v.State == nodetable.Up || r.cfg.Table.InRotation(v.Node)
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
func (r *cluster) Retire(n any, max int) int {
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
