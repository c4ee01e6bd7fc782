package exception

// Server error numbers that say "this node does not take writes now": the statement was refused
// before it ran, because the node is a read-only replica or a standby, or was demoted by a
// switchover or failover. They are about the node's role, not its health: a client should find
// the node that is primary now (re-check roles) rather than count a failure against this one.
const (
	// erOptionPrevents (1290, ER_OPTION_PREVENTS_STATEMENT, above) is MySQL's and MariaDB's
	// answer to a write on a server running with --read-only or --super-read-only.

	// erReadOnlyMode is MySQL's ER_READ_ONLY_MODE "Running in read-only mode" (1836), sent when
	// the server refuses a write during its own read-only phase (MySQL Server Error Message
	// Reference; MariaDB uses the number for the same condition).
	erReadOnlyMode = 1836
	// obNotPrimaryTenant is OceanBase's OB_NOT_PRIMARY_TENANT (-4782; 4782 on the MySQL wire):
	// the statement was sent to a standby tenant. OceanBase's proxy ODP takes it as the sign of
	// a switchover and retries on the other tenant, never inside a transaction.
	obNotPrimaryTenant = 4782
	// erCantExecuteInReadOnlyTx is ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION "Cannot execute
	// statement in a READ ONLY transaction" (1792; MySQL Server Error Message Reference,
	// MariaDB alike): a write in a transaction that is read-only. The caller's own read-only
	// transaction gets it, and so does every write on a server whose transactions are
	// read-only by default (transaction_read_only=ON), as a demoted primary or a reader may be:
	// go-sql-driver's rejectReadOnly treats it as 1290 and 1836, for Aurora's failover.
	erCantExecuteInReadOnlyTx = 1792
)

// notPrimaryNumbers holds the numbers [NotPrimary] answers true for.
var notPrimaryNumbers = map[uint16]bool{erOptionPrevents: true, erReadOnlyMode: true, obNotPrimaryTenant: true}

// NotPrimary reports whether err is a server's refusal to run a write because the node is not
// the primary: 1290 (MySQL/MariaDB read-only server), 1836 (MySQL read-only mode) or 4782
// (OceanBase standby tenant). The server did not run the statement. Outside a transaction it
// may run again on the node that is primary now; inside one the transaction must start over
// there.
//
// The first *mysql.MySQLError in err's tree decides, as for [SameOnEveryNode]; a nil or
// non-MySQL error gives false. 1290 is also fatal to its connection under the default rules
// ([Classify]), so that pooled connections to a demoted primary are retired.
func NotPrimary(err error) bool {
	me := firstServerError(err)
	return me != nil && notPrimaryNumbers[me.Number]
}

// ReadOnlyTransaction reports whether err is a server's 1792 (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION):
// a write refused, before it ran, because its transaction is read-only. It says the node is not
// the primary only when the caller did not make the transaction read-only (a database/sql
// transaction begun with ReadOnly, START TRANSACTION READ ONLY, the session's own
// transaction_read_only): then the server's transactions are read-only by default. [NotPrimary]
// leaves it out; the caller, which knows the transaction, decides. The first
// *mysql.MySQLError in err's tree decides.
func ReadOnlyTransaction(err error) bool {
	me := firstServerError(err)
	return me != nil && me.Number == erCantExecuteInReadOnlyTx
}

// StandbyTenant reports whether err is OceanBase's 4782 (OB_NOT_PRIMARY_TENANT): the node
// serves a standby tenant, which takes no statement of this tenant now. It is one of the
// refusals [NotPrimary] names; the others (1290, 1836) come from a read-only server, a replica.
func StandbyTenant(err error) bool {
	me := firstServerError(err)
	return me != nil && me.Number == obNotPrimaryTenant
}
