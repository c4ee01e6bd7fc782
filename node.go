package lbd

import (
	"database/sql/driver"
	"github.com/lbd-go/lbd/internal/pick"
	"sync"
	"sync/atomic"
	"time"
)

// node is one proxy as the balancer sees it. Counts live here, not in any snapshot, so they
// survive node-set changes: a node removed and re-added while its connections are still open
// keeps counting them.
type node struct {
	addr string
	// connector is go-sql-driver's for this node (network "lb", the node's address and TLS
	// server name). The dial ticket decides whether a connection counts: the application's
	// do, the probe's does not.
	connector driver.Connector

	// Guarded by the balancer's mutex.
	entry        pick.Entry[*node] // open physical connections (dials in flight included) and pick-index links
	busy         pick.Entry[*node] // physical connections in use (statement mode) and busy-index links
	state        NodeState
	dialFailures int   // consecutive failed dials
	goodProbes   int   // consecutive good probes since the last failure
	everUp       bool  // false for a node added at run time that has not yet passed a probe
	standby      bool  // probed and tracked, but out of the pick index (see nodes.Node.Standby)
	lastErr      error // last dial or probe failure, for errors and Stats

	// Cumulative counters, read without the mutex by Stats.
	dials        atomic.Uint64
	dialFailed   atomic.Uint64
	retired      atomic.Uint64
	transitions  atomic.Uint64
	fatalErrors  atomic.Uint64
	probes       atomic.Uint64
	probeFailed  atomic.Uint64
	lastProbeDur atomic.Int64 // nanoseconds

	// Live wrapped connections, for retiring them when the node goes down or is rebalanced.
	connsMu sync.Mutex
	conns   map[*conn]struct{}

	// Statement mode: physical connections parked idle, most recently returned last.
	freeMu sync.Mutex
	free   []*conn

	// probe is the node's current prober target; nil while the node is not probed (draining).
	probe atomic.Pointer[probeTarget]

	// Times of the latest fatal errors, a ring of FatalErrorThreshold entries.
	fatalMu    sync.Mutex
	fatalTimes []time.Time
	fatalNext  int
}

func newNode(addr string, connector driver.Connector) *node {
	n := &node{
		addr:      addr,
		connector: connector,
		conns:     make(map[*conn]struct{}),
	}
	n.entry.Value = n
	n.busy.Value = n
	return n
}

// open returns the node's open-connection count; the balancer's mutex must be held.
func (n *node) open() int { return n.entry.Count() }

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
func (n *node) retireAll() int {
	closed := 0
	for _, c := range n.snapshotConns() {
		if c.retire() {
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
		if c.retireIfIdle() {
			done++
		}
	}
	for _, c := range conns {
		if done >= max {
			break
		}
		if c.markRetired() {
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

func (n *node) setLastProbe(d time.Duration) { n.lastProbeDur.Store(int64(d)) }

// recordFatal notes a fatal error at now and reports whether threshold of them fell within
// window, i.e. whether the node should go down. The ring is cleared when it fires so that one
// burst takes the node down once.
func (n *node) recordFatal(now time.Time, threshold int, window time.Duration) bool {
	n.fatalMu.Lock()
	defer n.fatalMu.Unlock()
	if len(n.fatalTimes) != threshold {
		n.fatalTimes = make([]time.Time, threshold)
		n.fatalNext = 0
	}
	n.fatalTimes[n.fatalNext] = now
	n.fatalNext = (n.fatalNext + 1) % threshold
	oldest := n.fatalTimes[n.fatalNext] // the entry threshold-1 errors ago
	if oldest.IsZero() || now.Sub(oldest) > window {
		return false
	}
	clear(n.fatalTimes)
	return true
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
