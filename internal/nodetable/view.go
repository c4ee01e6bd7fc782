package nodetable

import (
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// View is a read-only copy of one node's state and counts, taken under the table's mutex (the
// cumulative counters are read just after it, each on its own).
type View[P any] struct {
	Node       *Node[P]
	State      State
	Standby    bool       // probed, but out of the pick indexes
	Role       nodes.Role // what the node is for
	Lagging    bool       // a replica too far behind: out of the pick indexes (SetLagging)
	LagFloor   bool       // lagging, but kept serving by the lag floor (Config.MinServingReplicas)
	Open       int        // open physical connections, dials in flight included
	InUse      int        // physical connections claimed (statement mode's count)
	GoodProbes int        // consecutive good probes counted since the last failure or markdown
	LastErr    error      // the latest dial or probe failure held against the node; nil when none
	Weight     int        // the source's weight (nodes.DefaultWeight when it reported none)
	Warmth     float64    // warm-up progress as of the latest Tick, from 0 to 1 (1: warm)
	Effective  float64    // the weight the picks use: Weight × max(Warmth, WarmupFloor) × Speed
	Speed      float64    // the speed factor TickLoad gave the node, from 1/16 to 1 (1 without Config.LeastLoad)
	Zone       string     // the node's zone from its source ("" when none)
	Groups     string     // the node's groups from its source, in name order (nodes.Node.Groups; "" when none)

	Dials         uint64            // successful dials
	DialFailures  uint64            // failed dials, refused ones included
	Probes        uint64            // probes run
	ProbeFailures uint64            // probes failed
	FatalErrors   uint64            // errors judged fatal to a connection
	Signals       uint64            // passive signals noted against the node (Suspect)
	Transitions   uint64            // state changes
	TransitionsBy [NumCauses]uint64 // state changes by Cause (CauseRole: role changes)
	LastProbe     time.Duration     // how long the latest probe took; 0 before the first
}

// Addr returns the node's "host:port".
func (v View[P]) Addr() string { return v.Node.addr }

// Snapshot appends a view of every node in the table, in the order they became known, to buf
// and returns the extended slice. A caller that reuses buf allocates nothing once it is large
// enough.
func (t *Table[P]) Snapshot(buf []View[P]) []View[P] {
	t.mu.Lock()
	start := len(buf)
	for _, n := range t.order {
		buf = append(buf, View[P]{
			Node: n, State: n.state, Standby: n.standby, Role: n.role, Lagging: n.lagging, LagFloor: n.floorServing, Open: n.byOpen.Count(), InUse: n.byInUse.Count(),
			GoodProbes: n.goodProbes, LastErr: n.lastErr,
			Weight: n.weight, Warmth: n.warmth, Effective: effective(n), Speed: speedOf(n.slow), Zone: n.zone,
			Groups: n.groupsNow.Load().names,
		})
	}
	t.mu.Unlock()
	for i := start; i < len(buf); i++ {
		v := &buf[i]
		n := v.Node
		v.Dials, v.DialFailures = n.dials.Load(), n.dialsFailed.Load()
		v.Probes, v.ProbeFailures = n.probes.Load(), n.probesFailed.Load()
		v.FatalErrors, v.Transitions = n.fatalErrors.Load(), n.transitions.Load()
		v.Signals = n.signals.Load()
		for c := range v.TransitionsBy {
			v.TransitionsBy[c] = n.transitionsBy[c].Load()
		}
		v.LastProbe = time.Duration(n.lastProbe.Load())
	}
	return buf
}

// Nodes appends every node in the table, in the order they became known, to buf and returns
// the extended slice.
func (t *Table[P]) Nodes(buf []*Node[P]) []*Node[P] {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(buf, t.order...)
}

// State returns n's current state.
func (t *Table[P]) State(n *Node[P]) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return n.state
}

// NodeHealth implements nodes.Health for sources that follow their nodes' health: up is true
// for a node in state up (standby or not), goodProbes counts its consecutive good probes, and
// ok is false for an address not in the table or draining.
func (t *Table[P]) NodeHealth(addr string) (up bool, goodProbes int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[addr]
	if !ok || n.state == Draining {
		return false, 0, false
	}
	return n.state == Up, n.goodProbes, true
}

var _ nodes.Health = (*Table[int])(nil)
