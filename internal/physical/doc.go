// Package physical is one connection to one proxy, from dial to close: the dial and its
// context ticket, the socket with lbd's protocol guard and deadline caps, the greeting check,
// TLS and the compressed protocol run beneath go-sql-driver (transport.go, login.go),
// the wrapped go-sql-driver connection with its Stmt, Rows and Tx, the connection's state
// machine, and each node's registry of live and idle connections.
//
// # State machine
//
// A connection is fresh (dialed, not used yet), in use, idle (in database/sql's free list, or
// parked on its node in statement mode) or closed. Only this package reads or moves the state
// (state.go holds every move):
//
//	fresh  → in use   the first operation (enter), or ClaimFresh (statement mode's dial)
//	idle   → in use   an operation or ResetSession at checkout (enter), Claim, PopFree
//	in use → idle     IsValid, when database/sql (or statement mode) takes it back
//	fresh  → idle     Park, or IsValid of a connection never used
//	idle, fresh → closed   RetireIfIdle, PopOldestFree (idle only)
//	any    → closed   Close
//	idle, fresh → in use → back   a prepared statement's Close on a connection not in use
//
// Retired is a mark beside the state (MarkRetired, Retire): a retired connection is dropped at
// its next return or checkout, never cut mid-statement; Retire also closes an idle or fresh one
// at once. A connection whose node is not up is retired at its next checkout or return.
//
// # Imports
//
// Imports run one way: the root package lbd → internal/logical and internal/health →
// internal/physical → internal/nodetable → internal/pick. This package imports neither the root
// nor internal/logical nor internal/health; it reaches the Connector only through the Hooks value each node is given
// at construction (as a gRPC balancer is handed a balancer.ClientConn, never the ClientConn).
// internal/testkit's TestImportsRunOneWay checks the rule.
package physical
