package nodetable

import "github.com/lbd-go/lbd/internal/pick"

// A node has two counts, kept whatever its state:
//
//   - the open count: physical connections open on it, dials in flight included. Pick and
//     Charge raise it when a dial is about to start; Release lowers it when the connection
//     closes or the dial fails. New connections go to the up node with the lowest open count.
//   - the in-use count: physical connections claimed by a logical connection (statement mode).
//     PickInUse and Claim raise it, Unclaim lowers it. Statement mode binds a statement to the
//     up node with the lowest in-use count.
//
// Both picks are weighted least-connections: the node whose count, charged once more, is the
// smallest share of its effective weight (see weights.go). They allocate nothing and are O(1) in
// the number of nodes while every node has the same effective weight, O(log n) otherwise;
// skipping nodes already tried costs one step per skipped node.

// Pick charges one open connection to the up node with the fewest open connections for its
// effective weight that is not in skip and returns it, or nil when there is none. Equal loads
// take turns.
func (t *Table[P]) Pick(skip []*Node[P]) *Node[P] { return t.pickIn(&t.byOpen, skip, true) }

// PickInUse claims one in-use connection on the up node with the fewest connections in use for
// its effective weight that is not in skip and returns it, or nil when there is none. Equal
// loads take turns. The claim
// is given back with Unclaim.
func (t *Table[P]) PickInUse(skip []*Node[P]) *Node[P] { return t.pickIn(&t.byInUse, skip, false) }

func (t *Table[P]) pickIn(x *pick.Index[*Node[P]], skip []*Node[P], open bool) *Node[P] {
	t.mu.Lock()
	e := x.FirstNotIn(skip)
	if e == nil {
		t.mu.Unlock()
		return nil
	}
	x.Adjust(e, +1)
	if open {
		t.total.Add(1)
	}
	t.mu.Unlock()
	return e.Value
}

// Charge counts one more open connection on n, which the caller is about to dial (statement
// mode chose n by its in-use count). Release gives it back.
func (t *Table[P]) Charge(n *Node[P]) {
	t.mu.Lock()
	t.byOpen.Adjust(&n.byOpen, +1)
	t.total.Add(1)
	t.mu.Unlock()
}

// Release gives back one open connection charged to n by Pick or Charge. A draining node whose
// last connection this was leaves the table (a Forgot transition).
func (t *Table[P]) Release(n *Node[P]) {
	var tr []Transition[P]
	t.mu.Lock()
	t.byOpen.Adjust(&n.byOpen, -1)
	t.total.Add(-1)
	if n.state == Draining && n.byOpen.Count() == 0 {
		tr = append(tr, t.forgetLocked(n))
	}
	t.mu.Unlock()
	t.emit(tr)
}

// Claim counts one more connection in use on n: a parked physical connection taken up again by
// its logical connection. Unclaim gives it back.
func (t *Table[P]) Claim(n *Node[P]) { t.adjustInUse(n, +1) }

// Unclaim gives back one in-use connection claimed on n by PickInUse or Claim.
func (t *Table[P]) Unclaim(n *Node[P]) { t.adjustInUse(n, -1) }

func (t *Table[P]) adjustInUse(n *Node[P], delta int) {
	t.mu.Lock()
	t.byInUse.Adjust(&n.byInUse, delta)
	t.mu.Unlock()
}

// Total returns the open connections over every node, dials in flight included, without
// taking the mutex.
func (t *Table[P]) Total() int64 { return t.total.Load() }

// Ups returns how many nodes take new connections (up and not standby), without taking the
// mutex.
func (t *Table[P]) Ups() int { return int(t.ups.Load()) }

// indexLocked puts n in both pick indexes.
func (t *Table[P]) indexLocked(n *Node[P]) {
	if !n.byOpen.Indexed() {
		t.byOpen.Insert(&n.byOpen)
	}
	if !n.byInUse.Indexed() {
		t.byInUse.Insert(&n.byInUse)
	}
	t.ups.Store(int32(t.byOpen.Len()))
}

// unindexLocked takes n out of both pick indexes; its counts keep changing outside them.
func (t *Table[P]) unindexLocked(n *Node[P]) {
	if n.byOpen.Indexed() {
		t.byOpen.Remove(&n.byOpen)
	}
	if n.byInUse.Indexed() {
		t.byInUse.Remove(&n.byInUse)
	}
	t.ups.Store(int32(t.byOpen.Len()))
}
