package nodetable

import (
	"cmp"
	"slices"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// The lag floor (Config.MinServingReplicas). A replica further behind its primary than the
// caller allows leaves the pick indexes (SetLagging). When every replica lags at once (a burst
// of writes, a long DDL on the primary), that sends every read to the primary, which then
// carries the whole read load at the moment it is busiest. So, as Vitess keeps
// min_number_serving_vttablets replicas serving whatever their lag (up to a hard limit) and
// ProxySQL does not shun the last replicas of a hostgroup for lag, the table keeps the least
// lagging of the lagging replicas serving while fewer than MinServingReplicas replicas serve:
//
//   - a replica serves when it is up, not standby, not lagging and not refusing reads;
//   - the replicas kept are up, not standby, lagging, with a known lag (a replica whose
//     replication is stopped falls further behind for good and is never kept), least lag
//     first; they stay marked lagging (Stats shows it) and LagFloor says why they take reads;
//   - reads that must see a write are protected by the caller: FloorLag reports the largest lag
//     of a replica kept, so that read-your-writes by time covers it, and causal reads wait on
//     the replica for their position or go to the primary.

// NoteLag records replica n's latest lag behind its primary (known false: replication stopped,
// no lag to read), for the floor's choice among lagging replicas. It changes no index unless
// the floor's choice changes.
func (t *Table[P]) NoteLag(n *Node[P], lag time.Duration, known bool) {
	t.mu.Lock()
	if t.nodes[n.addr] == n && (n.lag != lag || n.lagKnown != known) {
		n.lag, n.lagKnown = lag, known
		if n.lagging {
			t.updateLagFloorLocked()
		}
	}
	t.mu.Unlock()
}

// FloorLag returns the largest lag of a lagging replica the floor keeps serving, 0 when none,
// with one atomic load.
func (t *Table[P]) FloorLag() time.Duration { return time.Duration(t.floorLag.Load()) }

// updateLagFloorLocked keeps the least lagging of the lagging replicas in the pick indexes
// while fewer than MinServingReplicas replicas serve, and takes out those no longer needed.
// O(n log n) in the number of nodes; it runs when a replica's lag, lagging flag, state or role
// changes, not on a pick.
func (t *Table[P]) updateLagFloorLocked() {
	serving := 0
	cands := t.floorBuf[:0]
	for _, n := range t.order {
		if n.role != nodes.RoleReplica || n.state != Up || n.standby {
			t.dropFloorLocked(n)
			continue
		}
		switch {
		case !n.lagging:
			n.floorServing = false // caught up: indexed as any replica
			if !n.refusedRead {
				serving++
			}
		case n.lagKnown:
			cands = append(cands, n)
		default:
			t.dropFloorLocked(n)
		}
	}
	need := t.cfg.MinServingReplicas - serving
	slices.SortStableFunc(cands, func(a, b *Node[P]) int { return cmp.Compare(a.lag, b.lag) })
	var floorLag time.Duration
	for i, n := range cands {
		if i < need {
			n.floorServing = true
			t.indexLocked(n) // (again, when some other change took it out)
			floorLag = max(floorLag, n.lag)
		} else {
			t.dropFloorLocked(n)
		}
	}
	clear(cands)
	t.floorBuf = cands[:0]
	t.floorLag.Store(int64(floorLag))
}

// dropFloorLocked stops the floor keeping n; a lagging n leaves the pick indexes.
func (t *Table[P]) dropFloorLocked(n *Node[P]) {
	if !n.floorServing {
		return
	}
	n.floorServing = false
	if n.lagging {
		t.unindexLocked(n)
	}
}
