package nodetable

import (
	"fmt"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// The rules that set a node's role (see nodes.Role):
//
//   - with Config.RoleCheck, a role check's answer is the role (RoleChecked); the role a source
//     reports only seeds a node the table has not seen;
//   - without it, the source's role is the role, on every node list (SetNodes);
//   - a node that refused a write as not primary stops being a primary at once (RefusedWrite),
//     taking the role the refusal names, so a pick for the primary no longer finds it while the
//     next role check runs;
//   - with Config.SingleWriter, what these say is the node's claimed role, and only one node
//     claiming primary is the primary (electLocked): the others are replicas.
//
// A role change leaves the state alone and is reported as a Transition with Cause CauseRole
// (From == To). A node whose role the target no longer accepts takes no new connection; the
// caller retires its open ones, as for a drain.

// RoleChecked records the answer of a role check of n: its role now, or err when the check
// failed (the role is then left as it was, and nothing is held against the node's health).
func (t *Table[P]) RoleChecked(n *Node[P], r nodes.Role, err error) {
	if err != nil {
		return
	}
	t.mu.Lock()
	if t.nodes[n.addr] == n {
		t.claimLocked(n, r, "role check: "+r.String())
		t.applyDesiredLocked() // a node that takes connections now lets a held removal through
	}
	t.mu.Unlock()
	t.deliver()
}

// RefusedWrite records that n refused a write because it is not the primary
// (exception.NotPrimary); r is what the refusal says it is instead (a read-only server is a
// replica, an OceanBase standby tenant a standby). A primary, or a node of unknown role, takes
// r at once, before the next role check confirms it, so that a pick for the primary stops
// finding it.
func (t *Table[P]) RefusedWrite(n *Node[P], r nodes.Role) {
	t.mu.Lock()
	if t.nodes[n.addr] == n && (n.role == nodes.RolePrimary || n.role == nodes.RoleUnknown) {
		t.claimLocked(n, r, "refused a write as "+r.String())
	}
	t.mu.Unlock()
	t.deliver()
}

// RefusedRead records that n refused a read as not the primary at now (exception.NotPrimary):
// a server that takes no statement of this tenant now, such as an OceanBase standby tenant, or a
// replica that refuses what lbd's classifier took for a read. n leaves the pick indexes, so no
// new connection or read goes there, until a good probe at least one ProbeInterval later puts it
// back (a probe sooner than that, such as the role recheck the refusal itself asks for, proves
// only that the node answers); its state and role are left alone. It reports whether that
// changed.
func (t *Table[P]) RefusedRead(n *Node[P], now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n.refusedRead || t.nodes[n.addr] != n {
		return false
	}
	n.refusedRead, n.refusedAt = true, now
	t.unindexLocked(n)
	return true
}

// readsAgainLocked ends a RefusedRead.
func (t *Table[P]) readsAgainLocked(n *Node[P]) {
	n.refusedRead = false
	if n.state == Up && !n.standby {
		t.indexLocked(n)
		t.applyDesiredLocked() // a held removal may go through now
	}
}

// Role returns n's current role with one atomic load and no mutex: statement mode's split asks
// it for the bound connection at every statement.
func (t *Table[P]) Role(n *Node[P]) nodes.Role { return nodes.Role(n.roleNow.Load()) }

// claimLocked records that n's check, source or refusal says it is r, and gives n its role: r,
// or under Config.SingleWriter whatever the election makes of it.
func (t *Table[P]) claimLocked(n *Node[P], r nodes.Role, why string) {
	was := n.claimed
	n.claimed = r
	if !t.cfg.SingleWriter || (was != nodes.RolePrimary && r != nodes.RolePrimary) {
		t.setRoleLocked(n, r, why)
		return
	}
	t.electLocked(n, why)
}

// writerLocked returns the node Config.SingleWriter makes the primary: the first in order that
// claims primary and is up and not standby; nil when none does.
func (t *Table[P]) writerLocked() *Node[P] {
	for _, n := range t.order {
		if n.claimed == nodes.RolePrimary && n.state == Up && !n.standby {
			return n
		}
	}
	return nil
}

// electLocked applies Config.SingleWriter (it does nothing without it): every node takes its
// claimed role, but a node claiming primary that is not the writer (writerLocked) is a replica.
// The role change of changed, whose claim moved, is reported with why; the others' with the
// writer's name.
func (t *Table[P]) electLocked(changed *Node[P], why string) {
	if !t.cfg.SingleWriter {
		return
	}
	w := t.writerLocked()
	for _, n := range t.order {
		r, reason := n.claimed, why
		if n != changed {
			reason = "single writer: no node claiming primary is up"
			if w != nil {
				reason = "single writer: " + w.addr + " is the writer"
			}
		}
		if r == nodes.RolePrimary && n != w {
			r = nodes.RoleReplica
		}
		t.setRoleLocked(n, r, reason)
	}
}

// electQuietLocked applies Config.SingleWriter to nodes outside the pick indexes without
// reporting the changes: the nodes Start adds, before it indexes them.
func (t *Table[P]) electQuietLocked() {
	if !t.cfg.SingleWriter {
		return
	}
	w := t.writerLocked()
	for _, n := range t.order {
		if n.claimed == nodes.RolePrimary && n != w {
			n.role = nodes.RoleReplica
			n.roleNow.Store(uint32(nodes.RoleReplica))
		}
	}
}

// setRoleLocked gives n role r, moving it between the pick indexes, and queues the role change
// (none when r is n's role already).
func (t *Table[P]) setRoleLocked(n *Node[P], r nodes.Role, why string) {
	if n.role == r {
		return
	}
	from := n.role
	indexed := n.byOpen.Indexed()
	t.unindexLocked(n)
	n.role = r
	n.roleNow.Store(uint32(r))
	if indexed || (n.state == Up && !n.standby) {
		t.indexLocked(n)
	}
	n.transitionsBy[CauseRole].Add(1)
	t.queueLocked(Transition[P]{Node: n, From: n.state, To: n.state, Cause: CauseRole,
		Reason: fmt.Sprintf("%s (was %s)", why, from), RoleFrom: from, RoleTo: r})
	if t.cfg.MinServingReplicas > 0 {
		t.updateLagFloorLocked() // a replica came or went
	}
}

// SetLagging records whether replica n is further behind its primary than the caller allows
// (lbd's maxReplicationLagSeconds): a lagging node leaves the pick indexes, so it takes no new
// connection and statement mode binds no read to it, until it catches up; its state is left
// alone, and the lag floor may keep it serving (lagfloor.go). It reports whether that changed.
func (t *Table[P]) SetLagging(n *Node[P], lagging bool) bool {
	t.mu.Lock()
	if n.lagging == lagging || t.nodes[n.addr] != n {
		t.mu.Unlock()
		return false
	}
	n.lagging = lagging
	if lagging {
		t.unindexLocked(n)
	} else if n.state == Up && !n.standby {
		t.indexLocked(n)
		t.applyDesiredLocked() // a held removal may go through now
	}
	if t.cfg.MinServingReplicas > 0 {
		t.updateLagFloorLocked()
	}
	t.mu.Unlock()
	t.deliver()
	return true
}
