package exception

// Reasons returned by [Classify] for fatal errors. They are stable
// identifiers meant for logs and metrics; new ones may be added, existing
// ones will not change meaning. A non-fatal error has the empty reason.
const (
	// ReasonOceanBase: a MySQL error number between 8000 and 8999, OceanBase's
	// "client must close the connection" range (see IsOceanBaseFatalCode).
	ReasonOceanBase = "oceanbase-8000-8999"

	// ReasonMySQLPrefix starts the reason for a fatal MySQL error number,
	// which is this prefix followed by the decimal number, for example
	// "mysql-1040" (too many connections) or "mysql-1290" (read-only server).
	ReasonMySQLPrefix = "mysql-"

	// ReasonSQLState08: the server reported SQLSTATE class 08, "connection
	// exception", for a number that has no rule of its own.
	ReasonSQLState08 = "sqlstate-08"

	// ReasonInvalidConn: go-sql-driver's mysql.ErrInvalidConn, returned when
	// it found the connection broken mid-command.
	ReasonInvalidConn = "invalid-conn"

	// ReasonBadConn: database/sql/driver.ErrBadConn, the driver's own signal
	// that the connection must be discarded.
	ReasonBadConn = "bad-conn"

	// ReasonProtocol: the driver lost track of packet framing
	// (mysql.ErrMalformPkt, mysql.ErrPktSync, mysql.ErrPktSyncMul) or wrote a
	// packet only partly (io.ErrShortWrite).
	ReasonProtocol = "protocol-desync"

	// ReasonEOF: io.EOF or io.ErrUnexpectedEOF, the peer closed the stream.
	ReasonEOF = "eof"

	// ReasonConnClosed: net.ErrClosed, the local end of the socket is closed.
	ReasonConnClosed = "conn-closed"

	// ReasonConnReset: syscall.ECONNRESET, the peer reset the connection.
	ReasonConnReset = "conn-reset"

	// ReasonConnRefused: syscall.ECONNREFUSED, nothing listens on the address.
	ReasonConnRefused = "conn-refused"

	// ReasonBrokenPipe: syscall.EPIPE, a write to a connection the peer closed.
	ReasonBrokenPipe = "broken-pipe"

	// ReasonConnAborted: syscall.ECONNABORTED, the connection was aborted
	// locally.
	ReasonConnAborted = "conn-aborted"

	// ReasonNetTimeout: a net.Error whose Timeout method reports true and
	// that is not the caller's context deadline; a read or write deadline hit
	// mid-protocol leaves the stream at an unknown position.
	ReasonNetTimeout = "net-timeout"

	// ReasonProxyMessage: a proxy reported that it has no usable backend
	// ("no alive datasource", "no datasource", "could not create connection").
	ReasonProxyMessage = "proxy-message"

	// ReasonLinkFailure: the text "communications link failure" with no error
	// number (number 0, or no MySQL error at all).
	ReasonLinkFailure = "link-failure"
)
