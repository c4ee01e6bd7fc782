package clustertest

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/nodes"
)

// mariaDBAdmin opens dsn as the pair's admin account (LBD_TEST_MARIADB_ADMIN, user:password),
// which may change read_only; it skips the test when that is not set.
func mariaDBAdmin(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	admin := os.Getenv("LBD_TEST_MARIADB_ADMIN")
	user, pass, ok := strings.Cut(admin, ":")
	if !ok {
		t.Skip("LBD_TEST_MARIADB_ADMIN is not set; .ci/mariadb-pair start prints it")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, pass
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func setReadOnly(t *testing.T, db *sql.DB, on bool) {
	t.Helper()
	if _, err := db.Exec(fmt.Sprintf("SET GLOBAL read_only = %t", on)); err != nil {
		t.Fatal(err)
	}
}

// On a real MariaDB primary and read-only replica: target=primary with roleCheck=mysql sends
// every write to the writable server, and a manual switchover (read_only flipped on both) under
// a 16-worker write load costs no autocommit insert; transactions caught by it are told to start
// again; every acknowledged insert is on the new primary exactly once.
func TestManualSwitchoverOnMariaDB(t *testing.T) {
	primary, replica := mariaDBPair(t)
	pDSN, rDSN := os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN"), os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN")
	pAdmin, rAdmin := mariaDBAdmin(t, pDSN), mariaDBAdmin(t, rDSN)
	t.Cleanup(func() { // back to the pair .ci/mariadb-pair set up
		setReadOnly(t, rAdmin, true)
		setReadOnly(t, pAdmin, false)
	})

	pCfg, _ := mysql.ParseDSN(pDSN)
	rCfg, _ := mysql.ParseDSN(rDSN)
	dsn := fmt.Sprintf("%s:%s@lb(%s,%s)/%s?roleCheck=mysql&target=primary", pCfg.User, pCfg.Passwd, pCfg.Addr, rCfg.Addr, pCfg.DBName)
	logs := &logRecorder{}
	c, err := lbd.NewConnector(dsn, fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	waitFor(t, 5*time.Second, "the role checks", func() bool {
		p, _ := c.Stats().Node(pCfg.Addr)
		r, _ := c.Stats().Node(rCfg.Addr)
		return p.Role == nodes.RolePrimary && r.Role == nodes.RoleReplica
	})

	table := fmt.Sprintf("lbd_mswitch_%d", os.Getpid())
	if _, err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, worker INT)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for w := range 16 {
			pAdmin.Exec(fmt.Sprintf("DROP TABLE IF EXISTS %s_tx%d", table, w))
			rAdmin.Exec(fmt.Sprintf("DROP TABLE IF EXISTS %s_tx%d", table, w))
		}
		pAdmin.Exec("DROP TABLE IF EXISTS " + table)
		rAdmin.Exec("DROP TABLE IF EXISTS " + table)
	})
	run := &switchoverRun{}
	var switchAt, switchEnd atomic.Int64
	stop := startWrites(t, db, table, 16, run, &switchAt, &switchEnd)
	defer stop()
	run.waitStatements(t, 200)
	// Every write so far went to the writable server: the replica has replicated them, and
	// refused none (its read_only would have).
	switchAt.Store(time.Now().UnixNano())
	setReadOnly(t, pAdmin, true)
	waitFor(t, 10*time.Second, "the replica to apply everything the old primary wrote", func() bool {
		var p, r string
		primary.QueryRow("SELECT @@gtid_binlog_pos").Scan(&p)
		replica.QueryRow("SELECT @@gtid_slave_pos").Scan(&r)
		return p != "" && strings.Contains(r, p)
	})
	setReadOnly(t, rAdmin, false)
	switchEnd.Store(time.Now().UnixNano())
	run.waitStatements(t, 300)
	stop()

	waitFor(t, 5*time.Second, "the roles to follow the switchover", func() bool {
		p, _ := c.Stats().Node(pCfg.Addr)
		r, _ := c.Stats().Node(rCfg.Addr)
		return p.Role == nodes.RoleReplica && r.Role == nodes.RolePrimary
	})
	if len(run.autoErrs) != 0 {
		t.Errorf("%d autocommit inserts failed, want none; first: %v", len(run.autoErrs), run.autoErrs[0])
	}
	for _, err := range run.txErrs {
		if !errors.Is(err, lbd.ErrPrimaryChanged) {
			t.Errorf("a transaction failed with %v, want ErrPrimaryChanged", err)
			break
		}
	}
	// The new primary holds what the old one wrote (replicated) and what it took since.
	checkAcked(t, replica, table, run.acked, run.unknown)
	t.Logf("manual switchover: %d statements; %d transaction errors; caught by the switch: %d, p50 %v, p99 %v, max %v",
		run.statement.Load(), len(run.txErrs), len(run.slow),
		percentile(run.slow, 50).Round(time.Millisecond), percentile(run.slow, 99).Round(time.Millisecond), percentile(run.slow, 100).Round(time.Millisecond))
}
