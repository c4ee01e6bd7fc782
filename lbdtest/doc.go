// Package lbdtest runs an in-process cluster of MySQL-protocol proxies for
// tests, examples and benchmarks, in the spirit of net/http/httptest.
//
// A Cluster owns one backend database and any number of proxies. Every
// proxy listens on its own 127.0.0.1 port chosen by the kernel and relays
// bytes to the same backend, so a table created through one proxy is
// visible through all the others. The relay is where faults are injected:
// a proxy can be stopped and restarted on the same port, hung (connections
// are accepted but no byte flows), slowed down per statement, or told to
// answer the next statements with a MySQL error packet. It also counts
// connections and statements and remembers recent SQL text.
//
// # Backends
//
// By default the backend is a single in-memory go-mysql-server engine
// behind one MySQL-protocol listener on 127.0.0.1, holding one database
// (named "test" unless WithDatabase says otherwise). Clients log in as
// user "root" with an empty password. The in-memory storage is not built
// for concurrent writers, so the backend runs one statement at a time
// (results are sent outside that lock). That makes autocommit statements
// from many connections safe, but explicit transactions are not isolated
// from each other: when a transaction commits, the tables it used are
// written back whole, dropping changes that other connections made to them
// in the meantime. A prepared statement is only parsed at prepare time;
// other errors show up when it executes. Lookups scan tables, so keep test
// tables small. lbd's health probe ("/* ping */ SELECT 1", and a bare
// "SELECT 1") is answered at once without waiting for that one-at-a-time
// lock, as a real proxy answers it while busy, and so is any SELECT of one
// literal (the relay's answer to a role check, see Role); the relay still
// counts them. WithTLS makes it offer TLS (go-mysql-server has no protocol
// compression).
//
// When the environment variable LBD_TEST_MYSQL_DSN holds a
// go-sql-driver DSN (for example "root:@tcp(127.0.0.1:3306)/test"), no
// in-memory server is started: the proxies relay to that server instead,
// and User, Password and Database report the credentials from the DSN.
// Tables in such a database outlive the cluster, so tests should use
// unique table names and drop them.
//
// # Protocol awareness
//
// The relay understands just enough of the MySQL client/server protocol to
// find command boundaries in the client-to-server direction: packets whose
// sequence id is 0 start a command. COM_QUERY, COM_STMT_PREPARE and
// COM_STMT_EXECUTE are "statements"; they are counted, delayed by the
// configured latency (SetLatency: every statement; DelayQueries: those
// whose text starts with a prefix) and can be failed (FailNext,
// FailQueries). Server-to-client bytes are forwarded untouched.
//
// # Roles
//
// A proxy can act as a primary (the default), a read-only replica or an
// OceanBase standby tenant (Proxy.SetRole): a replica or standby refuses
// writes with the error such a server sends and answers role checks
// (@@global.read_only, OceanBase's DBA_OB_TENANTS, Galera's wsrep status,
// Group Replication's replication_group_members) for itself. Switchover
// flips the roles of two groups of proxies, optionally with a gap during
// which neither group is primary. See Role.
//
// Connections that negotiate TLS or protocol compression cannot be parsed
// by the relay. Their bytes are still forwarded faithfully (and Hang and
// Stop still apply), but statements on them are neither counted, recorded,
// delayed nor failed. The in-memory backend offers neither, so this only
// happens with an external backend.
//
// # Timeouts against a hung proxy
//
// A hung proxy still completes the TCP handshake. Plain go-sql-driver's
// "timeout" DSN parameter bounds only that dial, so a plain client needs
// "readTimeout" or a context deadline to give up on a hung proxy while
// waiting for the server greeting or a reply. lbd bounds the dial and the
// handshake together, per proxy.
package lbdtest
