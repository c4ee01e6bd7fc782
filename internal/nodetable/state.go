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
	// half a probe interval apart.
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
