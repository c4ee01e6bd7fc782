package recovery

import (
	"github.com/lbd-go/lbd"

	"strconv"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestShortOutageRegainsShare: at the default warm-up (30 s), a proxy stopped for 3 s regains
// its fair share of twelve pooled connections within two rebalancing rounds of its return:
// an outage shorter than lbd.SlowStartAfterDown skips slow start. (With slow start it held one
// of twelve ten seconds after its return.)
func TestShortOutageRegainsShare(t *testing.T) {
	const round = time.Second
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			db, c := clusterkit.OpenDB(t, cl, "balance="+mode, lbd.WithCheckBalanceInterval(round))
			db.SetMaxOpenConns(12)
			db.SetMaxIdleConns(12)
			w := clusterkit.StartWorkload(t, db, 12)
			testkit.WaitFor(t, 10*time.Second, "the pool spread over the proxies", func() bool {
				return clusterkit.Spread(clusterkit.OpenCounts(c, cl)) <= 1 && c.Stats().Open() >= 11
			})
			p := cl.Proxy(0)
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 5*time.Second, "the stopped proxy down", func() bool {
				s, _ := clusterkit.NodeState(c, p.Addr())
				return s == lbd.StateDown
			})
			time.Sleep(3 * time.Second) // the outage
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 5*time.Second, "the proxy back up", func() bool {
				s, _ := clusterkit.NodeState(c, p.Addr())
				return s == lbd.StateUp
			})
			back := time.Now()
			if ns, _ := c.Stats().Node(p.Addr()); ns.Warmup != 1 {
				t.Fatalf("back from a 3 s outage, the proxy warms up (%.2f)", ns.Warmup)
			}
			// Two rounds, and the time a round's retired connections take to be dialed again.
			testkit.WaitFor(t, 2*round+2*time.Second, "the returned proxy at its fair share (4 of 12, within one)", func() bool {
				return clusterkit.OpenCounts(c, cl)[0] >= 3
			})
			t.Logf("the proxy back from a 3 s outage held %v of the pool %v after its return", clusterkit.OpenCounts(c, cl), time.Since(back).Round(10*time.Millisecond))
			w.Stop()
		})
	}
}

// TestSlowStartWaves: a proxy added by scale-out warms up, and no rebalancing round moves more
// than a third of its fair share into it, even with a warm-up window (2 s) short beside the
// rounds (1 s); it still reaches its share once warm.
func TestSlowStartWaves(t *testing.T) {
	const round = time.Second
	cl := lbdtest.NewCluster(t, 2)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "warmupSeconds=2", lbd.WithCheckBalanceInterval(round), lbd.WithLogger(logs.Logger()))
	db.SetMaxOpenConns(12)
	db.SetMaxIdleConns(12)
	w := clusterkit.StartWorkload(t, db, 12)
	testkit.WaitFor(t, 10*time.Second, "the pool spread over the proxies", func() bool {
		return clusterkit.Spread(clusterkit.OpenCounts(c, cl)) <= 1 && c.Stats().Open() >= 11
	})
	p, err := cl.AddProxy()
	if err != nil {
		t.Fatal(err)
	}
	before := len(logs.Find("lbd: rebalanced"))
	if err := c.SetNodes(cl.Addrs()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the added proxy warm and at its fair share (4 of 12, within one)", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.State == lbd.StateUp && ns.Warmup == 1 && clusterkit.OpenCounts(c, cl)[2] >= 3
	})
	w.Stop()
	perRound := map[string]int{}
	for _, l := range logs.Find("lbd: rebalanced")[before:] {
		n, _ := strconv.Atoi(l.Attrs["retired"])
		perRound[l.Attrs["round"]] += n
	}
	t.Logf("connections retired per rebalancing round while the added proxy warmed up: %v; it holds %v", perRound, clusterkit.OpenCounts(c, cl))
	if len(perRound) == 0 {
		t.Fatal("no rebalancing round moved anything into the added proxy")
	}
	for r, n := range perRound {
		if n > 1 { // a third of its fair share of 4
			t.Errorf("round %s retired %d connections at once, want at most a third of the newcomer's fair share (1)", r, n)
		}
	}
}
