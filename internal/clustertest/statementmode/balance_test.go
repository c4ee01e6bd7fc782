package statementmode

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// statementModeOutage runs a statement-mode workload, takes one proxy out with fail, and checks
// that only statements in flight on it failed: none started after the node was marked down
// (plus a margin for the log line's timestamp) failed. It then heals the proxy and checks that
// the node comes back up and gets statements again, without a rebalancing round.
func statementModeOutage(t *testing.T, fail, heal func(*lbdtest.Proxy) error) {
	const interval, timeout, margin = 300 * time.Millisecond, 300 * time.Millisecond, 50 * time.Millisecond
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "timeout=300ms&balance=statement", clusterkit.Fast(interval, timeout, time.Hour, logs)...)
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(20)
	w := clusterkit.StartWorkload(t, db, 20)
	testkit.WaitFor(t, 5*time.Second, "statements flowing through every proxy", func() bool {
		for _, n := range clusterkit.StatementCounts(cl) {
			if n < 100 {
				return false
			}
		}
		return true
	})

	bad := cl.Proxy(0)
	failedAt := time.Now()
	if err := fail(bad); err != nil {
		t.Fatal(err)
	}
	healed := false
	defer func() {
		if !healed {
			heal(bad)
		}
	}()
	downAt := clusterkit.WaitForTransition(t, c, logs, bad.Addr(), lbd.StateDown).At
	t.Logf("proxy down after %v", downAt.Sub(failedAt))
	w.Progress(t, 5*time.Second, 300) // statements on the other proxies while it is down
	// Keep the proxy out until the statements caught by the outage have ended (the workload
	// gives each one second), so that they fail rather than finish after healing.
	testkit.WaitFor(t, 5*time.Second, "the statements caught by the outage to end", func() bool {
		return w.StillRunning(failedAt) == 0
	})
	if ns, _ := c.Stats().Node(bad.Addr()); ns.State != lbd.StateDown {
		t.Fatalf("node state %v while the proxy is still out, want down", ns.State)
	}

	healed = true
	if err := heal(bad); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the proxy to come back up", func() bool {
		s, _ := clusterkit.NodeState(c, bad.Addr())
		return s == lbd.StateUp
	})
	bad.ResetCounters()
	testkit.WaitFor(t, 5*time.Second, "the healed proxy to get the workload's statements again", func() bool {
		return bad.Statements() >= 200 // probes alone make about 3 a second
	})

	ops := w.Stop()
	errs, after := testkit.FailedSince(ops, downAt.Add(margin))
	for i, err := range errs {
		if i == 5 {
			t.Errorf("... %d more", len(errs)-5)
			break
		}
		t.Errorf("statement started after the node went down failed: %v", err)
	}
	before := 0
	for _, o := range ops {
		if o.Err != nil && o.Start.Before(downAt.Add(margin)) {
			before++
		}
	}
	t.Logf("%d statements, %d failed before the node went down, %d started after it (%d failed)",
		len(ops), before, after, len(errs))
	if after == 0 {
		t.Fatal("no statement started after the node went down; the check proved nothing")
	}
}

func TestStatementModeHungProxyFailsOnlyInFlight(t *testing.T) {
	statementModeOutage(t,
		func(p *lbdtest.Proxy) error { p.Hang(); return nil },
		func(p *lbdtest.Proxy) error { p.Resume(); return nil })
}

func TestStatementModeStoppedProxyFailsOnlyInFlight(t *testing.T) {
	statementModeOutage(t, (*lbdtest.Proxy).Stop, (*lbdtest.Proxy).Start)
}

// nodesInUse returns the InUse count of every node, in Stats order, and their sum.
func nodesInUse(c *lbd.Connector) ([]int, int) {
	var per []int
	total := 0
	for _, ns := range c.Stats().Nodes {
		per = append(per, ns.InUse)
		total += ns.InUse
	}
	return per, total
}

func TestStatementModeStats(t *testing.T) {
	t.Run("statement", func(t *testing.T) {
		cl := lbdtest.NewCluster(t, 3)
		// least-connections: the exact spread below is the counting rule's (see
		// TestConnectionsSpreadEvenly).
		db, c := clusterkit.OpenDB(t, cl, "balance=statement&balancePolicy=least-connections", clusterkit.Quiet()...)
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(10)
		if st := c.Stats(); st.Balance != lbd.BalanceStatement || st.Logical != 0 {
			t.Fatalf("fresh connector: Balance %v, Logical %d; want statement, 0", st.Balance, st.Logical)
		}

		conns := testkit.HoldConns(t, db, 6) // each pinged, so each has a physical connection claimed
		testkit.WaitFor(t, 5*time.Second, "Logical to count database/sql's 6 open connections", func() bool {
			return c.Stats().Logical == 6 && db.Stats().OpenConnections == 6
		})
		if per, total := nodesInUse(c); total != 6 || clusterkit.Spread(per) != 0 {
			t.Errorf("InUse per node = %v with 6 checked-out connections, want 2 on each node", per)
		}
		for _, cn := range conns {
			cn.Close()
		}
		testkit.WaitFor(t, 5*time.Second, "no physical connection in use on any node while every logical one is idle", func() bool {
			per, _ := nodesInUse(c)
			return slices.Max(per) == 0 && slices.Min(per) == 0
		})
		if got, want := c.Stats().Logical, db.Stats().OpenConnections; got != want || got != 6 {
			t.Fatalf("Logical = %d with the 6 connections idle, database/sql has %d open", got, want)
		}

		// A *sql.Conn that has run a statement holds its physical connection until closed.
		cn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := cn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		per, total := nodesInUse(c)
		if total != 1 {
			t.Errorf("InUse per node = %v while one *sql.Conn is held, want 1 in total", per)
		}
		cn.Close()
		testkit.WaitFor(t, 5*time.Second, "InUse back to 0 on every node once the *sql.Conn is closed", func() bool {
			per, _ := nodesInUse(c)
			return slices.Max(per) == 0 && slices.Min(per) == 0
		})

		w := clusterkit.StartWorkload(t, db, 10)
		w.Progress(t, 10*time.Second, 1000)
		w.Check(t)
		testkit.WaitFor(t, 5*time.Second, "InUse back to 0 on every node after the workload", func() bool {
			per, _ := nodesInUse(c)
			return slices.Max(per) == 0 && slices.Min(per) == 0
		})
		st := c.Stats()
		if st.Logical != db.Stats().OpenConnections {
			t.Errorf("Logical = %d after the workload, database/sql has %d open", st.Logical, db.Stats().OpenConnections)
		}
		t.Logf("at the workload's end: %d logical, physical open per node %v", st.Logical, clusterkit.OpenCounts(c, cl))
		// Each node's connections follow its demand of the last second (the spare grace), and a
		// busy host puts the peaks on different nodes at different moments, so right at the end
		// there may be more. Once idle for the grace, the surplus closes with no statement
		// running: one physical connection per logical one plus a spare on each node but one.
		testkit.WaitFor(t, 5*time.Second, "the idle surplus of physical connections to close: at most logical + nodes - 1", func() bool {
			st := c.Stats()
			return st.Open() <= st.Logical+len(st.Nodes)-1
		})
		t.Logf("after the grace: %d logical, physical open per node %v", c.Stats().Logical, clusterkit.OpenCounts(c, cl))
	})

	t.Run("connection", func(t *testing.T) {
		cl := lbdtest.NewCluster(t, 3)
		db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
		conns := testkit.HoldConns(t, db, 5)
		defer func() {
			for _, cn := range conns {
				cn.Close()
			}
		}()
		st := c.Stats()
		if st.Balance != lbd.BalanceConnection {
			t.Errorf("Balance = %v by default, want connection", st.Balance)
		}
		if st.Logical != st.Open() || st.Logical != db.Stats().OpenConnections || st.Logical != 5 {
			t.Errorf("Logical = %d, physical open %d, database/sql open %d; want all 5",
				st.Logical, st.Open(), db.Stats().OpenConnections)
		}
	})
}

// TestBalanceParameter covers what dsnCases cannot: the error names the allowed values, and
// WithBalance wins over the DSN. The DSN spellings themselves are cases in dsnCases.
func TestBalanceParameter(t *testing.T) {
	const base = "u:p@lb(10.0.0.1:1,10.0.0.2:2)/db"
	for _, bad := range []string{"statment", "Statement", "", "stmt"} {
		_, err := lbd.ParseDSN(base + "?balance=" + bad)
		if err == nil {
			t.Errorf("balance=%q was accepted", bad)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("balance=%q", bad)) || !strings.Contains(msg, "connection") || !strings.Contains(msg, "statement") {
			t.Errorf("balance=%q: error %q does not name the parameter, the value and the allowed values", bad, msg)
		}
	}
	if _, err := sql.Open(lbd.DriverName, base+"?balance=statment"); err == nil || !strings.Contains(err.Error(), "balance") {
		t.Errorf("sql.Open with balance=statment: %v, want an error naming the parameter", err)
	}

	cl := lbdtest.NewCluster(t, 1)
	for _, tc := range []struct {
		params string
		opt    lbd.BalanceMode
	}{
		{"balance=connection", lbd.BalanceStatement},
		{"balance=statement", lbd.BalanceConnection},
		{"", lbd.BalanceStatement},
	} {
		c, err := lbd.NewConnector(cl.DSN(tc.params), append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()), lbd.WithBalance(tc.opt))...)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		if got := c.Stats().Balance; got != tc.opt {
			t.Errorf("DSN %q with WithBalance(%v): Stats().Balance = %v", tc.params, tc.opt, got)
		}
		if got := c.Config().Balance; got != tc.opt {
			t.Errorf("DSN %q with WithBalance(%v): Config().Balance = %v", tc.params, tc.opt, got)
		}
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Errorf("DSN %q with WithBalance(%v): %v", tc.params, tc.opt, err)
		}
		db.Close()
	}
	if c, err := lbd.NewConnector(cl.DSN(""), lbd.WithBalance(lbd.BalanceMode(7))); err == nil {
		c.Close()
		t.Error("WithBalance(BalanceMode(7)) was accepted")
	}
	// autocommit off gives every physical connection an open transaction of its own.
	for _, params := range []string{"balance=statement&autocommit=0", "balance=statement&AUTOCOMMIT='OFF'", "autocommit=false"} {
		opts := []lbd.Option{lbd.WithLogger(clusterkit.DiscardLogger())}
		if !strings.Contains(params, "balance") {
			opts = append(opts, lbd.WithBalance(lbd.BalanceStatement))
		}
		c, err := lbd.NewConnector(cl.DSN(params), opts...)
		if err == nil {
			c.Close()
			t.Errorf("%s in statement mode was accepted", params)
		} else if !strings.Contains(err.Error(), "autocommit") {
			t.Errorf("%s: error %q does not name autocommit", params, err)
		}
	}
	c, err := lbd.NewConnector(cl.DSN("balance=statement&autocommit=1"), lbd.WithLogger(clusterkit.DiscardLogger()))
	if err != nil {
		t.Fatalf("autocommit=1 in statement mode: %v", err)
	}
	c.Close()
}
