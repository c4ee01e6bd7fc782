package exception

import (
	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/errtree"
)

// DefaultName is the name under which [Default] is registered. It is the
// sorter used when a data source name does not choose one.
const DefaultName = "mysql"

// Default is the MySQL/OceanBase sorter; its rules are described on
// [Classify]. It also implements [Classifier] and is registered under
// [DefaultName]. It is stateless and safe for concurrent use. The registry
// keeps the value Default had at start-up, so assigning another sorter to
// this variable does not change what [Lookup] returns for DefaultName.
var Default Sorter = mysqlSorter{}

// mysqlSorter implements the default rules.
type mysqlSorter struct{}

// IsFatal reports whether err is fatal under the default rules.
func (mysqlSorter) IsFatal(err error) bool {
	fatal, _ := Classify(err)
	return fatal
}

// Classify reports whether err is fatal under the default rules and why.
func (mysqlSorter) Classify(err error) (bool, string) {
	return Classify(err)
}

// Classify applies the default MySQL/OceanBase rules to err and reports
// whether it is fatal, with a short stable reason (one of the Reason
// constants) when it is. A nil or non-fatal error gives (false, "").
//
// The whole error tree is examined: every error reachable through %w
// wrapping and errors.Join. If any error in it is fatal, the result is
// fatal. The walk is bounded (1024 levels, about a million errors), so an
// error type that unwraps to itself cannot hang Classify the way it hangs
// errors.Is; what lies beyond the bound is not examined. The groups are tried in this order, and the first match gives the
// reason:
//
//  1. Errors reported by the server or proxy (*mysql.MySQLError), in tree
//     order; for each, the number in 8000-8999 (OceanBase: close the
//     connection, [ReasonOceanBase]), then one of the fatal MySQL numbers
//     ("mysql-<number>", see [ReasonMySQLPrefix]), then SQLSTATE class 08
//     ([ReasonSQLState08]).
//  2. Transport errors, anywhere in the tree: mysql.ErrInvalidConn,
//     driver.ErrBadConn, the driver's packet framing errors and
//     io.ErrShortWrite, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
//     ECONNRESET, ECONNREFUSED, EPIPE, ECONNABORTED, then a net.Error whose
//     Timeout() is true.
//  3. Message text, only on the errors where a chain starts: a proxy saying
//     it has no alive datasource / no datasource / could not create a
//     connection ([ReasonProxyMessage]), and "communications link failure"
//     carrying no error number ([ReasonLinkFailure]).
//
// MySQL numbers fatal by rule: 1037, 1040, 1041, 1042, 1043, 1045, 1047,
// 1081, 1129, 1130, 1290. Numbers that fail one statement on a healthy
// session are not fatal, among them 1004, 1005, 1015, 1021, 1023, 1038,
// 1062, 1064, 1142, 1146, 1205, 1213, 1227 and 1317. The source explains,
// next to each constant, why every number of the Java lb-driver's list was
// kept or dropped.
//
// Context errors never make an error fatal on their own: context.Canceled
// and context.DeadlineExceeded mean the caller gave up, which is not a fault
// of the proxy. database/sql and go-sql-driver already discard a connection
// whose in-flight query was cancelled (the driver closes it and
// database/sql's validity check drops it before reuse), so nothing is lost
// by answering false. Context errors do not hide a fatal cause either: when
// a context error is joined or wrapped together with, say, io.EOF, the
// result is fatal, because the broken stream is broken whoever stopped
// waiting for it. The one special case is that a timeout which is the
// caller's context deadline (context.DeadlineExceeded itself, or a dial the
// net package cut short because of it) is not counted as a network timeout;
// a socket read or write deadline is.
func Classify(err error) (fatal bool, reason string) {
	return classify(err, true)
}

// classify applies the default rules; oceanBase false leaves 8000-8999 to the other rules.
func classify(err error, oceanBase bool) (fatal bool, reason string) {
	if err == nil {
		return false, ""
	}
	if reason = serverReason(err, oceanBase); reason != "" {
		return true, reason
	}
	if reason = transportReason(err); reason != "" {
		return true, reason
	}
	if reason = messageReason(err); reason != "" {
		return true, reason
	}
	return false, ""
}

// serverReason returns the reason of the first fatal *mysql.MySQLError in
// err's tree, or "" if there is none.
func serverReason(err error, oceanBase bool) string {
	var reason string
	errtree.Walk(err, func(e error) bool {
		me, ok := e.(*mysql.MySQLError)
		if !ok || me == nil {
			return false
		}
		reason = numberReason(me, oceanBase)
		return reason != ""
	})
	return reason
}

// numberReason applies the number and SQLSTATE rules to one server error.
func numberReason(me *mysql.MySQLError, oceanBase bool) string {
	if oceanBase && IsOceanBaseFatalCode(int(me.Number)) {
		return ReasonOceanBase
	}
	if r, ok := fatalNumbers[me.Number]; ok {
		return r
	}
	// SQLSTATE class 08 is "connection exception" in the SQL standard,
	// e.g. 08S01 communication link failure, 08004 server rejected the
	// connection.
	if me.SQLState[0] == '0' && me.SQLState[1] == '8' {
		return ReasonSQLState08
	}
	return ""
}
