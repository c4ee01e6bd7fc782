package nodetable

import (
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// Build makes the payload of a node the table is adding. It is called with the table's mutex
// held, so it must neither block nor call the table; n's address is set, and n may be kept as
// the payload's handle on its node. An error stops the change that called it.
type Build[P any] func(n *Node[P]) (P, error)

// Start adds the nodes listed at start-up, in order. They are trusted: up (standby ones out of
// the pick indexes) until a dial or probe says otherwise, so the first connection needs no
// probe round. It reports no transitions. Errors: build's, or an address listed twice.
func (t *Table[P]) Start(list []nodes.Node, build Build[P]) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var trusted []*Node[P]
	defer func() {
		t.electQuietLocked() // before the nodes enter the pick indexes of their roles
		t.indexTrustedLocked(trusted)
	}()
	for _, want := range list {
		if _, dup := t.nodes[want.Addr]; dup {
			return fmt.Errorf("node table: %s listed twice", want.Addr)
		}
		n, err := t.newNodeLocked(want, build)
		if err != nil {
			return err
		}
		t.addUpLocked(n)
		trusted = append(trusted, n)
	}
	return nil
}

func (t *Table[P]) newNodeLocked(want nodes.Node, build Build[P]) (*Node[P], error) {
	n := &Node[P]{addr: want.Addr, standby: want.Standby, role: want.Role, claimed: want.Role, warmth: 1, warmIdx: -1}
	n.zone, n.other = want.AZ, t.otherZone(want.AZ)
	n.roleNow.Store(uint32(want.Role))
	n.byOpen.Value, n.byInUse.Value = n, n
	t.setWeightLocked(n, want.Weight)
	if err := t.setGroupsLocked(n, want.Groups); err != nil {
		return nil, err
	}
	p, err := build(n)
	if err != nil {
		t.leaveGroupsLocked(n)
		return nil, err
	}
	n.payload = p
	return n, nil
}

// addUpLocked adds a trusted node, up; indexTrustedLocked puts it in the pick indexes.
func (t *Table[P]) addUpLocked(n *Node[P]) {
	t.putStateLocked(n, Up)
	n.everUp = true
	t.nodes[n.addr] = n
	t.order = append(t.order, n)
}

// indexTrustedLocked puts the nodes of batch that take connections in the pick indexes, in
// their listed order but starting at the node Config.Rand draws, so that equal counts take
// turns from there.
func (t *Table[P]) indexTrustedLocked(batch []*Node[P]) {
	active := 0
	for _, n := range batch {
		if !n.standby {
			active++
		}
	}
	if active == 0 {
		return
	}
	start := 0
	if t.cfg.Rand != nil {
		start = t.cfg.Rand(active) % active
		if start < 0 {
			start += active
		}
	}
	// Two passes over batch: the active nodes from start to the end, then those before it.
	for pass := range 2 {
		i := 0
		for _, n := range batch {
			if n.standby {
				continue
			}
			if (pass == 0) == (i >= start) {
				t.indexLocked(n)
			}
			i++
		}
	}
}

// SetNodes applies a whole new node list, whose addresses must be canonical and distinct:
//
//   - Nodes not in the table are added first, down until one good probe, except when no node
//     takes connections: then they are trusted as at start-up (waiting for a probe would fail
//     every connection in between). Standby nodes are never trusted.
//   - A draining node listed again keeps its counts and goes down until one good probe.
//   - A listed node's standby flag takes effect at once: a standby node leaves the pick indexes.
//     So does its role, unless roles come from role checks (Config.RoleCheck), and so do its
//     zone, weight and groups.
//   - Nodes no longer listed start draining (no new connection; they leave the table when their
//     last connection closes, at once when they have none), unless that would leave no listed
//     node up and active (in the pick indexes: not standby by its flag or its role, not
//     lagging, not out for a refused read). Then the removals wait: SetNodes returns an error
//     wrapping ErrNoUpNodeLeft, and the removals are applied when a listed node comes up (by a
//     probe) or starts taking connections (a role check, a replica catching up, a good probe
//     after a refused read), or by a later SetNodes.
//
// It returns the nodes added or listed again, which the caller must start probing. An error
// of build, or a list that would have the table hold more than 64 sets of groups at once
// (nodes of earlier lists still draining), stops the change there and is returned with the
// nodes added so far.
func (t *Table[P]) SetNodes(list []nodes.Node, build Build[P]) (added []*Node[P], err error) {
	var trusted []*Node[P]
	t.mu.Lock()
	trustNew := t.active == 0
	desired := make([]string, 0, len(list))
	for _, want := range list {
		desired = append(desired, want.Addr)
		n, known := t.nodes[want.Addr]
		switch {
		case !known:
			if n, err = t.newNodeLocked(want, build); err != nil {
				return t.stopSetLocked(trusted, added, err)
			}
			if trustNew && !want.Standby {
				t.addUpLocked(n)
				trusted = append(trusted, n)
			} else {
				t.putStateLocked(n, Down)
				n.everUp, n.lastErr = false, errAwaitingProbe
				t.nodes[n.addr] = n
				t.order = append(t.order, n)
			}
			added = append(added, n)
			continue
		case n.state == Draining:
			n.everUp, n.goodProbes, n.lastErr = false, 0, errAwaitingProbe
			t.setStateLocked(n, Down, CauseNodeList, "listed again; waiting for a good probe")
			added = append(added, n)
		}
		t.setStandbyLocked(n, want.Standby)
		t.setZoneLocked(n, want.AZ)
		t.setWeightLocked(n, want.Weight)
		if err := t.setGroupsLocked(n, want.Groups); err != nil {
			return t.stopSetLocked(trusted, added, err)
		}
		if !t.cfg.RoleCheck {
			t.claimLocked(n, want.Role, "node list: "+want.Role.String())
		}
	}
	t.indexTrustedLocked(trusted)
	t.desired = desired
	err = t.applyRemovalsLocked()
	t.electLocked(nil, "") // the list may have added, removed or set standby its writer
	t.updatePanicLocked()
	t.mu.Unlock()
	t.deliver()
	return added, err
}

// stopSetLocked ends a SetNodes that failed with err: the trusted nodes it added go into the
// pick indexes, the mutex is released and the transitions delivered.
func (t *Table[P]) stopSetLocked(trusted, added []*Node[P], err error) ([]*Node[P], error) {
	t.indexTrustedLocked(trusted)
	t.mu.Unlock()
	t.deliver()
	return added, err
}

// setStandbyLocked moves an up node in or out of the pick indexes as its standby flag changes.
func (t *Table[P]) setStandbyLocked(n *Node[P], standby bool) {
	if n.standby == standby {
		return
	}
	n.standby = standby
	if standby {
		t.unindexLocked(n)
	} else if n.state == Up {
		t.indexLocked(n)
	}
}

// applyDesiredLocked retries a removal that was held back, once a node has come up or started
// taking connections; with nothing held back it does nothing.
func (t *Table[P]) applyDesiredLocked() {
	if t.desired != nil {
		_ = t.applyRemovalsLocked() // still refused: kept for the next node that comes up
	}
}

// applyRemovalsLocked drains every node not in t.desired, unless none of the desired nodes is
// up and active; then it keeps t.desired for a later try and returns ErrNoUpNodeLeft.
func (t *Table[P]) applyRemovalsLocked() error {
	want := make(map[string]bool, len(t.desired))
	for _, a := range t.desired {
		want[a] = true
	}
	var remove []*Node[P]
	upLeft := 0
	for _, n := range t.order {
		switch {
		case want[n.addr]:
			// Up and active: a pick may choose it.
			if n.byOpen.Indexed() || bugRemovalCountsUpNotActive && n.state == Up && !n.standby {
				upLeft++
			}
		case n.state != Draining:
			remove = append(remove, n)
		}
	}
	if len(remove) == 0 {
		t.desired = nil
		return nil
	}
	if upLeft == 0 {
		names := make([]string, len(remove))
		for i, n := range remove {
			names[i] = n.addr
		}
		return fmt.Errorf("%w (kept for now: %s)", ErrNoUpNodeLeft, strings.Join(names, ", "))
	}
	for _, n := range remove {
		t.setStateLocked(n, Draining, CauseNodeList, "removed from the node list")
		if n.byOpen.Count() == 0 {
			t.forgetLocked(n)
		}
	}
	t.desired = nil
	return nil
}
