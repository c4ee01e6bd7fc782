package lbd

// NodeState is where a node stands in the balancer.
type NodeState int32

const (
	// StateUnknown is the zero value: no node has it (Stats.Node answers it with ok false).
	StateUnknown NodeState = iota
	// StateUp: the node takes new connections.
	StateUp
	// StateDown: the node is blocked (failed probes or dials); it takes no new connection and
	// comes back after recoverCheckCount consecutive good probes.
	StateDown
	// StateDraining: the node was removed from the node list; it takes no new connection, its
	// idle connections are closed and its in-use ones close when they return to the pool. It
	// leaves Stats when its last connection closes.
	StateDraining
)

// String returns "up", "down", "draining", or "unknown" for the zero value.
func (s NodeState) String() string {
	switch s {
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	case StateDraining:
		return "draining"
	}
	return "unknown"
}
