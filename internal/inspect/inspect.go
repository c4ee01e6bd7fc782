// Package inspect reads a few facts of a Connector's inner state that its exported API does not
// report, for lbd's cluster suites: they are a module of their own (their SQL-engine cluster
// must stay out of the root module's graph), so they cannot be white-box tests of package lbd,
// and a Go internal package is the one way such a module may reach them. The root package sets
// these functions when it is initialised; nothing else may set them, and nothing outside lbd's
// tests should call them.
//
// Each function takes the *lbd.Connector (or a driver.Conn it returned) as an any, because this
// package cannot import the root package that imports it.
package inspect

var (
	// PreparedQueries returns the query texts statement mode keeps prepared for the Connector
	// c, with how many references (open logical statements) each holds. It takes the prepared
	// set's lock and is safe at any time.
	PreparedQueries func(c any) map[string]int

	// ServerStatements returns how many prepared statements the Connector c keeps open on the
	// servers, over every physical connection of every node. Only safe while no other
	// goroutine uses c.
	ServerStatements func(c any) int

	// Pinned reports whether dc, a driver.Conn from the Connector, is a statement-mode logical
	// connection pinned to its physical connection (by a transaction or session state); ok is
	// false when dc is not a logical connection.
	Pinned func(dc any) (pinned, ok bool)
)
