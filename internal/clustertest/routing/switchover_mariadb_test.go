package routing

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
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
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

// pairSwitch is a Connector over the MariaDB pair with roleCheck=mysql, and admin handles on
// both servers for a manual switchover.
type pairSwitch struct {
	primary, replica *sql.DB // the servers themselves, as the pair's application account
	pAdmin, rAdmin   *sql.DB
	pAddr, rAddr     string
	db               *sql.DB // through lbd
	c                *lbd.Connector
}

// openPairSwitch opens lbd over the pair with roleCheck=mysql and params (e.g. target=primary,
// or the read/write split), fast probes, at most 32 connections, and waits for the role checks;
// it puts the pair back as .ci/mariadb-pair set it up when the test ends. It skips the test
// when the pair's environment is not set.
func openPairSwitch(t *testing.T, params string) *pairSwitch {
	t.Helper()
	primary, replica := mariaDBPair(t)
	pDSN, rDSN := os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN"), os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN")
	ps := &pairSwitch{primary: primary, replica: replica, pAdmin: mariaDBAdmin(t, pDSN), rAdmin: mariaDBAdmin(t, rDSN)}
	t.Cleanup(func() { // back to the pair .ci/mariadb-pair set up
		setReadOnly(t, ps.rAdmin, true)
		setReadOnly(t, ps.pAdmin, false)
	})
	pCfg, _ := mysql.ParseDSN(pDSN)
	rCfg, _ := mysql.ParseDSN(rDSN)
	ps.pAddr, ps.rAddr = pCfg.Addr, rCfg.Addr
	dsn := fmt.Sprintf("%s:%s@lb(%s,%s)/%s?roleCheck=mysql&%s", pCfg.User, pCfg.Passwd, pCfg.Addr, rCfg.Addr, pCfg.DBName, params)
	logs := &testkit.Logs{}
	c, err := lbd.NewConnector(dsn, clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	ps.c, ps.db = c, sql.OpenDB(c)
	t.Cleanup(func() { ps.db.Close() })
	ps.db.SetMaxOpenConns(32)
	ps.db.SetMaxIdleConns(32)
	ps.waitRoles(t, nodes.RolePrimary, nodes.RoleReplica)
	return ps
}

// waitRoles waits until lbd sees the first server with role p and the second with role r.
func (ps *pairSwitch) waitRoles(t *testing.T, p, r nodes.Role) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("the role checks: %s %s, %s %s", ps.pAddr, p, ps.rAddr, r), func() bool {
		pn, _ := ps.c.Stats().Node(ps.pAddr)
		rn, _ := ps.c.Stats().Node(ps.rAddr)
		return pn.Role == p && rn.Role == r
	})
}

// switchover makes the replica the primary by hand: read_only on the primary, a wait until the
// replica applied everything the primary wrote, gap with no writable server (an operator's or a
// failover tool's delay), read_only off on the replica.
func (ps *pairSwitch) switchover(t *testing.T, gap time.Duration) {
	t.Helper()
	setReadOnly(t, ps.pAdmin, true)
	testkit.WaitFor(t, 10*time.Second, "the replica to apply everything the old primary wrote", func() bool {
		var p, r string
		ps.primary.QueryRow("SELECT @@gtid_binlog_pos").Scan(&p)
		ps.replica.QueryRow("SELECT @@gtid_slave_pos").Scan(&r)
		return p != "" && strings.Contains(r, p)
	})
	time.Sleep(gap)
	setReadOnly(t, ps.rAdmin, false)
}

// On a real MariaDB primary and read-only replica: target=primary with roleCheck=mysql sends
// every write to the writable server, and a manual switchover (read_only flipped on both) under
// a 16-worker write load costs no autocommit insert; transactions caught by it are told to start
// again; every acknowledged insert is on the new primary exactly once.
func TestManualSwitchoverOnMariaDB(t *testing.T) {
	ps := openPairSwitch(t, "target=primary")
	db := ps.db
	table := fmt.Sprintf("lbd_mswitch_%d", os.Getpid())
	if _, err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, worker INT)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for w := range 16 {
			ps.pAdmin.Exec(fmt.Sprintf("DROP TABLE IF EXISTS %s_tx%d", table, w))
			ps.rAdmin.Exec(fmt.Sprintf("DROP TABLE IF EXISTS %s_tx%d", table, w))
		}
		ps.pAdmin.Exec("DROP TABLE IF EXISTS " + table)
		ps.rAdmin.Exec("DROP TABLE IF EXISTS " + table)
	})
	run := &switchoverRun{}
	var switchAt, switchEnd atomic.Int64
	stop := startWrites(t, db, table, 16, run, &switchAt, &switchEnd)
	defer stop()
	run.waitStatements(t, 200)
	// Every write so far went to the writable server: the replica has replicated them, and
	// refused none (its read_only would have).
	switchAt.Store(time.Now().UnixNano())
	ps.switchover(t, 0)
	switchEnd.Store(time.Now().UnixNano())
	run.waitStatements(t, 300)
	stop()

	ps.waitRoles(t, nodes.RoleReplica, nodes.RolePrimary)
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
	checkAcked(t, ps.replica, table, run.acked, run.unknown)
	t.Logf("manual switchover: %d statements; %d transaction errors; caught by the switch: %d, p50 %v, p99 %v, max %v",
		run.statement.Load(), len(run.txErrs), len(run.slow),
		percentile(run.slow, 50).Round(time.Millisecond), percentile(run.slow, 99).Round(time.Millisecond), percentile(run.slow, 100).Round(time.Millisecond))
}
