package nodetable

import "github.com/lbd-go/lbd/internal/pick"

// Recent units: why weights are shares at every concurrency.
//
// With one statement in flight (or one connection dialed at a time) every count is 0 at every
// pick, and a strict minimum over (count+1)/weight gave every pick to the heaviest node:
// weights only broke ties, and a node the load policy slowed by a single step got nothing, so
// it was never measured again. So a connection that closes, or a claim statement mode gives
// back, leaves a recent unit behind on its node (pick.Index.Finish), which keeps counting in
// the order until the window of recent units moves past it (pick.Index.Expire). The window
// holds RecentPerNode units per node in the pick indexes, less FlightShrink for each unit in
// flight: recent units decide while little is in flight, and give way to the counts in flight
// as they grow. The order is by (FlightUnits × in flight + 1 + recent × cost)/weight (internal/pick), so:
//
//   - with nothing in flight, picks follow the weights over every window: 3:1:1 gives
//     60/20/20 at one worker, and equal nodes take exact turns;
//   - a node the load policy slowed has a lighter in-use weight (InUseSpeedFloor at least) and
//     costlier recent units (by the rest of its speed factor: applyWeightLocked), so at one
//     worker it gets its speed factor's share of a full-speed node's picks and keeps being
//     measured;
//   - as units in flight fill the window, the order becomes weighted least-connections: a
//     slow node holds the share its answers free up (its statements stay in flight longer),
//     cut by its in-use weight on top, and a hung node, whose units never finish, draws about what
//     least-connections gives it (a third of 16 workers over three nodes).
//
// The figures were chosen by simulation (recent_test.go drives the table with 1 to 64
// workers): with a unit in flight worth 16 recent units, two and four workers gave 3:1:1 only
// 50/25/25 (a node with a statement in flight was never picked again until it ended); with a
// window that did not shrink as units went in flight, a hung node drew 14 of 16 workers, and 8
// with 32 units per node. With 4, 28 and a shrink of 8, 3:1:1 stays within three points at 1
// to 64 workers (57/21/21 at four, 62/19/19 at sixteen, where integer counts in flight rule),
// a node ten times slower at a speed factor of 0.2 gets 0.20 of a full-speed node's picks at
// one worker and 0.046 at sixteen with no other noise (on a busy host, where every round trip
// carries the host's delays too, 0.2 to 0.3: internal/clustertest/leastload's
// TestSlowProxyShedsWithoutStarving), and a hung node 6 of 16 workers.
//
// Envoy's weighted least-request reaches shares at low concurrency with an EDF schedule over
// weight/(active+1)^bias; a window of recent units keeps the integer order and the O(1)
// buckets, and costs each cycle of a pick and its release one more move of one entry (a unit
// expiring).

// RecentPerNode is how many units per node in the pick indexes the order counts, in flight
// (pick.FlightUnits each) and recent. It bounds the least share a slowed node keeps: at one
// worker, a node at the least speed factor (1/16) is picked once its full-speed peers hold 15
// recent units each.
const RecentPerNode = 28

// FlightShrink is how many units of the window each unit in flight takes: twice what it weighs
// in the order (pick.FlightUnits), so that from about three and a half units in flight per
// node the window is empty and the order is plain weighted least-connections. Statement mode
// keeps about one physical connection per statement in flight on each node; an order that
// strays from the counts in flight at that concurrency sends statements to nodes whose
// connections are all busy, and dials (with the window shrinking only by pick.FlightUnits, 10
// workers over three nodes kept 14 or 15 physical connections open for 10 logical ones, one or
// two above the goal).
const FlightShrink = 2 * pick.FlightUnits

// MaxRecent bounds the window to 32 KiB per kind of count. Beyond MaxRecent/RecentPerNode
// nodes the window holds fewer than RecentPerNode units per node, and a client's shares are
// exact over longer runs only; beyond MaxRecent nodes there is no window, and the order is
// weighted least-connections as before recent units: a unit expiring touches a second node per
// pick, which at tens of thousands of nodes is a cache miss that cost the pick several times
// its price (BenchmarkPick at 50 000 nodes), while so few units per node shape no share. Equal
// loads still take turns there, so a fleet without weights shares evenly at one worker.
const MaxRecent = 1 << 12

// recentRing is a window of finished units of one kind, oldest first: the node each unit
// finished on. Pushing into a full ring doubles it; the steady state allocates nothing.
type recentRing[P any] struct {
	buf      []*Node[P]
	head     int // index of the oldest unit
	n        int // units held
	inflight int // units of this kind charged and not finished, over every node
}

func (r *recentRing[P]) push(n *Node[P]) {
	if r.n == len(r.buf) {
		grown := make([]*Node[P], max(2*len(r.buf), 64))
		for i := range r.n {
			grown[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = grown, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = n
	r.n++
}

func (r *recentRing[P]) pop() *Node[P] {
	n := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return n
}

// kind names one of a node's two counts (counts.go): open connections or connections in use.
type kind int

const (
	kindOpen kind = iota
	kindInUse
	numKinds
)

// entry returns n's pick entry for counts of kind k.
func (n *Node[P]) entry(k kind) *pick.Entry[*Node[P]] {
	if k == kindOpen {
		return &n.byOpen
	}
	return &n.byInUse
}

// kindIndexLocked returns the pick index of kind k that n's slot has.
func (t *Table[P]) kindIndexLocked(k kind, n *Node[P]) *pick.Index[*Node[P]] {
	x := t.byInUse
	if k == kindOpen {
		x = t.byOpen
	}
	return &x[n.slot()] // slot once, so that this stays small enough to inline
}

// chargeLocked counts one more unit of kind k on n: a connection about to be dialed, or one
// claimed. The window shrinks with the units in flight (windowLocked).
func (t *Table[P]) chargeLocked(k kind, n *Node[P]) {
	t.kindIndexLocked(k, n).Adjust(n.entry(k), +1)
	r := &t.recent[k]
	r.inflight++
	if r.n > 0 {
		t.expireLocked(k)
	}
}

// finishLocked turns one unit of kind k on n into a recent unit (a connection closed or given
// back).
func (t *Table[P]) finishLocked(k kind, n *Node[P]) {
	r := &t.recent[k]
	r.inflight--
	if r.n == 0 && t.windowLocked(r.inflight) == 0 {
		// No window (a busy table, or one beyond MaxRecent nodes): the unit simply ends, one
		// move as under least-connections.
		t.kindIndexLocked(k, n).Adjust(n.entry(k), -1)
		return
	}
	t.kindIndexLocked(k, n).Finish(n.entry(k))
	r.push(n)
	t.expireLocked(k)
}

// expireLocked expires the oldest recent units of kind k beyond the window.
func (t *Table[P]) expireLocked(k kind) {
	r := &t.recent[k]
	for w := t.windowLocked(r.inflight); r.n > w; {
		o := r.pop()
		t.kindIndexLocked(k, o).Expire(o.entry(k))
	}
}

// windowLocked is how many recent units the window holds with inflight units in flight:
// RecentPerNode per node in the pick indexes, less FlightShrink per unit in flight, at most
// MaxRecent; none beyond MaxRecent nodes (see MaxRecent).
func (t *Table[P]) windowLocked(inflight int) int {
	if t.active > MaxRecent {
		return 0
	}
	return min(max(RecentPerNode*max(t.active, 1)-FlightShrink*inflight, 0), MaxRecent)
}
