// Package detect runs lbd's two background loops: the health prober, which
// checks every node at a fixed interval (one schedule, a bounded set of
// workers), and the rebalancer, which evens out
// the number of pooled connections held to each up node.
//
// The package knows nothing about MySQL or about node state. The caller
// supplies a Target per node (how to probe it) and a Cluster (how to read
// connection counts and retire idle connections); detect decides when those
// are called, on which goroutine, and how they are stopped. Marking a node
// up or down from probe results is the caller's business, done in the
// Report callback.
//
// # Lifecycle
//
// Each loop has a single owner and its own context, derived from
// context.Background rather than from any caller's context, so a request
// that is cancelled never cancels a health check. Close cancels that context
// and waits until every goroutine the loop started has returned; after Close
// no callback is running and none will be made. Close is idempotent.
//
// # Time
//
// Scheduling goes through a clock.Clock so tests can drive the loops by hand.
// The one exception is the per-probe timeout of the Prober, which is a
// context deadline on real time (see ProberConfig.Timeout).
package detect
