package exception

// Server errors that say the server rolled back the whole transaction, so that the client may
// run it again from its start. They fail the transaction, not the session: none is fatal to
// its connection ([Classify]).
const (
	// erLockDeadlock is ER_LOCK_DEADLOCK (1213, SQLSTATE 40001), "Deadlock found when trying to
	// get lock; try restarting transaction". InnoDB answers it to the transaction it chose as
	// the deadlock's victim after rolling that transaction back whole: "A transaction deadlock
	// causes InnoDB to roll back the entire transaction. Retry the whole transaction when this
	// happens." (MySQL Reference Manual, InnoDB Error Handling; MariaDB behaves alike). Galera
	// (MariaDB Cluster) answers it to a transaction that lost a certification conflict, also
	// rolled back whole.
	erLockDeadlock = 1213
	// erLockWaitTimeout is ER_LOCK_WAIT_TIMEOUT (1205, SQLSTATE HY000), "Lock wait timeout
	// exceeded; try restarting transaction". It is NOT such an error: by default InnoDB rolls
	// back only the statement that waited, and the transaction stays open with its earlier
	// statements' effects ("A lock wait timeout causes InnoDB to roll back the current
	// statement ... To have the entire transaction roll back, start the server with
	// --innodb-rollback-on-timeout enabled", same manual page; MariaDB's
	// innodb_rollback_on_timeout is OFF by default as well). The client cannot tell from the
	// error which of the two happened, so running the transaction again could repeat what the
	// rolled-back statement's predecessors did. It is named here so that the choice is visible.
	erLockWaitTimeout = 1205
)

// sqlStateSerializationFailure is SQLSTATE 40001, class 40 "transaction rollback", subclass 001
// "serialization failure" in ISO/IEC 9075 (SQL): the server rolled back the transaction because
// it could not be serialized with others. MySQL and MariaDB send it with 1213; other
// MySQL-protocol servers use it for their own serialization failures.
var sqlStateSerializationFailure = [5]byte{'4', '0', '0', '0', '1'}

// TransactionRolledBack reports whether err is a server error that says the server rolled back
// the whole transaction the statement ran in, so that the transaction may run again from its
// start: 1213 (ER_LOCK_DEADLOCK: a deadlock's victim, or a Galera certification conflict) or any
// error with SQLSTATE 40001 (serialization failure). 1205 (ER_LOCK_WAIT_TIMEOUT) gives false: by
// default the server rolls back only the statement that timed out.
//
// The first *mysql.MySQLError in err's tree decides, as for [SameOnEveryNode]; a nil or
// non-MySQL error gives false. Whether a client error (a broken connection, a role change)
// also ends the transaction is the caller's question: only the server knows what it rolled
// back, and these are the answers that say so.
func TransactionRolledBack(err error) bool {
	me := firstServerError(err)
	return me != nil && (me.Number == erLockDeadlock || me.SQLState == sqlStateSerializationFailure)
}
