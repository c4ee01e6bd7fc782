// Package health is per-node health: each node's probe and the prober that runs it (with the
// role, replica-lag and HTTP status checks riding on it), the passive signals the application's
// own statements give (lost connections, stalls, error rate, fatal errors), the reactions to a
// node's state and role changes (retiring its connections, draining it, waking the Connects that
// wait for a node of their target), ejection and recovery, and what a failed statement on a
// node sets off (the physical.Hooks every node is given: the exception sorter's verdict, role
// refusals, shutdowns, the retries of reads and prepares, and the retry budget they draw on).
//
// The node table (internal/nodetable) holds the states and the rules that move them; this
// package feeds it the evidence and acts on its transitions. It knows nothing of statement mode:
// whatever differs between the balance modes reaches it as a function or a value in Config.
//
// # Imports
//
// Imports run one way: the root package lbd → internal/connect → internal/health,
// internal/logical and internal/rebalance (one tier) → internal/physical → internal/nodetable →
// internal/pick. This package imports neither the root nor another package of its tier: the root builds it with a Config of functions and values (as
// internal/logical), and it never holds the Connector. internal/testkit's TestImportsRunOneWay
// checks the rule.
package health
