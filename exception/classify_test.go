package exception

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Common per-statement MySQL errors that must never retire a connection.
const (
	erDupEntry           = 1062 // ER_DUP_ENTRY
	erNoSuchTable        = 1146 // ER_NO_SUCH_TABLE
	erParseError         = 1064 // ER_PARSE_ERROR
	erQueryInterrupted   = 1317 // ER_QUERY_INTERRUPTED
	erUnknownError       = 1105 // ER_UNKNOWN_ERROR, the generic number proxies use
	erNetReadInterrupted = 1159 // ER_NET_READ_INTERRUPTED, SQLSTATE 08S01
)

// myErr builds a server error the way go-sql-driver reports one.
func myErr(number uint16, state, msg string) *mysql.MySQLError {
	e := &mysql.MySQLError{Number: number, Message: msg}
	copy(e.SQLState[:], state)
	return e
}

// fakeNetErr is a net.Error with a chosen Timeout result.
type fakeNetErr struct{ timeout bool }

func (e fakeNetErr) Error() string   { return fmt.Sprintf("fake net error (timeout=%v)", e.timeout) }
func (e fakeNetErr) Timeout() bool   { return e.timeout }
func (e fakeNetErr) Temporary() bool { return e.timeout }

func opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: err}
}

func sysOpErr(op string, errno syscall.Errno) error {
	return opErr(op, os.NewSyscallError(op, errno))
}

func TestClassify(t *testing.T) {
	live := collectRealNetErrors(t)
	var nilMySQLErr *mysql.MySQLError

	tests := []struct {
		name   string
		err    error
		fatal  bool
		reason string
	}{
		// nil
		{"nil", nil, false, ""},

		// OceanBase 8000-8999: the client must close the connection.
		{"ob 8000 lower bound", myErr(8000, "HY000", "internal"), true, ReasonOceanBase},
		{"ob 8001 server is initializing", myErr(8001, "08004", "Server is initializing"), true, ReasonOceanBase},
		{"ob 8002 server is stopping", myErr(8002, "08004", "Server is stopping"), true, ReasonOceanBase},
		{"ob 8999 upper bound", myErr(8999, "HY000", "x"), true, ReasonOceanBase},
		{"ob 7999 below range", myErr(7999, "HY000", "x"), false, ""},
		{"ob 9000 above range", myErr(9000, "HY000", "x"), false, ""},
		{"ob 8001 wrapped", fmt.Errorf("exec: %w", myErr(8001, "08004", "Server is initializing")), true, ReasonOceanBase},

		// SQLSTATE class 08.
		{"sqlstate 08S01 server shutdown", myErr(erServerShutdown, "08S01", "Server shutdown in progress"), true, ReasonSQLState08},
		{"sqlstate 08S01 net read interrupted", myErr(erNetReadInterrupted, "08S01", "Got timeout reading communication packets"), true, ReasonSQLState08},
		{"sqlstate 08004 unknown number", myErr(4999, "08004", "rejected"), true, ReasonSQLState08},
		{"sqlstate 08 wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", myErr(erServerShutdown, "08S01", "x"))), true, ReasonSQLState08},
		{"sqlstate HY000", myErr(4999, "HY000", "x"), false, ""},
		{"sqlstate 80000 is not class 08", myErr(4999, "80000", "x"), false, ""},
		{"sqlstate empty", myErr(4999, "", "x"), false, ""},

		// Fatal MySQL numbers: communications.
		{"1040 too many connections (number wins over 08004)", myErr(erConCount, "08004", "Too many connections"), true, "mysql-1040"},
		{"1042 bad host", myErr(erBadHost, "08S01", "Can't get hostname"), true, "mysql-1042"},
		{"1043 bad handshake", myErr(erHandshake, "08S01", "Bad handshake"), true, "mysql-1043"},
		{"1047 unknown command", myErr(erUnknownCom, "08S01", "Unknown command"), true, "mysql-1047"},
		{"1081 ip socket", myErr(erIPSock, "08S01", "Can't create IP socket"), true, "mysql-1081"},
		{"1129 host blocked", myErr(erHostBlocked, "HY000", "Host is blocked"), true, "mysql-1129"},
		{"1130 host not allowed", myErr(erHostNotAllowed, "HY000", "Host is not allowed to connect"), true, "mysql-1130"},
		// Authentication, memory/resources, read-only.
		{"1045 access denied", myErr(erAccessDenied, "28000", "Access denied for user"), true, "mysql-1045"},
		{"1037 out of memory", myErr(erOutOfMemory, "HY001", "Out of memory"), true, "mysql-1037"},
		{"1041 out of resources", myErr(erOutOfResources, "HY000", "Out of memory; check if mysqld"), true, "mysql-1041"},
		{"1290 read-only", myErr(erOptionPrevents, "HY000", "The MySQL server is running with the --read-only option"), true, "mysql-1290"},
		{"1290 wrapped", fmt.Errorf("insert: %w", myErr(erOptionPrevents, "HY000", "read-only")), true, "mysql-1290"},

		// Numbers from the reference list deliberately left out.
		{"1004 can't create file", myErr(erCantCreateFile, "HY000", "Can't create file"), false, ""},
		{"1005 can't create table", myErr(erCantCreateTable, "HY000", "Can't create table"), false, ""},
		{"1015 can't lock file", myErr(erCantLock, "HY000", "Can't lock file"), false, ""},
		{"1021 disk full", myErr(erDiskFull, "HY000", "Disk full"), false, ""},
		{"1023 error on close", myErr(erErrorOnClose, "HY000", "Error on close of 'x'"), false, ""},
		{"1038 out of sort memory", myErr(erOutOfSortMemory, "HY001", "Out of sort memory"), false, ""},
		{"1142 table access denied", myErr(erTableAccess, "42000", "SELECT command denied"), false, ""},
		{"1227 specific access denied", myErr(erSpecificAccess, "42000", "you need the SUPER privilege"), false, ""},

		// Everyday per-statement errors.
		{"1062 duplicate key", myErr(erDupEntry, "23000", "Duplicate entry '1' for key 'PRIMARY'"), false, ""},
		{"1146 no such table", myErr(erNoSuchTable, "42S02", "Table 'db.t' doesn't exist"), false, ""},
		{"1205 lock wait timeout", myErr(erLockWaitTimeout, "HY000", "Lock wait timeout exceeded"), false, ""},
		{"1213 deadlock", myErr(erLockDeadlock, "40001", "Deadlock found"), false, ""},
		{"1064 syntax error", myErr(erParseError, "42000", "You have an error in your SQL syntax"), false, ""},
		{"1317 query interrupted", myErr(erQueryInterrupted, "70100", "Query execution was interrupted"), false, ""},
		{"1062 wrapped", fmt.Errorf("insert: %w", myErr(erDupEntry, "23000", "dup")), false, ""},

		// Driver and database/sql sentinels.
		{"mysql.ErrInvalidConn", mysql.ErrInvalidConn, true, ReasonInvalidConn},
		{"driver.ErrBadConn", driver.ErrBadConn, true, ReasonBadConn},
		{"mysql.ErrMalformPkt", mysql.ErrMalformPkt, true, ReasonProtocol},
		{"mysql.ErrPktSync", mysql.ErrPktSync, true, ReasonProtocol},
		{"mysql.ErrPktSyncMul", mysql.ErrPktSyncMul, true, ReasonProtocol},
		{"io.ErrShortWrite", io.ErrShortWrite, true, ReasonProtocol},
		{"ErrInvalidConn wrapped", fmt.Errorf("query: %w", mysql.ErrInvalidConn), true, ReasonInvalidConn},
		{"ErrBadConn joined", errors.Join(errors.New("first"), driver.ErrBadConn), true, ReasonBadConn},

		// Transport errors.
		{"io.EOF", io.EOF, true, ReasonEOF},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, true, ReasonEOF},
		{"io.EOF wrapped", fmt.Errorf("read packet: %w", io.EOF), true, ReasonEOF},
		{"net.ErrClosed", net.ErrClosed, true, ReasonConnClosed},
		{"ECONNRESET", syscall.ECONNRESET, true, ReasonConnReset},
		{"ECONNRESET in *net.OpError", sysOpErr("read", syscall.ECONNRESET), true, ReasonConnReset},
		{"ECONNRESET in OpError wrapped and joined", errors.Join(errors.New("x"), fmt.Errorf("w: %w", sysOpErr("read", syscall.ECONNRESET))), true, ReasonConnReset},
		{"ECONNREFUSED", sysOpErr("dial", syscall.ECONNREFUSED), true, ReasonConnRefused},
		{"EPIPE", sysOpErr("write", syscall.EPIPE), true, ReasonBrokenPipe},
		{"ECONNABORTED", sysOpErr("read", syscall.ECONNABORTED), true, ReasonConnAborted},
		{"other errno", sysOpErr("read", syscall.EINVAL), false, ""},

		// Network timeouts.
		{"net.Error timeout", fakeNetErr{timeout: true}, true, ReasonNetTimeout},
		{"net.Error timeout wrapped", fmt.Errorf("read: %w", fakeNetErr{timeout: true}), true, ReasonNetTimeout},
		{"net.Error not a timeout", fakeNetErr{timeout: false}, false, ""},
		{"os.ErrDeadlineExceeded in OpError", opErr("read", os.ErrDeadlineExceeded), true, ReasonNetTimeout},
		{"real read deadline on loopback", live.readTimeout, true, ReasonNetTimeout},
		{"real read deadline wrapped", fmt.Errorf("read packet: %w", live.readTimeout), true, ReasonNetTimeout},

		// Real socket failures on loopback.
		{"real reset by peer", live.reset, true, ReasonConnReset},
		{"real peer closed", live.peerClosed, true, ReasonEOF},
		{"real use of closed connection", live.localClosed, true, ReasonConnClosed},
		{"real connection refused", live.refused, true, ReasonConnRefused},

		// The caller's context: never fatal on its own.
		{"context.Canceled", context.Canceled, false, ""},
		{"context.DeadlineExceeded", context.DeadlineExceeded, false, ""},
		{"context.Canceled wrapped", fmt.Errorf("query: %w", context.Canceled), false, ""},
		{"context.DeadlineExceeded wrapped", fmt.Errorf("query: %w", context.DeadlineExceeded), false, ""},
		{"context errors joined", errors.Join(context.Canceled, context.DeadlineExceeded), false, ""},
		{"real dial with expired caller deadline", live.dialCtxExpired, false, ""},
		{"real dial with cancelled caller context", live.dialCtxCancel, false, ""},

		// A context error does not hide a fatal cause: fatal wins.
		{"Canceled joined with io.EOF", errors.Join(context.Canceled, io.EOF), true, ReasonEOF},
		{"io.EOF joined with Canceled", errors.Join(io.EOF, context.Canceled), true, ReasonEOF},
		{"DeadlineExceeded joined with real read timeout", errors.Join(context.DeadlineExceeded, live.readTimeout), true, ReasonNetTimeout},
		{"DeadlineExceeded wrapping ErrInvalidConn", fmt.Errorf("%w: %w", context.DeadlineExceeded, mysql.ErrInvalidConn), true, ReasonInvalidConn},

		// Several causes: any fatal one makes the error fatal; server errors
		// give the reason first.
		{"1062 joined with io.EOF", errors.Join(myErr(erDupEntry, "23000", "dup"), io.EOF), true, ReasonEOF},
		{"1062 joined with 8001", errors.Join(myErr(erDupEntry, "23000", "dup"), myErr(8001, "08004", "init")), true, ReasonOceanBase},
		{"io.EOF joined with 1040", errors.Join(io.EOF, myErr(erConCount, "08004", "too many")), true, "mysql-1040"},

		// Message text, only where no usable number is sent.
		{"no alive datasource", myErr(erUnknownError, "HY000", "No alive datasource"), true, ReasonProxyMessage},
		{"no datasource, plain error", errors.New("proxy: NO DATASOURCE for group g1"), true, ReasonProxyMessage},
		{"could not create connection, mixed case", errors.New("Could Not Create Connection to database server"), true, ReasonProxyMessage},
		{"datasource text with number 0", myErr(0, "", "no alive datasource"), true, ReasonProxyMessage},
		{"datasource text in a non-wrapping leaf", fmt.Errorf("exec failed: %v", errors.New("no datasource")), true, ReasonProxyMessage},
		{"link failure, number 0", myErr(0, "", "Communications link failure"), true, ReasonLinkFailure},
		{"link failure, no MySQL error", errors.New("communications link failure: last packet sent 10s ago"), true, ReasonLinkFailure},
		{"link failure with a number", myErr(erUnknownError, "HY000", "Communications link failure"), false, ""},
		{"wrapper text is not matched", fmt.Errorf("no alive datasource for %q: %w", "g1", myErr(erDupEntry, "23000", "dup")), false, ""},
		{"wrapper link failure text is not matched", fmt.Errorf("communications link failure: %w", context.Canceled), false, ""},

		// Assorted non-fatal errors.
		{"plain error", errors.New("boom"), false, ""},
		{"sql.ErrNoRows", sql.ErrNoRows, false, ""},
		{"sql.ErrTxDone", sql.ErrTxDone, false, ""},
		{"mysql.ErrBusyBuffer", mysql.ErrBusyBuffer, false, ""},
		{"typed nil MySQLError wrapped", fmt.Errorf("x: %w", nilMySQLErr), false, ""},
		{"empty join", errors.Join(nil, nil), false, ""},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fatal, reason := Classify(tc.err)
			if fatal != tc.fatal || reason != tc.reason {
				t.Errorf("Classify(%v) = (%v, %q), want (%v, %q)", tc.err, fatal, reason, tc.fatal, tc.reason)
			}
			if got := Default.IsFatal(tc.err); got != tc.fatal {
				t.Errorf("Default.IsFatal(%v) = %v, want %v", tc.err, got, tc.fatal)
			}
			c, ok := Default.(Classifier)
			if !ok {
				t.Fatal("Default does not implement Classifier")
			}
			if f, r := c.Classify(tc.err); f != fatal || r != reason {
				t.Errorf("Default.Classify(%v) = (%v, %q), want (%v, %q)", tc.err, f, r, fatal, reason)
			}
		})
	}
}

// TestFatalNumberSet pins the exact set of MySQL numbers fatal by number,
// so that adding or dropping one is a deliberate, visible change.
func TestFatalNumberSet(t *testing.T) {
	want := map[uint16]string{
		1037: "mysql-1037", 1040: "mysql-1040", 1041: "mysql-1041",
		1042: "mysql-1042", 1043: "mysql-1043", 1045: "mysql-1045",
		1047: "mysql-1047", 1081: "mysql-1081", 1129: "mysql-1129",
		1130: "mysql-1130", 1290: "mysql-1290",
	}
	if len(fatalNumbers) != len(want) {
		t.Errorf("fatalNumbers has %d entries, want %d: %v", len(fatalNumbers), len(want), fatalNumbers)
	}
	for n, r := range want {
		if got, ok := fatalNumbers[n]; !ok || got != r {
			t.Errorf("fatalNumbers[%d] = %q, %v; want %q", n, got, ok, r)
		}
	}
	// Every number of the Java reference list outside the set must be
	// classified not fatal when sent with a neutral SQLSTATE.
	for _, n := range []uint16{1004, 1005, 1015, 1021, 1023, 1038, 1142, 1227} {
		if Default.IsFatal(myErr(n, "HY000", "x")) {
			t.Errorf("%d is fatal, want not fatal", n)
		}
	}
}

func TestIsOceanBaseFatalCode(t *testing.T) {
	tests := []struct {
		code int
		want bool
	}{
		{7999, false}, {8000, true}, {8001, true}, {8500, true}, {8999, true}, {9000, false},
		{-7999, false}, {-8000, true}, {-8001, true}, {-8999, true}, {-9000, true}, {-9001, false},
		{0, false}, {1040, false},
	}
	for _, tc := range tests {
		if got := IsOceanBaseFatalCode(tc.code); got != tc.want {
			t.Errorf("IsOceanBaseFatalCode(%d) = %v, want %v", tc.code, got, tc.want)
		}
	}
}

// TestDefaultConcurrent exercises the default sorter from many goroutines;
// run with -race it checks that the rules share no mutable state.
func TestDefaultConcurrent(t *testing.T) {
	errs := []error{nil, io.EOF, myErr(8001, "08004", "x"), myErr(erDupEntry, "23000", "x"),
		errors.Join(context.Canceled, io.EOF), errors.New("no alive datasource")}
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				for _, e := range errs {
					Classify(e)
					Default.IsFatal(e)
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}
