// Package exception decides whether an error returned while using a
// physical connection means that connection must not be reused.
//
// A load balancer over several MySQL-protocol proxies (OceanBase OBProxy,
// TiDB, ProxySQL, ...) keeps physical connections open to each proxy. When a
// statement fails it has to tell two situations apart: a per-statement
// failure on a healthy session (duplicate key, syntax error, deadlock, ...)
// after which the connection can go back to the pool, and a failure that
// leaves the session unusable (the proxy or server is shutting down, the TCP
// stream broke or is out of sync, the handshake was refused, ...). The
// second kind is called fatal, and the connection is retired.
//
// That decision is made by a [Sorter]. Sorters are registered by name with
// [Register] so a data source name can pick one with
// exceptionSorter=<name>; [Lookup] resolves the name and [Names] lists the
// valid choices. [Default], registered as [DefaultName], implements the
// MySQL/OceanBase rules described on [Classify].
//
// A second question has its answer here too: [SameOnEveryNode] reports server errors that
// every proxy of the cluster would answer alike (access denied, unknown database, ...), so
// that a caller fails fast instead of trying the next node, and blames no node.
//
// # Rule sources
//
// The MySQL error numbers come from the exception sorter of the Java
// lb-driver (itself derived from the long-standing JBoss/Druid MySQL
// exception sorters), reviewed one by one: a number that only fails a single
// statement on an otherwise healthy session is left out, because retiring a
// healthy connection costs a reconnect and, when several clients do it at
// once, a reconnect storm. Each decision is written next to its constant.
// The OceanBase range comes from OceanBase's error code reference, which
// states that a client receiving an 8xxx error must close the connection.
// The transport rules (EOF, reset, broken pipe, timeouts, ...) describe a
// byte stream that is either gone or in an unknown position mid-packet.
//
// # What a sorter is not
//
// A sorter looks at error values only. database/sql and go-sql-driver keep
// their own notion of a broken connection (driver.ErrBadConn and the
// driver.Validator check made before a connection goes back to the pool), and
// that notion still applies: in particular go-sql-driver closes a connection
// whose in-flight query was cancelled by its context and reports the
// context's error, which a sorter classifies as not fatal (see [Classify]).
package exception
