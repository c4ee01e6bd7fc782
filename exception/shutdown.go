package exception

// erServerShutdown is ER_SERVER_SHUTDOWN, "Server shutdown in progress" (1053, SQLSTATE 08S01):
// the server, or the proxy in front of it, is stopping. MySQL and MariaDB send it to a
// statement they refuse, and in place of the greeting to a connection they no longer accept,
// once a shutdown has begun; MySQL Router, ProxySQL and TiDB answer the same number while they
// stop. It is a connection error (class 08) and so fatal to its connection by [Classify]'s
// SQLSTATE rule; [ServerShutdown] names it apart because it says more: the whole node is
// leaving, on purpose, and the statement it answers did not run.
const erServerShutdown = 1053

// ServerShutdown reports whether err is a server's or proxy's announcement that it is shutting
// down (1053, ER_SERVER_SHUTDOWN): it refused the statement or the connection before running
// anything, and will take no more work. A client should stop sending it new work, let work in
// flight finish, and run a refused statement that was not in a transaction again on another
// node.
//
// The first *mysql.MySQLError in err's tree decides, as for [SameOnEveryNode]; a nil or
// non-MySQL error gives false.
func ServerShutdown(err error) bool {
	me := firstServerError(err)
	return me != nil && me.Number == erServerShutdown
}
