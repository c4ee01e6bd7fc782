package faults

import (
	"github.com/lbd-go/lbd"

	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

func TestHungProxyIsTakenDown(t *testing.T) {
	const interval, timeout = 300 * time.Millisecond, 300 * time.Millisecond
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "timeout=300ms", clusterkit.Fast(interval, timeout, time.Hour, logs)...)
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(20)
	w := clusterkit.StartWorkload(t, db, 20)
	testkit.WaitFor(t, 5*time.Second, "the workload to spread over every proxy", func() bool {
		return clusterkit.Spread(clusterkit.OpenCounts(c, cl)) <= 1 && c.Stats().Open() >= 15
	})

	hung := cl.Proxy(0)
	testkit.WaitFor(t, 5*time.Second, "statements flowing through every proxy", func() bool {
		for _, p := range cl.Proxies() {
			if p.Statements() < 100 {
				return false
			}
		}
		return true
	})
	hungAt := time.Now()
	hung.Hang()
	defer hung.Resume()
	downAt := clusterkit.WaitForTransition(t, c, logs, hung.Addr(), lbd.StateDown).At
	took := downAt.Sub(hungAt)
	t.Logf("hung proxy down after %v (interval %v, timeout capped at %v)", took, interval, min(timeout, interval))
	if limit := interval + min(timeout, interval) + 400*time.Millisecond; took > limit { // slack for a loaded machine
		t.Errorf("detection took %v, want at most %v", took, limit)
	}

	w.Progress(t, 5*time.Second, 100) // statements on the other proxies after the node went down
	failed := clusterkit.Failures(w)
	for _, o := range failed {
		if !o.Start.Before(downAt) {
			t.Errorf("statement started %v after the node went down failed: %v", o.Start.Sub(downAt), o.Err)
		}
	}
	t.Logf("%d statements, %d failed (all started before the node went down)", w.Count(), len(failed))
}

func TestStoppedProxyNotDelayedByHungOne(t *testing.T) {
	const interval = 500 * time.Millisecond
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	_, c := clusterkit.OpenDB(t, cl, "", clusterkit.Fast(interval, interval, time.Hour, logs)...)
	hung, stopped := cl.Proxy(0), cl.Proxy(1)
	testkit.WaitFor(t, 5*time.Second, "first probes", func() bool {
		for _, ns := range c.Stats().Nodes {
			if ns.Probes == 0 {
				return false
			}
		}
		return true
	})
	at := time.Now()
	hung.Hang()
	defer hung.Resume()
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	stoppedDown := clusterkit.WaitForTransition(t, c, logs, stopped.Addr(), lbd.StateDown).At.Sub(at)
	hungDown := clusterkit.WaitForTransition(t, c, logs, hung.Addr(), lbd.StateDown).At.Sub(at)
	t.Logf("stopped proxy down after %v, hung proxy after %v", stoppedDown, hungDown)
	if stoppedDown > interval+400*time.Millisecond {
		t.Errorf("stopped proxy took %v, want within one interval (%v)", stoppedDown, interval)
	}
	if stoppedDown+interval/2 > hungDown {
		t.Errorf("stopped proxy (%v) was not judged well before the hung one timed out (%v)", stoppedDown, hungDown)
	}
}

func TestRecoveryNeedsConsecutiveGoodProbes(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "recoverCheckCount=3", clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	db.SetMaxIdleConns(30)
	db.SetMaxOpenConns(30)
	for _, cn := range testkit.HoldConns(t, db, 30) { // leave 10 idle connections on every proxy
		cn.Close()
	}
	p := cl.Proxy(2)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the stopped proxy to go down", func() bool {
		s, _ := clusterkit.NodeState(c, p.Addr())
		return s == lbd.StateDown
	})
	// The idle connections close right after the transition is handled (on the Connector's
	// own goroutine).
	testkit.WaitFor(t, 2*time.Second, "the down node's idle connections to close", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.Open == 0
	})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	clusterkit.WaitForTransition(t, c, logs, p.Addr(), lbd.StateUp)
	ups := logs.Match("lbd: node state changed", "node", p.Addr(), "to", "up")
	if len(ups) != 1 || !strings.HasPrefix(ups[0].Attrs["reason"], "3 consecutive good probes") {
		t.Fatalf("up transitions = %+v, want one after 3 consecutive good probes", ups)
	}
	for i := range 500 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("query %d after recovery: %v", i, err)
		}
	}
}

func TestScaleOutReachesFairShare(t *testing.T) {
	const balance = 400 * time.Millisecond
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, balance, logs)...)
	db.SetMaxOpenConns(30)
	db.SetMaxIdleConns(30)
	w := clusterkit.StartWorkload(t, db, 30)
	testkit.WaitFor(t, 5*time.Second, "30 connections spread 10/10/10", func() bool {
		got := clusterkit.OpenCounts(c, cl)
		return c.Stats().Open() == 30 && clusterkit.Spread(got) == 0
	})
	if _, err := cl.AddProxy(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetNodes(cl.Addrs()); err != nil {
		t.Fatal(err)
	}
	newAddr := cl.Addrs()[3]
	testkit.WaitFor(t, 5*time.Second, "the new proxy to pass its probe", func() bool {
		s, _ := clusterkit.NodeState(c, newAddr)
		return s == lbd.StateUp
	})
	upAt := time.Now()
	testkit.WaitFor(t, 10*time.Second, "counts within 1 of each other over 4 proxies", func() bool {
		got := clusterkit.OpenCounts(c, cl)
		return clusterkit.Spread(got) <= 1 && got[3] >= 7
	})
	took := time.Since(upAt)
	t.Logf("converged to %v in %v (balance interval %v)", clusterkit.OpenCounts(c, cl), took, balance)
	if took > 2*balance+600*time.Millisecond { // slack for a loaded machine
		t.Errorf("convergence took %v, want within two balance intervals (%v)", took, 2*balance)
	}
	if f := clusterkit.Failures(w); len(f) > 0 {
		t.Fatalf("%d application errors during scale-out, first: %v", len(f), f[0].Err)
	}
}

func TestDrainRemovedProxy(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, 200*time.Millisecond, logs)...)
	db.SetMaxOpenConns(15)
	db.SetMaxIdleConns(15)
	w := clusterkit.StartWorkload(t, db, 15)
	testkit.WaitFor(t, 5*time.Second, "load on every proxy", func() bool {
		for _, n := range clusterkit.OpenCounts(c, cl) {
			if n == 0 {
				return false
			}
		}
		return true
	})
	removed := cl.Proxy(1).Addr()
	keep := []string{cl.Proxy(0).Addr(), cl.Proxy(2).Addr()}
	if err := c.SetNodes(keep); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the removed proxy to leave Stats", func() bool {
		_, ok := clusterkit.NodeState(c, removed)
		return !ok
	})
	testkit.WaitFor(t, 5*time.Second, "the removed proxy to see no connection", func() bool {
		return cl.Proxy(1).OpenConns() == 0
	})
	if f := clusterkit.Failures(w); len(f) > 0 {
		t.Fatalf("%d application errors while draining, first: %v", len(f), f[0].Err)
	}
	// The log line follows the table on the Connector's own goroutine.
	testkit.WaitFor(t, 5*time.Second, "the drained node's log line", func() bool {
		return len(logs.Match("lbd: node drained and removed", "node", removed)) > 0
	})
	if n := len(logs.Match("lbd: node drained and removed", "node", removed)); n != 1 {
		t.Fatalf("%d log lines for the drained node, want 1", n)
	}
}

func TestRemovingLastUpNodeIsRefused(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 2)
	logs := &testkit.Logs{}
	_, c := clusterkit.OpenDB(t, cl, "", clusterkit.Fast(time.Hour, time.Hour, time.Hour, logs)...)
	// Replace both nodes by one that does not answer: the new one is down until probed, so
	// removing both old ones would leave nothing up.
	err := c.SetNodes([]string{"127.0.0.1:1"})
	if !errors.Is(err, lbd.ErrNoUpNodeLeft) {
		t.Fatalf("SetNodes = %v, want ErrNoUpNodeLeft", err)
	}
	for _, a := range cl.Addrs() {
		if s, ok := clusterkit.NodeState(c, a); !ok || s != lbd.StateUp {
			t.Fatalf("node %s is %v (present %v) after a refused removal, want up", a, s, ok)
		}
	}
	if len(logs.Match("lbd: node list not fully applied")) != 1 {
		t.Fatal("refused removal was not logged")
	}
	if err := c.SetNodes(nil); err == nil {
		t.Fatal("an empty node list was accepted")
	}
	if err := c.SetNodes([]string{"nonsense"}); err == nil {
		t.Fatal("a malformed node list was accepted")
	}
}

func TestAllDownFailsFastAndRecovers(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "recoverCheckCount=1", clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	for _, p := range cl.Proxies() {
		p.Stop()
	}
	testkit.WaitFor(t, 5*time.Second, "every node down", func() bool {
		for _, ns := range c.Stats().Nodes {
			if ns.State != lbd.StateDown {
				return false
			}
		}
		return true
	})
	start := time.Now()
	err := db.Ping()
	var ce *lbd.ConnectError
	if !errors.As(err, &ce) || !ce.AllDown {
		t.Fatalf("ping with every node down = %v, want ConnectError with AllDown", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("failing with every node down took %v; its panic-mode dials are refused at once", time.Since(start))
	}
	for _, p := range cl.Proxies() {
		p.Start()
	}
	testkit.WaitFor(t, 5*time.Second, "recovery without a restart", func() bool { return db.Ping() == nil })
}

func TestLogStatsWritesOneLinePerNode(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 2)
	logs := &testkit.Logs{}
	dsn := strings.Replace(cl.DSN("logStats=true"), cl.User()+":"+cl.Password()+"@", cl.User()+":s3cretpw@", 1)
	c, err := lbd.NewConnector(dsn, append(clusterkit.Quiet(), lbd.WithLogger(logs.Logger()), lbd.WithStatsInterval(20*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.WaitFor(t, 5*time.Second, "stats lines for both nodes", func() bool {
		return len(logs.Match("lbd stats", "node", cl.Addrs()[0])) > 0 && len(logs.Match("lbd stats", "node", cl.Addrs()[1])) > 0
	})
	for _, rec := range logs.Match("lbd stats") {
		for k, v := range rec.Attrs {
			if strings.Contains(v, "s3cretpw") {
				t.Fatalf("stats attribute %s contains the password", k)
			}
		}
		if rec.Attrs["state"] != "up" {
			t.Fatalf("stats line %+v, want state up", rec.Attrs)
		}
	}
}
