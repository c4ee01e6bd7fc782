package exception

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestTransactionRolledBack(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"1213 deadlock", myErr(erLockDeadlock, "40001", "Deadlock found when trying to get lock; try restarting transaction"), true},
		{"1213 without a SQLSTATE", myErr(erLockDeadlock, "", "Deadlock found"), true},
		{"another number with SQLSTATE 40001", myErr(9999, "40001", "serialization failure"), true},
		{"wrapped", fmt.Errorf("lbd: %w", myErr(erLockDeadlock, "40001", "x")), true},
		{"1205 rolls back the statement only", myErr(erLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction"), false},
		{"SQLSTATE 40000 is not a serialization failure", myErr(3101, "40000", "Plugin instructed the server to rollback the current transaction"), false},
		{"1062 duplicate key", myErr(erDupEntry, "23000", "x"), false},
		{"1290 read-only is a role, not a rollback", myErr(1290, "HY000", "x"), false},
		{"transport error", io.EOF, false},
		{"first server error decides", errors.Join(myErr(1062, "23000", "x"), myErr(erLockDeadlock, "40001", "x")), false},
	} {
		if got := TransactionRolledBack(tt.err); got != tt.want {
			t.Errorf("%s: TransactionRolledBack(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
