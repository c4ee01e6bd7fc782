package lbd

import (
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
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
	// CausePanic: a panic-mode dial succeeded while no node was up. The node comes up at once,
	// without the recoverCheckCount good probes a probe-led recovery needs: that rule keeps
	// load off a doubtful node while others can carry it, and with none up the alternative is
	// failing every Connect. The node stays probed; a failed probe takes it down again.
	CausePanic = TransitionCause(nodetable.CausePanic)
	// CausePassive: passive outlier detection: what the application's statements saw (a lost
	// connection, a statement timeout, statements stalled on the node while the others
	// answer), confirmed by a probe under a short deadline; capped by maxEjectionPercent.
	CausePassive = TransitionCause(nodetable.CausePassive)
)

// NumTransitionCauses is how many causes there are: the length of NodeStats.TransitionsBy.
const NumTransitionCauses = nodetable.NumCauses

// String returns the cause as logs and metrics label it: "probe", "dial", "fatal", "node_list",
// "role", "panic", "passive".
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
