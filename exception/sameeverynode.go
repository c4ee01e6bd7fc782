package exception

import (
	"errors"

	"github.com/go-sql-driver/mysql"
)

// SameOnEveryNode reports whether err is a server error that every proxy of the cluster would
// answer alike, because it comes from the user, grant and schema definitions behind the proxies
// rather than from the proxy that sent it: 1044 (no access to the database), 1045 (wrong user
// or password), 1049 (unknown database), 1193 (unknown system variable, usually a mistyped DSN
// parameter that go-sql-driver sent as SET) and 1698 (the account needs another authentication
// method). Trying another node cannot help and the node is not at fault, so a caller should
// fail fast and count nothing against the node.
//
// The first *mysql.MySQLError in err's tree decides, as errors.As finds it; a nil or non-MySQL
// error gives false. Whether the error is fatal to its connection is a separate question
// ([Classify]): 1045 is both.
func SameOnEveryNode(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me == nil {
		return false
	}
	return sameOnEveryNodeNumbers[me.Number]
}
