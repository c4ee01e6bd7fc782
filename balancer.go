package lbd

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lbd-go/lbd/internal/pick"
)

// dialFailuresToDown is how many consecutive failed dials block a node (lb-driver's rule).
const dialFailuresToDown = 2

// balancer is the node table: every known node, its state, and the pick index over the up nodes.
// One mutex guards it; nothing under it does I/O, and pick is O(1) without allocation.
type balancer struct {
	mu           sync.Mutex
	nodes        map[string]*node
	order        []*node           // every known node in the order it became known, for Stats
	idx          pick.Index[*node] // up nodes by open physical connections: where a new one goes
	busy         pick.Index[*node] // up nodes by physical connections in use: where statement mode binds
	total        atomic.Int64      // open physical connections over every node, dials in flight included
	ups          atomic.Int32      // nodes in the pick indexes, readable without the mutex
	recoverCount int
	// desired is the node list last asked for when part of it could not be applied yet
	// (a removal that would have left no up node); nil when everything asked for is applied.
	desired []string

	// onTransition is told about every state change, after the mutex is released.
	onTransition func(transition)
}

// transition is one node state change, reported once.
type transition struct {
	node     *node
	from, to NodeState
	reason   string
	byProbe  bool // decided by a probe result (no early probe needed)
	forgot   bool // the node left the table (draining finished)
}

func newBalancer(recoverCount int) *balancer {
	return &balancer{nodes: make(map[string]*node), recoverCount: recoverCount}
}

// addUpLocked adds a node that starts up (nodes given at start-up are trusted until a probe or
// dial says otherwise, so the first Connect needs no probe round).
func (b *balancer) addUpLocked(n *node) {
	n.state = StateUp
	n.everUp = true
	b.nodes[n.addr] = n
	b.order = append(b.order, n)
	if !n.standby {
		b.indexLocked(n)
	}
}

// indexLocked puts n in both pick indexes (it takes new connections and binds).
func (b *balancer) indexLocked(n *node) {
	if !n.entry.Indexed() {
		b.idx.Insert(&n.entry)
	}
	if !n.busy.Indexed() {
		b.busy.Insert(&n.busy)
	}
	b.ups.Store(int32(b.idx.Len()))
}

// unindexLocked takes n out of both pick indexes; its counts keep changing outside them.
func (b *balancer) unindexLocked(n *node) {
	if n.entry.Indexed() {
		b.idx.Remove(&n.entry)
	}
	if n.busy.Indexed() {
		b.busy.Remove(&n.busy)
	}
	b.ups.Store(int32(b.idx.Len()))
}

// pick charges one connection to the least-loaded up node that is not in skip and returns it,
// or nil when there is none. skip holds the nodes already tried by the same Connect; the common
// case (skip empty) is O(1).
func (b *balancer) pick(skip []*node) *node { return b.pickIn(&b.idx, skip) }

// pickBusy charges one in-use connection to the up node with the fewest physical connections
// in use that is not in skip, and returns it (nil when there is none). Equal counts take turns.
func (b *balancer) pickBusy(skip []*node) *node { return b.pickIn(&b.busy, skip) }

func (b *balancer) pickIn(x *pick.Index[*node], skip []*node) *node {
	b.mu.Lock()
	e := x.First()
	for e != nil && containsNode(skip, e.Value) {
		e = x.Next(e)
	}
	if e == nil {
		b.mu.Unlock()
		return nil
	}
	x.Adjust(e, +1)
	if x == &b.idx {
		b.total.Add(1)
	}
	b.mu.Unlock()
	return e.Value
}

// charge counts one more open physical connection on n, which the caller is about to dial
// (statement mode chose n by its in-use count).
func (b *balancer) charge(n *node) {
	b.mu.Lock()
	b.idx.Adjust(&n.entry, +1)
	b.total.Add(1)
	b.mu.Unlock()
}

// adjustBusy changes n's in-use count by delta: +1 when a parked physical connection is taken
// up again by its logical connection, -1 when a physical connection is given back.
func (b *balancer) adjustBusy(n *node, delta int) {
	b.mu.Lock()
	b.busy.Adjust(&n.busy, delta)
	b.mu.Unlock()
}

func containsNode(list []*node, n *node) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// release gives back one connection charged to n.
func (b *balancer) release(n *node) {
	var tr []transition
	b.mu.Lock()
	b.idx.Adjust(&n.entry, -1)
	b.total.Add(-1)
	if n.state == StateDraining && n.open() == 0 {
		tr = append(tr, b.forgetLocked(n))
	}
	b.mu.Unlock()
	b.emit(tr)
}

// dialed records the outcome of a dial that was not refused for a reason that is the same on
// every node (see exception.SameOnEveryNode).
func (b *balancer) dialed(n *node, err error) {
	if err == nil {
		n.dials.Add(1)
	} else {
		n.dialFailed.Add(1)
	}
	var tr []transition
	b.mu.Lock()
	if err == nil {
		n.dialFailures = 0
	} else {
		n.lastErr = err
		n.dialFailures++
		if n.dialFailures >= dialFailuresToDown && n.state == StateUp {
			tr = append(tr, b.setStateLocked(n, StateDown,
				fmt.Sprintf("%d consecutive dial failures, last: %v", n.dialFailures, err)))
		}
	}
	b.mu.Unlock()
	b.emit(tr)
}

// probed records one probe result and applies the up/down rules: a failed probe takes an up node
// down; recoverCount consecutive good probes bring a down node up (a node added at run time
// that was never up needs only one).
func (b *balancer) probed(n *node, err error) {
	n.probes.Add(1)
	if err != nil {
		n.probeFailed.Add(1)
	}
	var tr []transition
	b.mu.Lock()
	if _, known := b.nodes[n.addr]; !known || b.nodes[n.addr] != n {
		b.mu.Unlock()
		return
	}
	if err != nil {
		n.goodProbes = 0
		n.lastErr = err
		if n.state == StateUp {
			t := b.setStateLocked(n, StateDown, "probe failed: "+err.Error())
			t.byProbe = true
			tr = append(tr, t)
		}
	} else {
		n.goodProbes++
		need := b.recoverCount
		if !n.everUp {
			need = 1
		}
		if n.state == StateDown && n.goodProbes >= need {
			tr = append(tr, b.setStateLocked(n, StateUp, goodProbesReason(n.goodProbes)))
			tr = append(tr, b.applyDesiredLocked()...)
		}
	}
	b.mu.Unlock()
	b.emit(tr)
}

// markDown takes an up node down for a reason found outside probes and dials (repeated fatal
// errors). It does nothing to a node that is not up.
func (b *balancer) markDown(n *node, reason string) {
	var tr []transition
	b.mu.Lock()
	if n.state == StateUp && b.nodes[n.addr] == n {
		n.goodProbes = 0
		tr = append(tr, b.setStateLocked(n, StateDown, reason))
	}
	b.mu.Unlock()
	b.emit(tr)
}

// setStateLocked moves n to state to, keeping the pick index in step, and returns the
// transition to report once the mutex is released.
func (b *balancer) setStateLocked(n *node, to NodeState, reason string) transition {
	from := n.state
	n.state = to
	switch {
	case to == StateUp:
		n.everUp = true
		n.dialFailures = 0
		if !n.standby {
			b.indexLocked(n)
		}
	case to != StateUp:
		b.unindexLocked(n)
	}
	n.transitions.Add(1)
	return transition{node: n, from: from, to: to, reason: reason}
}

// forgetLocked drops a drained node from the table.
func (b *balancer) forgetLocked(n *node) transition {
	delete(b.nodes, n.addr)
	for i, x := range b.order {
		if x == n {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
	return transition{node: n, from: StateDraining, to: StateDraining, reason: "drained", forgot: true}
}

func (b *balancer) emit(tr []transition) {
	if b.onTransition == nil {
		return
	}
	for _, t := range tr {
		b.onTransition(t)
	}
}

func goodProbesReason(n int) string {
	if n == 1 {
		return "1 good probe"
	}
	return fmt.Sprintf("%d consecutive good probes", n)
}

// state returns n's current state.
func (b *balancer) state(n *node) NodeState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return n.state
}
