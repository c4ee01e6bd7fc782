package nodetable

import (
	"math/bits"

	"github.com/lbd-go/lbd/internal/pick"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// A node has two counts, kept whatever its state:
//
//   - the open count: physical connections open on it, dials in flight included. Pick and
//     Charge raise it when a dial is about to start; Release lowers it when the connection
//     closes or the dial fails. New connections go to the up node with the lowest open count.
//   - the in-use count: physical connections claimed by a logical connection (statement mode).
//     PickInUse and Claim raise it, Unclaim lowers it. Statement mode binds a statement to the
//     up node with the lowest in-use count.
//
// Each role (unknown, primary, replica) has its own pair of indexes, so a pick for a target
// looks at the indexes of the roles it accepts and never steps over nodes of other roles. Both
// picks are weighted least-connections: the node whose count, charged once more, is the
// smallest share of its effective weight (see weights.go). They allocate nothing and are O(1)
// in the number of nodes while every node has the same effective weight, O(log n) otherwise;
// skipping nodes already tried costs one step per skipped node.

// Pick charges one open connection to the up node with the fewest open connections for its
// effective weight that is not in skip, whose role Config.Target accepts and that the picks
// naming no group may choose (groups.go), and returns it, or nil when there is none. Equal
// loads take turns.
func (t *Table[P]) Pick(skip []*Node[P]) *Node[P] {
	return t.pickIn(t.tiers, "", skip, true)
}

// PickInUse claims one in-use connection on the up node with the fewest connections in use for
// its effective weight that is not in skip, whose role Config.Target accepts and that the
// picks naming no group may choose, and returns it, or nil when there is none. Equal loads
// take turns. The claim is given back with Unclaim.
func (t *Table[P]) PickInUse(skip []*Node[P]) *Node[P] {
	return t.pickIn(t.tiers, "", skip, false)
}

// PickInUseFor is PickInUse for target instead of Config.Target: statement mode's read/write
// split picks reads and writes for different roles.
func (t *Table[P]) PickInUseFor(target role.Target, skip []*Node[P]) *Node[P] {
	return t.PickInUseForGroup(target, "", skip)
}

// PickInUseForGroup is PickInUseFor among the nodes of group ("" for the picks that name none;
// see groups.go): a caller may choose a group (lbd.InGroup).
func (t *Table[P]) PickInUseForGroup(target role.Target, group string, skip []*Node[P]) *Node[P] {
	var tiers [2]role.Set
	tiers[0], tiers[1] = target.Tiers()
	return t.pickIn(tiers, group, skip, false)
}

// pickIn picks, from the indexes of open connections (open) or of connections in use, from
// those of the target's first tier of roles, or of its second when the first has no node,
// among the sets of groups a pick for group takes in (groups.go): the
// least-loaded entry over at most six indexes per set (a role's at full speed and slowed;
// twelve while the local zone spills), so O(1) in the number of nodes. While the local zone
// keeps the traffic (zones.go) a tier is looked for there first, and in every zone only when
// the local zone has none of it. A pick for the primary first (primaryFirst) that finds no node
// in its group's sets takes a primary of any set.
func (t *Table[P]) pickIn(tiers [2]role.Set, group string, skip []*Node[P], open bool) *Node[P] {
	t.mu.Lock()
	byRole := t.byInUse // read under the mutex: a new set of groups grows the indexes
	if open {
		byRole = t.byOpen
	}
	local := t.localOnlyLocked()
	mask := t.groups.def
	if group != "" {
		mask = t.groups.byName[group]
	}
	var e *pick.Entry[*Node[P]]
	xr := 0 // the place of e's index in byRole
	for _, tier := range tiers {
		e, xr = t.bestInLocked(byRole, tier, mask, skip, local)
		if e != nil {
			break
		}
	}
	if e == nil && mask != t.groups.all && tiers[0] == primaryFirst {
		e, xr = t.bestInLocked(byRole, primaryFirst, t.groups.all, skip, local)
	}
	if e == nil {
		t.mu.Unlock()
		return nil
	}
	t.turns[xr]++
	if open {
		t.chargeLocked(kindOpen, e.Value)
		t.total.Add(1)
	} else {
		t.chargeLocked(kindInUse, e.Value)
	}
	t.mu.Unlock()
	return e.Value
}

// primaryFirst is the first tier of the targets that ask for a primary first.
var primaryFirst = role.Of(nodes.RolePrimary)

// bestInLocked is bestLocked over the local zone first when local is true, then over every
// zone.
func (t *Table[P]) bestInLocked(byRole []pick.Index[*Node[P]], tier role.Set, mask uint64, skip []*Node[P], local bool) (*pick.Entry[*Node[P]], int) {
	e, xr := t.bestLocked(byRole, tier, mask, skip, local)
	if e == nil && local {
		e, xr = t.bestLocked(byRole, tier, mask, skip, false)
	}
	return e, xr
}

// bestLocked returns the least-loaded entry not in skip among the indexes of byRole whose role
// tier has, in the sets of groups of mask, and that index's place in byRole; of the local
// zone's indexes alone when local is true or zones are off.
func (t *Table[P]) bestLocked(byRole []pick.Index[*Node[P]], tier role.Set, mask uint64, skip []*Node[P], local bool) (e *pick.Entry[*Node[P]], xr int) {
	end := numPickIndexes
	if local || t.cfg.LocalZone == "" {
		end = localSlots
	}
	var x *pick.Index[*Node[P]]
	for m := mask; m != 0; m &= m - 1 {
		base := bits.TrailingZeros64(m) * numPickIndexes
		for r := range end {
			if !tier.Has(nodes.Role(r % nodes.NumRoles)) {
				continue
			}
			i := base + r
			c := byRole[i].FirstNotIn(skip)
			if c == nil {
				continue
			}
			if e == nil {
				e, x, xr = c, &byRole[i], i
				continue
			}
			// The lighter load for its weight (pick.Compare, as the index orders). Between
			// indexes at the same load, the one with the fewest picks per node so far goes
			// next, so that ties are shared by node, not by role, zone or group: one primary
			// next to three replicas gets a quarter of them.
			cmp := pick.Compare(c, e)
			if cmp < 0 || cmp == 0 && t.turns[i]*uint64(x.Len()) < t.turns[xr]*uint64(byRole[i].Len()) {
				e, x, xr = c, &byRole[i], i
			}
		}
	}
	return e, xr
}

// Charge counts one more open connection on n, which the caller is about to dial (statement
// mode chose n by its in-use count). Release gives it back.
func (t *Table[P]) Charge(n *Node[P]) {
	t.mu.Lock()
	t.chargeLocked(kindOpen, n)
	t.total.Add(1)
	t.mu.Unlock()
}

// Release gives back one open connection charged to n by Pick or Charge; it stays a recent unit
// of n's for a while (recent.go). A draining node whose last connection this was leaves the
// table (a Forgot transition).
func (t *Table[P]) Release(n *Node[P]) {
	t.mu.Lock()
	t.finishLocked(kindOpen, n)
	t.total.Add(-1)
	if n.state == Draining && n.byOpen.Count() == 0 {
		t.forgetLocked(n)
	}
	t.mu.Unlock()
	t.deliver()
}

// Claim counts one more connection in use on n: a parked physical connection taken up again by
// its logical connection. Unclaim gives it back.
func (t *Table[P]) Claim(n *Node[P]) {
	t.mu.Lock()
	t.chargeLocked(kindInUse, n)
	t.mu.Unlock()
}

// Unclaim gives back one in-use connection claimed on n by PickInUse or Claim; it stays a
// recent unit of n's for a while (recent.go).
func (t *Table[P]) Unclaim(n *Node[P]) {
	t.mu.Lock()
	t.finishLocked(kindInUse, n)
	t.mu.Unlock()
}

// Total returns the open connections over every node, dials in flight included, without
// taking the mutex.
func (t *Table[P]) Total() int64 { return t.total.Load() }

// UpNodes returns how many nodes are in state up, whatever their role or standby flag, without
// taking the mutex: when it is above Ups, nodes answer but none of them takes connections for
// the target now (a switchover).
func (t *Table[P]) UpNodes() int { return int(t.upNodes.Load()) }

// Ups returns how many nodes take new connections (up and not standby), without taking the
// mutex.
func (t *Table[P]) Ups() int { return int(t.ups.Load()) }

// indexLocked puts n, up, in both pick indexes of its slot (its role, zone and slowness); a
// standby role is in none. An indexed entry is always in the index of its node's current slot:
// whatever changes the slot takes it out first and puts it back with indexLocked.
func (t *Table[P]) indexLocked(n *Node[P]) {
	t.panicUnindexLocked(n)
	if n.state != Up {
		// A down node goes back where it was when a change of its slot (role, zone,
		// slowness) took it out: among the nodes served below the panic threshold, if it is
		// one of them; never among the nodes up.
		if t.panicking && t.panicEligibleLocked(n) && !n.panicFailed {
			t.panicIndexLocked(n)
		}
		return
	}
	if n.role == nodes.RoleStandby || (n.lagging && !n.floorServing) || n.refusedRead {
		return
	}
	if !n.byOpen.Indexed() {
		t.byOpen[n.slot()].Insert(&n.byOpen)
		t.active++
		if !n.other && t.cfg.LocalZone != "" {
			t.zoneActive++
		}
	}
	if !n.byInUse.Indexed() {
		t.byInUse[n.slot()].Insert(&n.byInUse)
	}
	t.ups.Store(int32(t.active))
}

// unindexLocked takes n out of both pick indexes; its counts keep changing outside them.
func (t *Table[P]) unindexLocked(n *Node[P]) {
	t.panicUnindexLocked(n)
	if n.byOpen.Indexed() {
		t.byOpen[n.slot()].Remove(&n.byOpen)
		t.active--
		if !n.other && t.cfg.LocalZone != "" {
			t.zoneActive--
		}
	}
	if n.byInUse.Indexed() {
		t.byInUse[n.slot()].Remove(&n.byInUse)
	}
	t.ups.Store(int32(t.active))
}
