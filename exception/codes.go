package exception

import "strconv"

// OceanBase reserves its internal codes -8000 to -9000 for conditions in
// which the client has to close the connection (the server is initializing,
// stopping, saw a corrupt packet, ...). On the MySQL wire they arrive as
// positive numbers such as "8001 (08004) Server is initializing" and
// "8002 (08004) Server is stopping".
const (
	obFatalMin    = 8000  // lowest OceanBase wire number meaning "close this connection"
	obFatalMax    = 8999  // highest OceanBase wire number meaning "close this connection"
	obFatalNegMin = -9000 // lowest internal (negative) form, as the Java driver checks it
	obFatalNegMax = -8000 // highest internal (negative) form
)

// IsOceanBaseFatalCode reports whether code is in OceanBase's
// "client must close the connection" range: 8000 to 8999 inclusive as sent
// on the MySQL wire, or -9000 to -8000 inclusive, the internal form a proxy
// might pass through unchanged in a signed number field.
//
// go-sql-driver's MySQLError.Number is unsigned, so only the positive form
// can come from it; the negative form is accepted for sorters built on other
// error types.
//
// The positive range collides with TiDB's own error numbers (8001 memory
// quota exceeded, 8005 write conflict, 8027/8028 schema changed, ...), which
// are per-statement or per-transaction failures on a healthy session.
// Deployments whose proxies are all TiDB should register a sorter that does
// not apply this rule.
func IsOceanBaseFatalCode(code int) bool {
	return (code >= obFatalMin && code <= obFatalMax) ||
		(code >= obFatalNegMin && code <= obFatalNegMax)
}

// The MySQL server error numbers the rules of this package name live in this one table, grouped
// by what they mean for a connection and for a node. The names and meanings are those of the
// MySQL Server Error Message Reference; MariaDB's error code list uses the same numbers and
// names for all of them, and OceanBase's MySQL mode reserves 0001-3999 for MySQL's own numbers
// with MySQL's meaning. A number may belong to more than one group: 1045 is fatal to the
// connection that received it and the same on every node.

// MySQL server error numbers treated as fatal. They are the numbers of the
// Java lb-driver's sorter that survive review; the ones dropped are listed
// further down with the reason.
const (
	// Communications: the server refused or could not set up the session,
	// or cannot talk on this socket. Most arrive during the handshake, so
	// there is no usable session behind the error.
	erConCount       = 1040 // ER_CON_COUNT_ERROR "Too many connections": the server refused this session.
	erBadHost        = 1042 // ER_BAD_HOST_ERROR "Can't get hostname for your address": refused at handshake.
	erHandshake      = 1043 // ER_HANDSHAKE_ERROR "Bad handshake": the session was never established.
	erUnknownCom     = 1047 // ER_UNKNOWN_COM_ERROR "Unknown command": client and server disagree on the protocol stream.
	erIPSock         = 1081 // ER_IPSOCK_ERROR "Can't create IP socket": the server side of the session cannot do network I/O.
	erHostBlocked    = 1129 // ER_HOST_IS_BLOCKED: the server refuses every session from this host until FLUSH HOSTS.
	erHostNotAllowed = 1130 // ER_HOST_NOT_PRIVILEGED "Host is not allowed to connect": refused at handshake.

	// Authentication: a failed handshake or COM_CHANGE_USER leaves no
	// authenticated session on the connection. It is also the same on every
	// node (see below).
	erAccessDenied = 1045 // ER_ACCESS_DENIED_ERROR "Access denied for user".

	// Memory and resources: the server marks out-of-memory as a fatal error
	// of the session, whose state is then uncertain; closing the session
	// also releases its per-session server memory, which helps the server
	// recover.
	erOutOfMemory    = 1037 // ER_OUTOFMEMORY "Out of memory; restart server".
	erOutOfResources = 1041 // ER_OUT_OF_RESOURCES: could not allocate memory/threads for the session.

	// Read-only server: a statement was refused because the server runs
	// with --read-only (a replica, or a primary demoted by failover), so the
	// connection has to move to a writable server. go-sql-driver's
	// rejectReadOnly option turns this number into driver.ErrBadConn, which
	// is fatal as well. The same number is also used for --secure-file-priv
	// and --skip-grant-tables refusals on a healthy session; retiring one
	// connection for those rare statements is the accepted price of never
	// missing a failover.
	erOptionPrevents = 1290 // ER_OPTION_PREVENTS_STATEMENT.
)

// MySQL server error numbers deliberately NOT treated as fatal although the
// Java lb-driver (or an older sorter it derives from) lists them. Retiring a
// connection for any of these would throw away a healthy session and buy
// nothing, since every proxy fronts the same backend and the next connection
// would hit the same condition.
const (
	erCantCreateFile  = 1004 // ER_CANT_CREATE_FILE: a DDL, temporary-file or SELECT ... INTO OUTFILE statement failed on the server's filesystem; the session is intact.
	erCantCreateTable = 1005 // ER_CANT_CREATE_TABLE: per-statement DDL failure (bad foreign key, engine refusal, ...).
	erCantLock        = 1015 // ER_CANT_LOCK "Can't lock file": a server-side lock on a table file failed for one statement.
	erDiskFull        = 1021 // ER_DISK_FULL: backend storage condition shared by every connection; reconnecting cannot help and only adds load while space is freed.
	erErrorOnClose    = 1023 // ER_ERROR_ON_CLOSE "Error on close of '<file>'": a server-side file close failed; it is not about the client connection.
	erOutOfSortMemory = 1038 // ER_OUT_OF_SORTMEMORY: one query needs a larger sort_buffer_size; it fails identically on every connection.
	erTableAccess     = 1142 // ER_TABLEACCESS_DENIED_ERROR: per-statement privilege check; the session is fine.
	erSpecificAccess  = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR "you need (at least one of) the X privilege(s)": per-statement privilege check.
)

// MySQL server error numbers that every proxy of a cluster answers alike, because they come
// from the user, grant and schema definitions the proxies share: trying another node cannot
// help and the node is not at fault (see [SameOnEveryNode]). 1045 (erAccessDenied, above) is
// one of them.
const (
	erDBAccessDenied         = 1044 // ER_DBACCESS_DENIED_ERROR "Access denied for user ... to database": the user may not use this database.
	erBadDB                  = 1049 // ER_BAD_DB_ERROR "Unknown database".
	erUnknownSystemVariable  = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE: a DSN parameter go-sql-driver sent as SET names no variable (often a typo).
	erAccessDeniedNoPassword = 1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR "Access denied for user": the account needs another authentication method (MySQL 5.7+, MariaDB unix_socket).
)

// sameOnEveryNodeNumbers holds the numbers [SameOnEveryNode] answers true for.
var sameOnEveryNodeNumbers = map[uint16]bool{
	erDBAccessDenied: true, erAccessDenied: true, erBadDB: true,
	erUnknownSystemVariable: true, erAccessDeniedNoPassword: true,
}

// fatalNumbers maps every fatal MySQL error number to its reason string,
// "mysql-" followed by the number.
var fatalNumbers = buildFatalNumbers(
	erConCount, erBadHost, erHandshake, erUnknownCom, erIPSock,
	erHostBlocked, erHostNotAllowed, erAccessDenied,
	erOutOfMemory, erOutOfResources, erOptionPrevents,
)

func buildFatalNumbers(numbers ...uint16) map[uint16]string {
	m := make(map[uint16]string, len(numbers))
	for _, n := range numbers {
		m[n] = ReasonMySQLPrefix + strconv.Itoa(int(n))
	}
	return m
}
