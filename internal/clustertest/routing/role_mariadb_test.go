package routing

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// mariaDBPair returns handles on the MariaDB primary and its read-only replica that
// .ci/mariadb-pair starts, and skips the test when their DSNs are not set.
func mariaDBPair(t *testing.T) (primary, replica *sql.DB) {
	t.Helper()
	pair := clusterkit.MariaDBPair(t)
	return pair.Primary, pair.Replica
}

// roleOf runs MySQL's role check through db and decodes it.
func roleOf(t *testing.T, db *sql.DB) role.Role {
	t.Helper()
	var v string
	if err := db.QueryRow(role.MySQL.Query()).Scan(&v); err != nil {
		t.Fatalf("role check: %v", err)
	}
	r, err := role.MySQL.Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeError inserts a row through db and returns the error.
func writeError(db *sql.DB, table string) error {
	_, err := db.Exec("INSERT INTO " + table + " VALUES (2)")
	return err
}

// A real read-only MariaDB replica and an lbdtest replica answer the role check and a write
// alike: what the in-process tests of role routing rely on.
func TestReplicaRoleMatchesMariaDB(t *testing.T) {
	primary, replica := mariaDBPair(t)
	table := fmt.Sprintf("lbd_role_%d", os.Getpid())
	if _, err := primary.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Exec("DROP TABLE IF EXISTS " + table) })
	testkit.WaitFor(t, 10*time.Second, "the table on the replica", func() bool {
		_, err := replica.Exec("SELECT 1 FROM " + table)
		return err == nil
	})
	if got := roleOf(t, primary); got != role.Primary {
		t.Errorf("the primary checks as %v", got)
	}
	if got := roleOf(t, replica); got != role.Replica {
		t.Errorf("the read-only replica checks as %v", got)
	}
	real := writeError(replica, table)
	if !exception.NotPrimary(real) {
		t.Fatalf("a write on the real replica gave %v, want a not-primary refusal", real)
	}

	cl := lbdtest.NewCluster(t, 1)
	p := cl.Proxy(0)
	p.SetRole(lbdtest.Replica)
	fake, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", cl.User(), cl.Password(), p.Addr(), cl.Database()))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if got := roleOf(t, fake); got != role.Replica {
		t.Errorf("the lbdtest replica checks as %v", got)
	}
	emulated := writeError(fake, table)
	var want, got *mysql.MySQLError
	if !errors.As(real, &want) || !errors.As(emulated, &got) || got.Number != want.Number || got.SQLState != want.SQLState {
		t.Fatalf("lbdtest replica refused the write with %v, the real one with %v", emulated, real)
	}
}
