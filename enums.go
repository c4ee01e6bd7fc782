package lbd

import (
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/ring"
	"github.com/lbd-go/lbd/nodes"
)

// TransitionCause is the signal that decided a node's state change.
type TransitionCause uint8

const (
	// CauseProbe: a probe's answer (a failed probe, or recoverCheckCount good ones).
	CauseProbe = TransitionCause(nodetable.CauseProbe)
	// CauseDial: consecutive failed dials of new connections (two, lb-driver's rule).
	CauseDial = TransitionCause(nodetable.CauseDial)
	// CauseFatal: fatalErrorThreshold errors judged fatal within fatalErrorWindowSeconds.
	CauseFatal = TransitionCause(nodetable.CauseFatal)
	// CauseNodeList: the node list changed (a node removed and draining, drained away, or
	// listed again).
	CauseNodeList = TransitionCause(nodetable.CauseNodeList)
	// CauseRole: the node's role changed (its role check, its source, or a write it refused);
	// its state did not (From == To; RoleFrom and RoleTo differ).
	CauseRole = TransitionCause(nodetable.CauseRole)
	// CausePanic: a panic-mode dial (see the package documentation) succeeded while no node
	// was up, which brings its node up at once; the node stays probed.
	CausePanic = TransitionCause(nodetable.CausePanic)
	// CausePassive: passive outlier detection: what the application's statements saw (a lost
	// connection, a statement timeout, statements stalled on the node while the others
	// answer), confirmed by a probe under a short deadline; capped by maxEjectionPercent.
	CausePassive = TransitionCause(nodetable.CausePassive)
	// CauseShutdown: the node announced its shutdown (ER_SERVER_SHUTDOWN, 1053, on a statement,
	// a probe or a handshake, or its statusURL check answering that it is not serving): it is
	// drained at once, never tried in panic mode, and back up when probes pass again.
	CauseShutdown = TransitionCause(nodetable.CauseShutdown)
)

// NumTransitionCauses is how many causes there are: the length of NodeStats.TransitionsBy.
const NumTransitionCauses = nodetable.NumCauses

// String returns the cause as logs and metrics label it: "probe", "dial", "fatal", "node_list",
// "role", "panic", "passive", "shutdown".
func (c TransitionCause) String() string { return nodetable.Cause(c).String() }

// Transition is one state change of one node, as Stats.Recent lists it.
type Transition struct {
	At       time.Time // when the Connector saw it (its clock)
	Node     string    // "host:port"
	From, To NodeState // To equals From (draining) for a drained node leaving the table
	Cause    TransitionCause
	Reason   string // why, in the words of the log line ("probe failed: ...", "3 consecutive good probes")
	Removed  bool   // the node drained its last connection and left the node table
	// RoleFrom and RoleTo are the node's role before and after; they differ for CauseRole only.
	RoleFrom, RoleTo nodes.Role
}

// recentTransitions is how many transitions Stats.Recent keeps, over all nodes.
const recentTransitions = 64

// recordTo returns the function that keeps the node table's transitions in r for Stats.Recent
// (health.Config.Record).
func recordTo(r *ring.Ring[Transition]) func(time.Time, nodetable.Transition[*physical.Node]) {
	return func(now time.Time, t nodetable.Transition[*physical.Node]) {
		r.Add(Transition{At: now, Node: t.Node.Payload().Addr(), From: NodeState(t.From),
			To: NodeState(t.To), Cause: TransitionCause(t.Cause), Reason: t.Reason, Removed: t.Forgot,
			RoleFrom: t.RoleFrom, RoleTo: t.RoleTo})
	}
}

// NodeState is where a node stands in the node table.
type NodeState int32

const (
	// StateUnknown is the zero value: no node has it (Stats.Node answers it with ok false).
	StateUnknown = NodeState(nodetable.Unknown)
	// StateUp: the node takes new connections.
	StateUp = NodeState(nodetable.Up)
	// StateDown: the node is blocked (failed probes or dials, or fatalErrorThreshold fatal
	// errors within fatalErrorWindowSeconds); it takes no new connection and comes back after
	// recoverCheckCount consecutive good probes.
	StateDown = NodeState(nodetable.Down)
	// StateDraining: the node was removed from the node list; it takes no new connection, its
	// idle connections are closed and its in-use ones close when they return to the pool. It
	// leaves Stats when its last connection closes.
	StateDraining = NodeState(nodetable.Draining)
)

// String returns "up", "down", "draining", or "unknown" for the zero value.
func (s NodeState) String() string { return nodetable.State(s).String() }

// RetireReason is why lbd retired a physical connection (marked it so that database/sql drops
// it at its next return or checkout, or closed it at once while idle).
type RetireReason uint8

const (
	// RetireNodeDown: the connection's node went down (or was down when its dial finished).
	RetireNodeDown = RetireReason(physical.NodeDown)
	// RetireNodeDraining: the node left the node list and drains (or was draining when the dial
	// finished).
	RetireNodeDraining = RetireReason(physical.NodeDraining)
	// RetireFatal: the connection returned an error the exception sorter judged fatal, or the
	// proxy broke the MySQL protocol on it.
	RetireFatal = RetireReason(physical.Fatal)
	// RetireRebalance: the rebalancer moved the connection's share to less loaded nodes.
	RetireRebalance = RetireReason(physical.Rebalance)
	// RetireTxEnd: COMMIT or ROLLBACK failed in statement mode, so the transaction may still be
	// open on the server; closing the connection rolls it back.
	RetireTxEnd = RetireReason(physical.TxEnd)
	// RetireRole: the node's role no longer suits the Connector's target (a switchover, a
	// role check), or the node refused a write as not the primary, or, in connection mode, a
	// node list moved the node out of the Connector's group (group) or into an isolated one.
	RetireRole = RetireReason(physical.Role)

	// NumRetireReasons is how many reasons there are: the length of NodeStats.RetiredBy.
	NumRetireReasons = RetireReason(physical.NumReasons)
)

// String returns the reason as logs and metrics label it: "node_down", "node_draining",
// "fatal", "rebalance", "tx_end_failed", "role".
func (r RetireReason) String() string {
	switch r {
	case RetireNodeDown:
		return "node_down"
	case RetireNodeDraining:
		return "node_draining"
	case RetireFatal:
		return "fatal"
	case RetireRebalance:
		return "rebalance"
	case RetireTxEnd:
		return "tx_end_failed"
	case RetireRole:
		return "role"
	}
	return "unknown"
}
