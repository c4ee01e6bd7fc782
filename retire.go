package lbd

import "github.com/lbd-go/lbd/internal/physical"

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
	// role check), or the node refused a write as not the primary.
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
