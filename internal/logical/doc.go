// Package logical is statement mode: the logical connections and transactions database/sql
// pools, borrowing physical connections from their nodes and parking them again, the
// prepared-statement set the logical connections share, and one router that decides where a
// statement goes and what it waits for there (the read/write split, read-your-writes by time,
// causal reads by GTID position).
//
// # Pins
//
// A logical connection holds no socket of its own: at its first statement after each checkout
// it binds a physical connection, and gives it back when database/sql takes it back, unless
// something pins it (session state, a transaction, a result the next statement may read); see
// logicalConn.
//
// # Imports
//
// Imports run one way: the root package lbd → internal/connect → internal/logical,
// internal/health and internal/rebalance (one tier) → internal/physical → internal/nodetable →
// internal/pick. This package imports neither the root nor another package of its tier: the
// root builds it with a Config of functions (the connect path's TryNodes and Node, clock,
// logger, the split's settings).
// internal/testkit's TestImportsRunOneWay checks the rule.
package logical
