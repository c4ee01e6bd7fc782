package exception_test

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-sql-driver/mysql"
	"github.com/lbd-go/lbd/exception"
)

// erClientInteractionTimeout is MySQL 8.0's ER_CLIENT_INTERACTION_TIMEOUT:
// the server closed the session for inactivity and sent this error first.
const erClientInteractionTimeout = 4031

// idleAware keeps every default rule and adds one: a session the server
// dropped for inactivity is gone.
var idleAware = exception.SorterFunc(func(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erClientInteractionTimeout {
		return true
	}
	return exception.Default.IsFatal(err)
})

// Registration happens once per process, typically from init; a second
// Register with the same name fails with exception.ErrDuplicateName.
func init() {
	if err := exception.Register("mysql-idle-aware", idleAware); err != nil {
		panic(err)
	}
}

// A data source name can now select the sorter with
// exceptionSorter=mysql-idle-aware.
func ExampleRegister() {
	s, ok := exception.Lookup("mysql-idle-aware")
	fmt.Println("found:", ok)

	kicked := &mysql.MySQLError{Number: erClientInteractionTimeout,
		Message: "The client was disconnected by the server because of inactivity."}
	fmt.Println("4031, custom:", s.IsFatal(kicked))
	fmt.Println("4031, default:", exception.Default.IsFatal(kicked))
	fmt.Println("EOF, custom:", s.IsFatal(fmt.Errorf("read: %w", io.EOF)))
	fmt.Println("duplicate key, custom:", s.IsFatal(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}))
	// Output:
	// found: true
	// 4031, custom: true
	// 4031, default: false
	// EOF, custom: true
	// duplicate key, custom: false
}
