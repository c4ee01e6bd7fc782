package routing

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

func TestConnectionsSpreadEvenly(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	// The counting rule alone (least-connections): the load policy's own spread over equal
	// proxies is TestLeastLoadSharesEquallyFastProxies'; with a real server behind the proxies
	// (LBD_TEST_MYSQL_DSN), a latency spike on one moves a connection, as it should there.
	db, c := clusterkit.OpenDB(t, cl, "balancePolicy=least-connections", clusterkit.Quiet()...)
	conns := testkit.HoldConns(t, db, 30)

	if got := clusterkit.OpenCounts(c, cl); clusterkit.Spread(got) != 0 || got[0] != 10 {
		t.Fatalf("Stats open = %v, want 10/10/10", got)
	}
	testkit.WaitFor(t, 5*time.Second, "proxies to count 10/10/10", func() bool {
		got := clusterkit.ProxyCounts(cl)
		return got[0] == 10 && got[1] == 10 && got[2] == 10
	})

	// 1000 random close/reopen cycles; with no idle pool a closed conn closes its socket.
	db.SetMaxIdleConns(0)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		k := r.IntN(len(conns))
		if err := conns[k].Close(); err != nil {
			t.Fatal(err)
		}
		conns[k] = testkit.HoldConns(t, db, 1)[0]
		if got := clusterkit.OpenCounts(c, cl); clusterkit.Spread(got) > 1 {
			t.Fatalf("cycle %d: spread of %v is more than 1", i, got)
		}
	}
	want := clusterkit.OpenCounts(c, cl)
	testkit.WaitFor(t, 5*time.Second, "proxies to agree with Stats", func() bool {
		got := clusterkit.ProxyCounts(cl)
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	})
	for _, cn := range conns {
		cn.Close()
	}
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open after closing everything = %d, want 0", got)
	}
}

func TestStoppedProxyIsSkipped(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	db.SetMaxIdleConns(0) // every Exec dials, so every Exec exercises the pick
	stopped := cl.Proxy(1)
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
	}
	ns, _ := c.Stats().Node(stopped.Addr())
	if ns.State != lbd.StateDown {
		t.Fatalf("stopped proxy state = %v, want down", ns.State)
	}
	// The first failed dial brings its probe forward, so the node may go down after one
	// failure; it must never take more than nodetable.DialFailuresToDown.
	if ns.DialFailures < 1 || ns.DialFailures > nodetable.DialFailuresToDown {
		t.Fatalf("dial failures = %d, want 1..%d (no dial after it went down)", ns.DialFailures, nodetable.DialFailuresToDown)
	}
	if ns.LastError == "" {
		t.Fatal("no last error recorded for the stopped proxy")
	}
}

func TestAllProxiesStoppedNamesEveryOne(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	db, _ := clusterkit.OpenDB(t, cl, "timeout=2s", clusterkit.Quiet()...)
	for _, p := range cl.Proxies() {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	// The first round dials all three; later rounds find them down. Below the panic threshold
	// the nodes already down are dialed too, so the last one up may take a few more rounds to
	// fail often enough to be marked down: at most ten.
	allDown := false
	for round := 0; round < 10 && !allDown; round++ {
		err := db.Ping()
		var ce *lbd.ConnectError
		if !errors.As(err, &ce) {
			t.Fatalf("round %d: error %v (%T), want *ConnectError", round, err, err)
		}
		for _, a := range cl.Addrs() {
			if !strings.Contains(err.Error(), a) {
				t.Fatalf("round %d: error %q does not name %s", round, err, a)
			}
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("round %d: errors.Is(err, ECONNREFUSED) = false for %v", round, err)
		}
		allDown = ce.AllDown
	}
	if !allDown {
		t.Fatal("after ten rounds of failures not every node was down")
	}
}

func TestBadParameterIsAClearError(t *testing.T) {
	t.Parallel()
	_, err := sql.Open(lbd.DriverName, "u:p@lb(127.0.0.1:1)/db?checkBalanceIntervalSeconds=ten")
	if err == nil || !strings.Contains(err.Error(), "checkBalanceIntervalSeconds") {
		t.Fatalf("sql.Open error = %v, want one naming checkBalanceIntervalSeconds", err)
	}
	_, err = lbd.NewConnector("u:p@lb(127.0.0.1:1)/db?exceptionSorter=nosuch")
	if err == nil || !strings.Contains(err.Error(), `exceptionSorter="nosuch"`) {
		t.Fatalf("error = %v, want one naming the unknown sorter", err)
	}
	if _, err := lbd.NewConnector("u:p@lb(127.0.0.1:1)/db", lbd.WithCheckHealthInterval(0)); err == nil {
		t.Fatal("a zero interval option was accepted")
	}
}

// A Config built in code skips the DSN's checks; the node table's rules need their settings in
// range (a zero fatal-error threshold used to panic at the first fatal error).
func TestConfigRuleSettingsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(*lbd.Config)
		want string
	}{
		{"recover", func(c *lbd.Config) { c.RecoverCheckCount = 0 }, "recoverCheckCount is 0"},
		{"threshold", func(c *lbd.Config) { c.FatalErrorThreshold = 0 }, "fatalErrorThreshold is 0"},
		{"window", func(c *lbd.Config) { c.FatalErrorWindow = -time.Second }, "fatalErrorWindow is -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := lbd.ParseDSN("u:p@lb(127.0.0.1:1)/db")
			if err != nil {
				t.Fatal(err)
			}
			tc.set(cfg)
			c, err := lbd.NewConnectorFromConfig(cfg)
			if err == nil {
				c.Close()
				t.Fatalf("NewConnectorFromConfig accepted the setting; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestUnknownDatabaseFailsFastWithoutBlocking(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	dsn := strings.Replace(cl.DSN(""), ")/"+cl.Database(), ")/no_such_db_lbd", 1)
	c, err := lbd.NewConnector(dsn, append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	err = db.Ping()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1049 { // ER_BAD_DB_ERROR
		t.Fatalf("ping error = %v, want MySQL error 1049", err)
	}
	tried := 0
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp {
			t.Fatalf("node %s is %v after an unknown-database error", ns.Addr, ns.State)
		}
		tried += int(ns.DialFailures)
	}
	if tried != 1 {
		t.Fatalf("%d dials failed, want exactly 1 (no other node tried)", tried)
	}
}

func TestConnectAfterClose(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	c, err := lbd.NewConnector(cl.DSN(""), lbd.WithLogger(clusterkit.DiscardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close() // idempotent
	if _, err := c.Connect(context.Background()); !errors.Is(err, lbd.ErrClosed) {
		t.Fatalf("Connect after Close = %v, want ErrClosed", err)
	}
}

func TestDriverOpenIsRefused(t *testing.T) {
	t.Parallel()
	if _, err := (lbd.Driver{}).Open("u:p@lb(127.0.0.1:1)/db"); err == nil {
		t.Fatal("Driver.Open succeeded")
	}
}

func TestLbNetworkNeedsAConnector(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("mysql", "u:p@lb(127.0.0.1:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "lbd Connector") {
		t.Fatalf("ping through plain go-sql-driver = %v, want the lb-network error", err)
	}
}

func TestConnectErrorMessageIsBounded(t *testing.T) {
	t.Parallel()
	e := &lbd.ConnectError{}
	for i := range 50 {
		e.Nodes = append(e.Nodes, &lbd.NodeError{Addr: "10.0.0." + strconv.Itoa(i) + ":1", Err: syscall.ECONNREFUSED})
	}
	msg := e.Error()
	if !strings.Contains(msg, "and 30 more") || strings.Contains(msg, "10.0.0.20:1") {
		t.Fatalf("message not bounded: %s", msg)
	}
	if len(e.Unwrap()) != 50 || !errors.Is(e, syscall.ECONNREFUSED) {
		t.Fatal("Unwrap lost nodes")
	}
}

// registerTestSources makes test source registrations survive -count=N (nodes.Register panics
// on a second registration of a name).
