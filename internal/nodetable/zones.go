package nodetable

import "github.com/lbd-go/lbd/nodes"

// Zones (Config.LocalZone; lbd's localZone).
//
// Each node carries the zone its source gave it (nodes.Node.AZ). With a local zone set, the
// pick indexes are kept twice per role: one set for the local zone's nodes, one for every
// other node (a node without a zone counts as elsewhere). A pick stays in the local zone while
// it has capacity, and spills to every zone when it has not:
//
//	local keeps the traffic  ⇔  active ≥ 1  and  active × 100 ≥ ZoneMinUpPercent × live
//
// where live counts the local zone's nodes in state up or down (listed, not draining) and
// active those of them that take connections (up, not standby, not lagging). Spilling puts the
// local zone's remaining nodes and every other zone's in one pick, by the same least-load or
// least-connections order, so a half-empty local zone still takes its share. Envoy's
// zone-aware routing spills in the same spirit when the local zone's healthy share falls.
//
// The rule is read at every pick from two counts kept on every state change, so a spill begins
// at the pick after the state change that causes it: within one probe interval of the local
// zone going down (the probe that finds it down), and traffic returns at the pick after its
// recovery. A target whose roles the local zone has no node of (its primary is elsewhere) is
// picked from every zone, whatever the rule says. Panic mode, when no node at all is up,
// ignores zones: any node is better than none.

// DefaultZoneMinUpPercent is Config.ZoneMinUpPercent's default: the local zone keeps the
// traffic while at least half of its nodes take connections.
const DefaultZoneMinUpPercent = 50

// numPickIndexes is how many pick indexes of each kind a table keeps: one per role for the
// local zone and one per role for the others, each twice: for the nodes at full speed and for
// those TickLoad slowed (load.go).
const numPickIndexes = 4 * nodes.NumRoles

// otherZone reports whether a node of zone zone counts as outside the local zone.
func (t *Table[P]) otherZone(zone string) bool {
	return t.cfg.LocalZone != "" && zone != t.cfg.LocalZone
}

// slot is the place of n's pick entries in the byOpen and byInUse slices: its role among the
// local zone's indexes or the other zones', at full speed or slowed, among those of its set of
// groups (numPickIndexes per set: groups.go). The local zone's come first in each set
// (localSlots of them).
func (n *Node[P]) slot() int {
	s := int(n.class)*numPickIndexes + int(n.role)
	if n.slow != 0 {
		s += nodes.NumRoles
	}
	if n.other {
		s += localSlots
	}
	return s
}

// localSlots is how many of the pick indexes are the local zone's (all a node uses without
// Config.LocalZone).
const localSlots = 2 * nodes.NumRoles

// live reports whether a node in state s counts toward its zone's capacity: listed, up or
// down.
func live(s State) bool { return s == Up || s == Down }

// zoneStateLocked counts n's move from state from to state to in the local zone's live count.
func (t *Table[P]) zoneStateLocked(n *Node[P], from, to State) {
	if n.other || t.cfg.LocalZone == "" || live(from) == live(to) {
		return
	}
	if live(to) {
		t.zoneLive++
	} else {
		t.zoneLive--
	}
}

// setZoneLocked gives n the zone its source reports now, moving its pick entries and counts
// between the local zone and the others when that changes.
func (t *Table[P]) setZoneLocked(n *Node[P], zone string) {
	n.zone = zone
	other := t.otherZone(zone)
	if other == n.other {
		return
	}
	indexed := n.byOpen.Indexed()
	t.unindexLocked(n)
	t.zoneStateLocked(n, n.state, Unknown)
	n.other = other
	t.zoneStateLocked(n, Unknown, n.state)
	if indexed {
		t.indexLocked(n)
	}
}

// localOnlyLocked reports whether the picks stay in the local zone now (see the rule above).
func (t *Table[P]) localOnlyLocked() bool {
	if t.cfg.LocalZone == "" || t.zoneActive == 0 {
		return false
	}
	pct := t.cfg.ZoneMinUpPercent
	if pct == 0 {
		pct = DefaultZoneMinUpPercent
	}
	return t.zoneActive*100 >= pct*t.zoneLive
}

// Zones reports the local zone's capacity as the picks see it: live counts its nodes up or
// down, active those of them taking connections, and local is true while the picks stay in the
// local zone. All are zero and false without Config.LocalZone.
func (t *Table[P]) Zones() (live, active int, local bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.zoneLive, t.zoneActive, t.localOnlyLocked()
}
