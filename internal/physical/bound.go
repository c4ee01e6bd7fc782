package physical

import (
	"context"
	"database/sql/driver"
	"strings"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/errtree"
)

// MaxErrorMessage bounds, in bytes, the message of an error a peer sent (a MySQL ERR packet's
// text) once lbd has it: 512, MySQL's own MYSQL_ERRMSG_SIZE (include/mysql_com.h), the most
// libmysqlclient keeps of a server's message. A real server never sends more; a proxy that does
// must not make lbd keep, log or serve more (Stats, transitions, logs, the status page).
const MaxErrorMessage = 512

// clipMark ends a message BoundErr cut.
const clipMark = "..."

// BoundErr clips the message of every *mysql.MySQLError in err's tree to MaxErrorMessage bytes
// (cut at a UTF-8 boundary, ending in "..."), and returns err. It is the one place a peer's
// error text enters lbd: Connect calls it on every dial's error, a Conn on every error of its
// commands, and BoundConn on the errors of a connection used outside a Conn (the probe's).
//
// The message is replaced in place, in a fresh copy, so that no 8 MiB text stays reachable
// from what lbd keeps: go-sql-driver builds a new MySQLError for each ERR packet, and BoundErr
// runs before the error is handed to anything else.
func BoundErr(err error) error {
	if err == nil {
		return nil
	}
	errtree.Walk(err, func(e error) bool {
		if me, ok := e.(*mysql.MySQLError); ok && me != nil && len(me.Message) > MaxErrorMessage {
			me.Message = ClipText(me.Message, MaxErrorMessage)
		}
		return false
	})
	return err
}

// ClipText returns s when it is at most max bytes long, and otherwise a fresh copy of its
// longest prefix that ends at a UTF-8 boundary and, with "..." added, fits in max bytes.
func ClipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(clipMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.Clone(s[:cut]) + clipMark
}

// BoundConn wraps a go-sql-driver connection that is used outside a Conn (the probe
// connection) so that the errors of its queries, and of the rows they return, pass through
// BoundErr. Close and the rest are the connection's own; the rows keep Columns, Next and Close
// only, all the probe reads.
func BoundConn(dc driver.Conn) driver.Conn {
	q, ok := dc.(driver.QueryerContext)
	if !ok {
		return dc
	}
	return boundConn{Conn: dc, q: q}
}

type boundConn struct {
	driver.Conn
	q driver.QueryerContext
}

func (b boundConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := b.q.QueryContext(ctx, query, args)
	if err != nil {
		return nil, BoundErr(err)
	}
	return boundRows{rows}, nil
}

type boundRows struct{ driver.Rows }

func (r boundRows) Next(dest []driver.Value) error { return BoundErr(r.Rows.Next(dest)) }
func (r boundRows) Close() error                   { return BoundErr(r.Rows.Close()) }
