package lbd

import "time"

// Panic mode: when no node is up (none takes new connections), Connect does not fail closed
// with "every proxy is down" at once. It dials the down node that failed least recently, and
// the next one when that fails: at most panicDialsPerConnect such dials per Connect, at most
// one in flight per node, and one node's dials at least panicSpacing apart, so that a dead
// fleet sees a few dials per node and spacing rather than one per caller. A dial that gives a
// connection while no node is up brings its node up at once (CausePanic). Draining and standby
// nodes are never dialled. Envoy's panic threshold and gRPC's pick-first fallback are the
// precedents; internal/nodetable's PanicPick holds the rules.

// panicDialsPerConnect bounds the panic-mode dials one Connect makes: the least recently failed
// node, and one more should that dial fail.
const panicDialsPerConnect = 2

// panicSpacing is the least time between two panic-mode dials of one node: a twentieth of the
// probe interval, within [10 ms, 1 s] (250 ms at the default 5 s interval), so that a proxy
// that comes back is used within a fraction of a probe interval, and a dead one costs a
// Connector at most a few dials per second.
func panicSpacing(interval time.Duration) time.Duration {
	return min(max(interval/20, 10*time.Millisecond), time.Second)
}
