package nodetable

// State is where a node stands in the table. lbd's NodeState has the same values.
type State int32

const (
	// Unknown is the zero value; no node in a table has it.
	Unknown State = iota
	// Up: the node takes new connections (unless it is standby).
	Up
	// Down: the node is blocked after failed probes, dials or fatal errors; it takes no new
	// connection and comes back after RecoverCount consecutive good probes, spaced at least
	// RecoverSpacing apart (see Probed).
	Down
	// Draining: the node left the node list; it takes no new connection and leaves the table
	// when its last connection closes.
	Draining
)

// String returns "up", "down", "draining", or "unknown" for the zero value.
func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	case Draining:
		return "draining"
	}
	return "unknown"
}

// Cause is what decided a state change: the signal behind a Transition. lbd's TransitionCause
// has the same values.
type Cause uint8

const (
	// CauseProbe: a probe's answer (a failed probe, or enough good ones to recover).
	CauseProbe Cause = iota
	// CauseDial: consecutive failed dials of new connections.
	CauseDial
	// CauseFatal: errors the exception sorter judged fatal, over the threshold within the window.
	CauseFatal
	// CauseNodeList: the node list changed (a node removed, listed again, or drained away).
	CauseNodeList
	// CauseRole: the node's role changed (a role check, the source, or a refused write); the
	// state is left alone.
	CauseRole
	// CausePanic: a panic-mode dial succeeded while no node was up (see PanicDialed).
	CausePanic
	// CausePassive: a passive signal from the application's own statements (a lost
	// connection, a statement timeout, statements stalled on the node), confirmed by a probe.
	CausePassive
	// CauseShutdown: the node announced its shutdown (MySQL's 1053 on a statement, a probe or a
	// handshake, or its HTTP status check answering that it stops); see Shutdown.
	CauseShutdown

	// NumCauses is how many causes there are; counters indexed by Cause have this length.
	NumCauses int = iota
)

// String returns the cause's name as logs and metrics label it: "probe", "dial", "fatal",
// "node_list", "role", "panic", "passive", "shutdown".
func (c Cause) String() string {
	switch c {
	case CauseProbe:
		return "probe"
	case CauseDial:
		return "dial"
	case CauseFatal:
		return "fatal"
	case CauseNodeList:
		return "node_list"
	case CauseRole:
		return "role"
	case CausePanic:
		return "panic"
	case CausePassive:
		return "passive"
	case CauseShutdown:
		return "shutdown"
	}
	return "unknown"
}
