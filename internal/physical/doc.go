// Package physical is one connection to one proxy, from dial to close: the dial and its
// context ticket, the socket with lbd's protocol guard and deadline caps, the greeting check,
// the wrapped go-sql-driver connection with its Stmt, Rows and Tx, the connection's state
// machine, and each node's registry of live and idle connections.
//
// # State machine
//
// A connection is fresh (dialed, not used yet), in use, idle (in database/sql's free list, or
// parked on its node in statement mode) or closed. Only this package reads or moves the state:
//
//	fresh ──Claim/enter──► in use ◄──Claim/enter── idle
//	  │                     │  ▲                     ▲ │
//	  │                     │  └──────────────────── │ │
//	  ├──Park──────────────────────IsValid──────────►┘ │
//	  └──RetireIfIdle/Close──► closed ◄──RetireIfIdle/Close
//
// Retired is a mark beside the state (Retire, MarkRetired): a retired connection is dropped at
// its next return or checkout, never cut mid-statement; an idle or fresh one closes at once.
//
// # Imports
//
// Imports run one way: the root package lbd → internal/logical → internal/physical →
// internal/nodetable → internal/pick. This package imports neither the root nor
// internal/logical; it reaches the Connector only through the Hooks value each node is given
// at construction (as a gRPC balancer is handed a balancer.ClientConn, never the ClientConn).
// internal/testkit's TestImportsRunOneWay checks the rule.
package physical
