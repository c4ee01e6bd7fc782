package lbd

import (
	"database/sql/driver"
	"sync"
	"sync/atomic"

	"github.com/lbd-go/lbd/internal/nodetable"
)

// node is what lbd hangs off one proxy in the node table (the table's payload): its
// go-sql-driver connector, its live connections, statement mode's idle list and its probe
// target. Its state and counts are the table's (see internal/nodetable); n.tn is its handle
// there. connsMu and freeMu are leaf locks like the table's mutex: nothing else is called while
// one is held, so no two of the three are ever held at once.
type node struct {
	addr string
	// connector is go-sql-driver's for this node (network "lb", the node's address and TLS
	// server name). The dial ticket decides whether a connection counts: the application's
	// do, the probe's does not.
	connector driver.Connector
	tn        *tableNode

	retiredBy [NumRetireReasons]atomic.Uint64 // connections retired, by reason, for Stats

	// roleErr is the latest failed role check's error, nil once one answered; kept for the
	// error of a Connect that found no node of its target's roles.
	roleErr atomic.Pointer[error]
	// splitReads and splitWrites count the statements readWriteSplit ran here, by class.
	splitReads, splitWrites atomic.Uint64
	// lag is the replica's latest lag behind its primary, nanoseconds (maxReplicationLagSeconds).
	lag atomic.Int64

	flight flight // statements on the wire and answered, for passive outlier detection

	// Live wrapped connections, for retiring them when the node goes down or is rebalanced.
	connsMu sync.Mutex
	conns   map[*conn]struct{}

	// Statement mode: physical connections parked idle, most recently returned last.
	freeMu sync.Mutex
	free   []*conn

	// probe is the node's current prober target; nil while the node is not probed (draining).
	probe atomic.Pointer[probeTarget]
}

// nodeTable is the Connector's node table, and tableNode a node's handle in it.
type (
	nodeTable = nodetable.Table[*node]
	tableNode = nodetable.Node[*node]
)

func newNode(tn *tableNode, connector driver.Connector) *node {
	return &node{addr: tn.Addr(), connector: connector, tn: tn, conns: make(map[*conn]struct{})}
}

func (n *node) track(c *conn) {
	n.connsMu.Lock()
	n.conns[c] = struct{}{}
	n.connsMu.Unlock()
}

func (n *node) untrack(c *conn) {
	n.connsMu.Lock()
	delete(n.conns, c)
	n.connsMu.Unlock()
}

// snapshotConns copies the live connections so that they can be retired without holding connsMu
// across I/O.
func (n *node) snapshotConns() []*conn {
	n.connsMu.Lock()
	defer n.connsMu.Unlock()
	out := make([]*conn, 0, len(n.conns))
	for c := range n.conns {
		out = append(out, c)
	}
	return out
}

// retireAll marks every connection of the node retired: idle ones close at once, in-use ones
// at their next return to the pool. It returns how many closed at once.
func (n *node) retireAll(why RetireReason) int { return n.retireBefore(why, ^uint64(0)) }

// retireBefore is retireAll for the connections opened before the node's state change numbered
// seq (Transition.Seq): a down transition handled after the node came back must not retire the
// connections opened since.
func (n *node) retireBefore(why RetireReason, seq uint64) int {
	closed := 0
	for _, c := range n.snapshotConns() {
		if c.epoch < seq && c.retire(why) {
			closed++
		}
	}
	return closed
}

// retireSurplus retires up to max connections that are not retired yet: idle ones first,
// closed at once; then in-use ones, marked to close at their next return to the pool (never
// cut mid-statement). It returns how many it retired.
func (n *node) retireSurplus(max int) int {
	conns := n.snapshotConns()
	done := 0
	for _, c := range conns {
		if done >= max {
			return done
		}
		if c.retireIfIdle(RetireRebalance) {
			done++
		}
	}
	for _, c := range conns {
		if done >= max {
			break
		}
		if c.markRetired(RetireRebalance) {
			done++
		}
	}
	return done
}

// connCounts counts the node's connections that sit idle in the pool and those marked retired
// but still open (in use, closing at their return).
func (n *node) connCounts() (idle, retiring int) {
	n.connsMu.Lock()
	defer n.connsMu.Unlock()
	for c := range n.conns {
		switch {
		case c.isIdle():
			idle++
		case c.retired.Load():
			retiring++
		}
	}
	return idle, retiring
}

// pushFree parks an idle physical connection on the node's free list (statement mode).
func (n *node) pushFree(c *conn) {
	n.freeMu.Lock()
	n.free = append(n.free, c)
	n.freeMu.Unlock()
}

// popFree takes the most recently parked physical connection and claims it for use, skipping
// any that lbd closed while they sat there (retired). It returns nil when none is left.
func (n *node) popFree() *conn {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	for len(n.free) > 0 {
		c := n.free[len(n.free)-1]
		n.free[len(n.free)-1] = nil
		n.free = n.free[:len(n.free)-1]
		if c.state.CompareAndSwap(connIdle, connInUse) {
			return c
		}
	}
	return nil
}

// popOldestFree takes the physical connection that has been parked longest and marks it closed
// (the caller closes it); nil when none is left.
func (n *node) popOldestFree() *conn {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	for len(n.free) > 0 {
		c := n.free[0]
		copy(n.free, n.free[1:])
		n.free[len(n.free)-1] = nil
		n.free = n.free[:len(n.free)-1]
		if c.state.CompareAndSwap(connIdle, connClosed) {
			return c
		}
	}
	return nil
}

// freeCount returns how many physical connections are parked (some may have closed since).
func (n *node) freeCount() int {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	return len(n.free)
}
