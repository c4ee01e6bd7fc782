package physical

import "github.com/lbd-go/lbd/internal/nodetable"

// Reason is why a physical connection was retired; the root's RetireReason has the same
// values and documents each.
type Reason uint8

// The reasons, in the order of the root's RetireReason constants.
const (
	NodeDown Reason = iota
	NodeDraining
	Fatal
	Rebalance
	TxEnd
	Role

	NumReasons
)

// ReasonFor is the reason for retiring the connections of a node in state s (not up).
func ReasonFor(s nodetable.State) Reason {
	if s == nodetable.Draining {
		return NodeDraining
	}
	return NodeDown
}
