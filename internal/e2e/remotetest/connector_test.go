package remotetest

import (
	"database/sql"
	"fmt"
	"github.com/lbd-go/lbd/internal/remotefake"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes/remote"
)

// sourceDSN is the DSN of a Connector whose nodes come from WithSource.
func sourceDSN(cl *lbdtest.Cluster) string {
	return fmt.Sprintf("%s:%s@lb()/%s?timeout=2s&readTimeout=5s", cl.User(), cl.Password(), cl.Database())
}

// fastOptions make the Connector probe and rebalance in milliseconds.
func fastOptions(logs *logRecorder) []lbd.Option {
	return []lbd.Option{
		lbd.WithLogger(logs.logger()),
		// The probe timeout is capped at the interval; under the race detector a probe that
		// dials (handshake and login on a busy in-memory backend) needs some room.
		lbd.WithCheckHealthInterval(300 * time.Millisecond),
		lbd.WithCheckBalanceInterval(100 * time.Millisecond),
	}
}

// openWithSource opens a *sql.DB over a Connector fed by a new source built from cfg.
func openWithSource(t *testing.T, cl *lbdtest.Cluster, cfg remote.Config, logs *logRecorder) (*sql.DB, *lbd.Connector, *remote.Source) {
	t.Helper()
	src, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testkit.Started(lbd.NewConnector(sourceDSN(cl), append(fastOptions(logs), lbd.WithSource(src))...))
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(8)
	t.Cleanup(func() { db.Close() })
	return db, c, src
}

// startWorkload runs SELECT 1 in a loop on n goroutines until the test ends or Stop.
func startWorkload(t testing.TB, db *sql.DB, n int) *testkit.Workload {
	return testkit.StartWorkload(t, db, testkit.WorkloadConfig{Workers: n})
}

var failedSince = testkit.FailedSince

func nodeStats(c *lbd.Connector, addr string) (lbd.NodeStats, bool) { return c.Stats().Node(addr) }

// isUp reports whether the Connector knows addr and has it up. (Stats.Node's zero value for an
// unknown address has State up, so the presence must be checked.)
func isUp(c *lbd.Connector, addr string) bool {
	n, ok := c.Stats().Node(addr)
	return ok && n.State == lbd.StateUp
}

// The README's AZ section with real proxies: az1 = {p0,p1}, default = all four. The AZ set
// going down degrades to the default set with no failed statement once the degraded set is
// in place; the AZ nodes stay probed and out of balancing; when they are back the source
// returns to them and p2, p3 drain away.
func TestAZFallbackWithAConnector(t *testing.T) {
	cl := lbdtest.NewCluster(t, 4)
	a := cl.Addrs()
	cs := remotefake.New(t)
	cs.SetList("im_user", a...)
	cs.SetAZ("im_user", "az1", a[0], a[1])
	logs := &logRecorder{}
	db, c, src := openWithSource(t, cl, remote.Config{
		Servers: []string{cs.Addr()}, Schema: "im_user", AZ: "az1", CacheDir: t.TempDir(),
		PollInterval: 100 * time.Millisecond, AZRefreshInterval: 300 * time.Millisecond,
		HealthTick: 10 * time.Millisecond, Logger: logs.logger(),
	}, logs)

	st := c.Stats()
	if len(st.Nodes) != 2 || st.Nodes[0].Addr != a[0] || st.Nodes[1].Addr != a[1] || st.Nodes[0].Standby || st.Nodes[1].Standby {
		t.Fatalf("start: %+v, want the AZ set %v", st.Nodes, a[:2])
	}
	w := startWorkload(t, db, 4)
	waitFor(t, 5*time.Second, "statements", func() bool { return w.Count() > 50 })

	cl.Proxy(0).Stop()
	cl.Proxy(1).Stop()
	var switched time.Time
	waitFor(t, 10*time.Second, "the degraded set in place", func() bool {
		n0, ok0 := nodeStats(c, a[0])
		n1, ok1 := nodeStats(c, a[1])
		if src.Degraded() && ok0 && ok1 && n0.Standby && n1.Standby && (isUp(c, a[2]) || isUp(c, a[3])) {
			switched = time.Now()
			return true
		}
		return false
	})
	// The AZ nodes stay probed and take nothing.
	before, _ := nodeStats(c, a[0])
	waitFor(t, 5*time.Second, "more probes of the standby AZ node", func() bool {
		n, _ := nodeStats(c, a[0])
		return n.Probes >= before.Probes+3
	})
	waitFor(t, 5*time.Second, "both default-only nodes up", func() bool { return isUp(c, a[2]) && isUp(c, a[3]) })
	for _, addr := range a[:2] {
		if n, _ := nodeStats(c, addr); !n.Standby || n.Open != 0 {
			t.Errorf("AZ node %s while degraded: standby %v, open %d", addr, n.Standby, n.Open)
		}
	}
	stmts2 := cl.Proxy(2).Statements() + cl.Proxy(3).Statements()

	cl.Proxy(0).Start()
	cl.Proxy(1).Start()
	waitFor(t, 15*time.Second, "back to the AZ set, p2 and p3 drained", func() bool {
		st := c.Stats()
		_, has2 := st.Node(a[2])
		_, has3 := st.Node(a[3])
		n0, ok0 := st.Node(a[0])
		return !src.Degraded() && !has2 && !has3 && ok0 && n0.State == lbd.StateUp && !n0.Standby
	})
	stmts0 := cl.Proxy(0).Statements() + cl.Proxy(1).Statements()
	waitFor(t, 5*time.Second, "statements on the AZ set again", func() bool {
		return cl.Proxy(0).Statements()+cl.Proxy(1).Statements() > stmts0+20
	})
	ops := w.Stop()

	if stmts2 == 0 {
		t.Error("no statement ran on the default set while degraded")
	}
	errs, total := failedSince(ops, switched)
	if total < 50 {
		t.Errorf("only %d statements after the switch", total)
	}
	if len(errs) > 0 {
		t.Errorf("%d of %d statements failed after the degraded set was in place; first: %v", len(errs), total, errs[0])
	}
	if n := logs.count("WARN", "degraded to the default set"); n != 1 {
		logs.dump(t)
		t.Errorf("%d degrade warnings, want 1", n)
	}
	if n := logs.count("INFO", "back to the AZ set"); n != 1 {
		t.Errorf("%d lines about going back, want 1", n)
	}
	if got := cs.CountPolicy("default"); got == 0 {
		t.Error("the default set was never asked for")
	}
}

// Scenarios 12, 14 and 15: one config-server of two down or hung. Traffic goes on, the list
// still follows through the other, and a new Connector (an application restart) starts.
func TestOneConfigServerFails(t *testing.T) {
	for _, fault := range []string{"down", "hung"} {
		t.Run(fault, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			a := cl.Addrs()
			csA, csB := remotefake.New(t), remotefake.New(t)
			for _, cs := range []*remotefake.Server{csA, csB} {
				cs.SetList("s", a[0], a[1])
			}
			logs := &logRecorder{}
			cfg := remote.Config{
				Servers: []string{csA.Addr(), csB.Addr()}, Schema: "s", CacheDir: t.TempDir(),
				PollInterval: 50 * time.Millisecond, Timeout: 300 * time.Millisecond, Logger: logs.logger(),
			}
			db, c, _ := openWithSource(t, cl, cfg, logs)
			w := startWorkload(t, db, 3)
			waitFor(t, 5*time.Second, "statements", func() bool { return w.Count() > 30 })

			switch fault {
			case "down":
				csA.Close()
			case "hung":
				csA.SetFault("hang")
			}
			csB.SetList("s", a...)
			waitFor(t, 10*time.Second, "the third proxy through the other config-server", func() bool { return isUp(c, a[2]) })

			start := time.Now()
			db2, c2, _ := openWithSource(t, cl, cfg, logs)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("restart took %v", took)
			}
			if got := len(c2.Stats().Nodes); got != 3 {
				t.Errorf("restarted Connector has %d nodes, want 3", got)
			}
			if _, err := db2.Exec("SELECT 1"); err != nil {
				t.Errorf("restarted Connector: %v", err)
			}
			ops := w.Stop()
			if errs, total := failedSince(ops, time.Time{}); len(errs) > 0 {
				t.Errorf("%d of %d statements failed; first: %v", len(errs), total, errs[0])
			}
			if n := logs.count(failLine); n != 0 {
				logs.dump(t)
				t.Errorf("%d whole-round failures, want 0: the other config-server answered", n)
			}
		})
	}
}

// Scenario 13 with a Connector: every config-server down at start-up.
func TestConnectorStartsFromTheCache(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	cs := remotefake.New(t)
	cs.SetList("s", cl.Addrs()...)
	dir := t.TempDir()
	logs := &logRecorder{}
	cfg := remote.Config{Servers: []string{cs.Addr()}, Schema: "s", APIKey: "very-secret", CacheDir: dir, Logger: logs.logger()}
	db, _, _ := openWithSource(t, cl, cfg, logs)
	db.Close()
	cs.Close()

	db, c, _ := openWithSource(t, cl, cfg, logs)
	if got := len(c.Stats().Nodes); got != 2 {
		t.Fatalf("%d nodes from the cache, want 2", got)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if logs.count("WARN", "starting from the node list cached") != 1 {
		logs.dump(t)
		t.Fatal("no warning about the cache")
	}

	cfg.CacheDir = t.TempDir()
	src, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = testkit.Started(lbd.NewConnector(sourceDSN(cl), append(fastOptions(logs), lbd.WithSource(src))...))
	if err == nil || !strings.Contains(err.Error(), cs.Addr()) || strings.Contains(err.Error(), "very-secret") {
		t.Fatalf("NewConnector without config-server or cache = %v, want an error naming the server", err)
	}
}
