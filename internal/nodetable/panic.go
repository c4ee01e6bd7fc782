package nodetable

import "time"

// Panic mode: when no node takes connections (none is up, or every up node is standby), lbd
// does not fail closed. It still dials a down node, the one that failed least recently, at a
// bounded cost: at most one panic-mode dial of a node is in flight, and a node's panic-mode
// dials start at least Config.PanicSpacing apart, so that a dead fleet sees a few dials per
// node and spacing, not one per caller. A caller that finds no node to try fails as before.
// Envoy's panic threshold and gRPC's pick-first fallback are the precedents.
//
//   - Draining nodes are never tried: they left the node list.
//   - Nodes that announced their shutdown are never tried (see Shutdown): they said they stop.
//   - Standby nodes are never tried: standby is a choice made by the node list or the role
//     check (the node must not carry application connections), not a health verdict, and panic
//     mode relaxes only the health verdict. Nor are nodes of a role the target does not accept
//     (their last known role), nor nodes outside the pick's group (groups.go).
//   - A panic-mode dial that succeeds while no node takes connections brings its node up at
//     once (CausePanic), without the RecoverCount good probes a probe-led recovery needs. That
//     rule keeps load off a doubtful node while others can carry it; with none up, the
//     alternative is failing every Connect, and a proxy that just completed a handshake is the
//     best evidence there is. The node stays probed: a failed probe takes it down again, and
//     the spacing above bounds how often that can repeat. A success after another node came up
//     leaves the node to its probes.
//
// Finding the candidate costs O(number of down nodes), and only in panic mode: the table keeps
// the down nodes in a list of their own, and the normal pick never looks at it.

// PanicPick returns the down node to dial in panic mode and charges one open connection to it,
// as Pick does; nil when some node takes connections (use Pick) or when no down node may be
// tried now. The node is the one that failed least recently among the down, non-standby nodes
// not in skip, with no panic-mode dial in flight and none started within PanicSpacing before
// now. The caller must report the dial's end with PanicDialed, whatever it was.
func (t *Table[P]) PanicPick(skip []*Node[P], now time.Time) *Node[P] {
	return t.panicPick("", skip, now, true)
}

// PanicPickInUse is PanicPick for statement mode: it claims one in-use connection on the node,
// as PickInUse does, instead of charging an open one.
func (t *Table[P]) PanicPickInUse(skip []*Node[P], now time.Time) *Node[P] {
	return t.panicPick("", skip, now, false)
}

// PanicPickInUseFor is PanicPickInUse among the nodes of group ("" for the picks that name
// none; see groups.go).
func (t *Table[P]) PanicPickInUseFor(group string, skip []*Node[P], now time.Time) *Node[P] {
	return t.panicPick(group, skip, now, false)
}

func (t *Table[P]) panicPick(group string, skip []*Node[P], now time.Time, open bool) *Node[P] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active > 0 {
		return nil
	}
	accepted := t.tiers[0] | t.tiers[1] // a standby role is in no tier
	mask := t.groups.mask(group)
	var best *Node[P]
	for _, n := range t.downs {
		if n.standby || n.shutdown || n.panicBusy || !accepted.Has(n.role) || mask>>n.class&1 == 0 || contains(skip, n) {
			continue
		}
		if !n.panicAt.IsZero() && now.Sub(n.panicAt) < t.cfg.PanicSpacing {
			continue
		}
		if best == nil || n.failSeq < best.failSeq {
			best = n
		}
	}
	if best == nil {
		return nil
	}
	best.panicBusy, best.panicAt = true, now
	if open {
		t.chargeLocked(kindOpen, best)
		t.total.Add(1)
	} else {
		t.chargeLocked(kindInUse, best)
	}
	return best
}

// PanicDialed reports the end of a panic-mode dial of n that PanicPick or PanicPickInUse
// started; err is nil when it gave a connection. A success while no node takes connections
// brings a down n up (CausePanic). A failure is not recorded here: report it with Dialed as
// any other dial (or leave it unreported when it was not the node's fault). Only the first
// report of a dial counts; later ones change nothing.
func (t *Table[P]) PanicDialed(n *Node[P], err error) {
	t.mu.Lock()
	if !n.panicBusy {
		t.mu.Unlock()
		return
	}
	n.panicBusy = false
	if err == nil && n.state == Down && t.active == 0 && t.nodes[n.addr] == n {
		t.setStateLocked(n, Up, CausePanic, "panic-mode dial succeeded while no node was up")
		t.applyDesiredLocked()
	}
	t.mu.Unlock()
	t.deliver()
}

func contains[P any](list []*Node[P], n *Node[P]) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
