package lbd

import "github.com/lbd-go/lbd/internal/nodetable"

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
