package exception

import (
	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/errtree"
)

// SameOnEveryNode reports whether err is a server error that every proxy of the cluster would
// answer alike, because it comes from the user, grant and schema definitions behind the proxies
// rather than from the proxy that sent it: 1044 (no access to the database), 1045 (wrong user
// or password), 1049 (unknown database), 1193 (unknown system variable, usually a mistyped DSN
// parameter that go-sql-driver sent as SET) and 1698 (the account needs another authentication
// method). Trying another node cannot help and the node is not at fault, so a caller should
// fail fast and count nothing against the node.
//
// The first *mysql.MySQLError in err's tree decides (the one errors.As would find); a nil or
// non-MySQL error gives false, and so does a tree too deep to be real (see [Classify]). Whether the error is fatal to its connection is a separate question
// ([Classify]): 1045 is both.
func SameOnEveryNode(err error) bool {
	me := firstServerError(err)
	return me != nil && sameOnEveryNodeNumbers[me.Number]
}

// firstServerError returns the first *mysql.MySQLError in err's tree (the one errors.As would
// find), or nil; a tree too deep to be real gives nil.
func firstServerError(err error) *mysql.MySQLError {
	var me *mysql.MySQLError
	errtree.Walk(err, func(e error) bool {
		var ok bool
		me, ok = e.(*mysql.MySQLError)
		return ok
	})
	return me
}
