package lbd

import (
	"context"
	"sync/atomic"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// node is what the Connector hangs off one proxy beside its physical side (internal/physical:
// the go-sql-driver connector, the live and idle connections): the role check's last error,
// the split's counters, the replica lag and the probe target. It is the physical node's Hooks,
// so the physical connections reach the Connector through it and nothing else.
type node struct {
	c    *Connector
	addr string
	tn   *tableNode
	phys *physical.Node

	// roleErr is the latest failed role check's error, nil once one answered; kept for the
	// error of a Connect that found no node of its target's roles.
	roleErr atomic.Pointer[error]
	// splitReads and splitWrites count the statements readWriteSplit ran here, by class.
	splitReads, splitWrites atomic.Uint64
	// lag is the replica's latest lag behind its primary, nanoseconds (maxReplicationLagSeconds).
	lag atomic.Int64

	// probe is the node's current prober target; nil while the node is not probed (draining).
	probe atomic.Pointer[nodeProbe]
	// probeConns counts the probe connections open to the node (one, or briefly two while an
	// old probe target finishes): connections the proxy sees that Open does not count.
	probeConns atomic.Int32
	// earlyProbe is when the traffic last brought the probe forward, Unix nanoseconds
	// (mayProbeEarly); downAt is when the node last went down (queueTransition), for
	// nodeProbe.NextProbeIn.
	earlyProbe, downAt atomic.Int64
	// answeredErrors counts statements the server answered with an error that may be this
	// node's own (noteStatementError); errWatch is the error-rate loop's view of it.
	answeredErrors atomic.Uint64
	errWatch       nodeErrWatch
}

// nodeTable is the Connector's node table, and tableNode a node's handle in it; the payload is
// the physical node, whose Hooks is the root's node.
type (
	nodeTable = nodetable.Table[*physical.Node]
	tableNode = nodetable.Node[*physical.Node]
)

// nodeOf returns the root's side of a physical node.
func nodeOf(pn *physical.Node) *node { return pn.Hooks().(*node) }

// at returns the root's side of the node tn.
func at(tn *tableNode) *node { return nodeOf(tn.Payload()) }

// StatementError implements physical.Hooks: a node announcing its shutdown is drained; a refusal
// by a node that is no longer the primary (exception.NotPrimary, or a 1792 in a transaction the
// caller did not make read-only) is a role change; any other error is shown to passive outlier detection and to the exception
// sorter.
func (n *node) StatementError(p *physical.Conn, err error, nothingRan bool) error {
	c := n.c
	if exception.ServerShutdown(err) {
		return c.onShutdown(p, err, nothingRan)
	}
	if c.roleAware() && (exception.NotPrimary(err) || exception.ReadOnlyTransaction(err) && !p.CallerReadOnly()) {
		return c.onNotPrimary(p, err, nothingRan)
	}
	n.noteStatementError(err)
	c.onStatementError(p, err)
	c.onConnError(p, err)
	return err
}

// countRouted counts a statement of the read/write split on n, as a read or a write.
func countRouted(n *physical.Node, write bool) {
	if write {
		nodeOf(n).splitWrites.Add(1)
	} else {
		nodeOf(n).splitReads.Add(1)
	}
}

// Broken implements physical.Hooks: a protocol violation is fatal to the connection and counts
// against the node.
func (n *node) Broken(p *physical.Conn, err error) { n.c.onConnError(p, err) }

// Farewell implements physical.Hooks: a server that closed an idle connection saying it shuts
// down (1053) is drained; any other parting word (a wait_timeout) says nothing about the node.
func (n *node) Farewell(_ *physical.Conn, err error) {
	if exception.ServerShutdown(err) {
		n.c.table.Shutdown(n.tn, err)
	}
}

// CallerEnded implements physical.Hooks: a cancellation says nothing about the node; a passed
// deadline does only when the node has been silent for long (callerDeadline).
func (n *node) CallerEnded(_ *physical.Conn, cause error) {
	if cause == context.DeadlineExceeded {
		n.c.callerDeadline(n)
	}
}
