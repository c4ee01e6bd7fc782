package clusterkit

import (
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The environment variables naming the real MariaDB primary and its read-only replica that
// .ci/mariadb-pair starts (and prints).
const (
	EnvPairPrimaryDSN = "LBD_TEST_MARIADB_PRIMARY_DSN"
	EnvPairReplicaDSN = "LBD_TEST_MARIADB_REPLICA_DSN"
)

// Pair is the real MariaDB primary and its read-only replica: a handle straight on each (closed
// at test end) and each one's go-sql-driver configuration.
type Pair struct {
	Primary, Replica       *sql.DB
	PrimaryCfg, ReplicaCfg *mysql.Config
}

// MariaDBPair opens the pair named by EnvPairPrimaryDSN and EnvPairReplicaDSN, pinging both, and
// skips the test, saying so, when either is not set.
func MariaDBPair(t testing.TB) Pair {
	t.Helper()
	p, r := os.Getenv(EnvPairPrimaryDSN), os.Getenv(EnvPairReplicaDSN)
	if p == "" || r == "" {
		t.Skipf("%s and %s are not set; .ci/mariadb-pair start prints them", EnvPairPrimaryDSN, EnvPairReplicaDSN)
	}
	open := func(dsn string) (*sql.DB, *mysql.Config) {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Ping(); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		return db, cfg
	}
	var pair Pair
	pair.Primary, pair.PrimaryCfg = open(p)
	pair.Replica, pair.ReplicaCfg = open(r)
	return pair
}

// SplitDSN is lbd's DSN over both servers, with the primary's account and database, in
// statement mode with the read/write split and MySQL's role check, and params after those.
func (p Pair) SplitDSN(params string) string {
	return fmt.Sprintf("%s:%s@lb(%s,%s)/%s?balance=statement&readWriteSplit=true&roleCheck=mysql&%s",
		p.PrimaryCfg.User, p.PrimaryCfg.Passwd, p.PrimaryCfg.Addr, p.ReplicaCfg.Addr, p.PrimaryCfg.DBName, params)
}
