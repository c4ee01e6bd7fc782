package leastload

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// loadLatency is the delay every proxy adds to a statement in the load-aware tests: a network
// round trip of sorts, so that the statements rather than the scheduler of a busy 2-CPU host
// decide the latencies (see TestStatementModeSpreadsStatementsEvenly).
const loadLatency = 5 * time.Millisecond

// TestLeastLoadAvoidsASlowProxy makes one of three proxies three times slower while 16 workers
// run statements in statement mode. Under balancePolicy=least-load its share must fall to at
// most a third of each fast proxy's within 5 s, and stay there; least-connections, which goes
// by connections in use alone, is run in the same way for comparison, and must leave the slow
// proxy a larger share (with 16 statements in flight it keeps about as many on the slow proxy
// as on each fast one, so about a third of a fast proxy's share, but not less).
func TestLeastLoadAvoidsASlowProxy(t *testing.T) {
	const workers = 16
	const window = 500 * time.Millisecond
	run := func(t *testing.T, policy string) (reached time.Duration, settled float64) {
		cl := lbdtest.NewCluster(t, 3)
		for _, p := range cl.Proxies() {
			p.SetLatency(loadLatency)
		}
		db, c := clusterkit.OpenDB(t, cl, "balance=statement&balancePolicy="+policy, clusterkit.Quiet()...)
		db.SetMaxOpenConns(workers)
		db.SetMaxIdleConns(workers)
		ctx, cancel := context.WithCancel(context.Background())
		wait := clusterkit.SelectLoop(ctx, t, db, workers)
		defer wait()
		defer cancel()

		before := clusterkit.StatementCounts(cl)
		testkit.WaitFor(t, 5*time.Second, "statements on every proxy", func() bool {
			d := clusterkit.Deltas(cl, before)
			return d[0] > 0 && d[1] > 0 && d[2] > 0
		})
		slow := cl.Proxies()[2]
		slow.SetLatency(3 * loadLatency)
		start := time.Now()
		clusterkit.Deltas(cl, before)
		reached = -1
		var ratios []float64
		for time.Since(start) < 5*time.Second+3*window {
			time.Sleep(window) // a measuring window, not a verdict: the counts decide
			d := clusterkit.Deltas(cl, before)
			ratio := float64(d[2]) / float64(max(min(d[0], d[1]), 1))
			ratios = append(ratios, ratio)
			if ratio <= 1.0/3 && reached < 0 {
				reached = time.Since(start)
			}
			if ratio > 1.0/3 && reached >= 0 && time.Since(start) <= 5*time.Second {
				reached = -1 // not settled yet
			}
			if reached >= 0 && time.Since(start) > 5*time.Second {
				break
			}
		}
		st := c.Stats()
		lat := make([]string, 0, 3)
		for _, a := range cl.Addrs() {
			ns, _ := st.Node(a)
			lat = append(lat, fmt.Sprintf("%v×%.2f", ns.Latency.Round(10*time.Microsecond), ns.Speed))
		}
		settled = ratios[len(ratios)-1]
		t.Logf("balancePolicy=%s: slow/fast statement share per %v window after the slowdown %.2f; settled at %v; latency×speed %v",
			policy, window, ratios, reached, lat)
		return reached, settled
	}
	var load, conns float64
	t.Run("least-load", func(t *testing.T) {
		var reached time.Duration
		reached, load = run(t, "least-load")
		if reached < 0 || reached > 5*time.Second {
			t.Errorf("the slow proxy's share did not fall to a third of a fast proxy's within 5 s and stay there (last ratio %.2f)", load)
		}
	})
	t.Run("least-connections", func(t *testing.T) {
		_, conns = run(t, "least-connections")
	})
	if !(load < conns) {
		t.Errorf("least-load left the slow proxy a share of %.2f of a fast one's, least-connections %.2f: least-load should leave it less", load, conns)
	}
}

// TestLeastLoadSharesEquallyFastProxies runs 16 workers over three proxies of the same speed:
// the tolerance band must keep them sharing evenly, as least-connections does.
func TestLeastLoadSharesEquallyFastProxies(t *testing.T) {
	const workers, total = 16, 4000
	for _, policy := range []string{"least-load", "least-connections"} {
		t.Run(policy, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(loadLatency)
			}
			db, c := clusterkit.OpenDB(t, cl, "balance=statement&balancePolicy="+policy, clusterkit.Quiet()...)
			db.SetMaxOpenConns(workers)
			db.SetMaxIdleConns(workers)
			clusterkit.RunSelect1(t, db, workers, total/4) // estimates settle
			clusterkit.ResetProxyCounters(cl)
			clusterkit.RunSelect1(t, db, workers, total)
			counts := clusterkit.StatementCounts(cl)
			cv := clusterkit.ShareCV(counts)
			speeds := make([]float64, 0, 3)
			for _, a := range cl.Addrs() {
				ns, _ := c.Stats().Node(a)
				speeds = append(speeds, ns.Speed)
			}
			t.Logf("balancePolicy=%s: statements per proxy %v, CV %.1f%%, speed factors %v", policy, counts, cv*100, speeds)
			if cv > clusterkit.MaxShareCV {
				t.Errorf("CV of the per-proxy statement counts is %.1f%%, want at most %.0f%%", cv*100, clusterkit.MaxShareCV*100)
			}
		})
	}
}

// TestLeastLoadDoesNotHerd opens 30 Connectors over three proxies of the same speed, each with
// its own latency estimates, and runs statements through all of them at once. A strict
// fastest-node rule would send most of them to whichever proxy measured fastest; the tolerance
// band must keep every proxy within 1.5 times its fair share. The count starts after the first
// 3000 statements (a second or so: ten load ticks), so that every Connector has estimates to go
// by, and covers the next 6000. least-connections runs the same way for comparison.
func TestLeastLoadDoesNotHerd(t *testing.T) {
	const connectors, workersEach = 30, 2
	for _, tc := range []struct{ balance, policy string }{
		{"statement", "least-load"}, {"connection", "least-load"}, {"statement", "least-connections"},
	} {
		t.Run(tc.balance+"/"+tc.policy, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(loadLatency)
			}
			dbs := make([]*sql.DB, connectors)
			cs := make([]*lbd.Connector, connectors)
			for i := range dbs {
				dbs[i], cs[i] = clusterkit.OpenDB(t, cl, "balance="+tc.balance+"&balancePolicy="+tc.policy, clusterkit.Quiet()...)
				dbs[i].SetMaxOpenConns(workersEach)
				dbs[i].SetMaxIdleConns(workersEach)
			}
			ctx, cancel := context.WithCancel(context.Background())
			waits := make([]func(), 0, connectors)
			for _, db := range dbs {
				waits = append(waits, clusterkit.SelectLoop(ctx, t, db, workersEach))
			}
			before := clusterkit.StatementCounts(cl)
			var d []int64
			count := func(n int64) func() bool {
				return func() bool {
					now := clusterkit.StatementCounts(cl)
					var sum int64
					for i := range now {
						sum += now[i] - before[i]
					}
					if sum < n {
						return false
					}
					d = clusterkit.Deltas(cl, before)
					return true
				}
			}
			testkit.WaitFor(t, 30*time.Second, "3000 statements", count(3000))
			testkit.WaitFor(t, 60*time.Second, "6000 more statements", count(6000))
			slowed := make([]int, 3)
			lat := make([]time.Duration, 3)
			for _, c := range cs {
				st := c.Stats()
				for i, a := range cl.Addrs() {
					ns, _ := st.Node(a)
					if ns.Speed < 1 {
						slowed[i]++
					}
					lat[i] += ns.Latency / connectors
				}
			}
			cancel()
			for _, w := range waits {
				w()
			}
			t.Logf("Connectors that slowed each proxy at the end %v, mean latency estimates %v", slowed, lat)
			var sum, top int64
			for _, n := range d {
				sum += n
				top = max(top, n)
			}
			fair := float64(sum) / 3
			t.Logf("balance=%s balancePolicy=%s: statements per proxy %v, busiest/fair %.2f, open per proxy %v",
				tc.balance, tc.policy, d, float64(top)/fair, clusterkit.ProxyCounts(cl))
			if float64(top) > 1.5*fair {
				t.Errorf("a proxy got %d of %d statements, %.2f times its fair share; want at most 1.5", top, sum, float64(top)/fair)
			}
		})
	}
}

// TestLeastLoadRebalancesConnectionsOffASlowProxy: in connection mode the pool's connections
// stay where they were dialled, so the load-aware pick alone would change little; the
// rebalancer moves them by the same effective weights. One of three proxies is made five
// times slower under 16 workers over a pool of 24 (8 per proxy); under least-load the
// rebalancer must retire some of its connections and leave it at most three quarters of either
// fast proxy's, while least-connections keeps the counts even. Five times, not three: a busy
// host adds the same delay to every proxy's round trips, which narrows the measured ratio, and
// at three times a CI host's contention left the slow proxy inside the tolerance band for 10 s.
func TestLeastLoadRebalancesConnectionsOffASlowProxy(t *testing.T) {
	const workers, pool = 16, 24
	for _, policy := range []string{"least-load", "least-connections"} {
		t.Run(policy, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(loadLatency)
			}
			db, c := clusterkit.OpenDB(t, cl, "balancePolicy="+policy, lbd.WithCheckHealthInterval(time.Hour),
				lbd.WithCheckBalanceInterval(300*time.Millisecond))
			db.SetMaxOpenConns(pool)
			db.SetMaxIdleConns(pool)
			for _, cn := range testkit.HoldConns(t, db, pool) { // 24 connections at once, 8 per proxy
				cn.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			wait := clusterkit.SelectLoop(ctx, t, db, workers)
			defer wait()
			defer cancel()
			cl.Proxies()[2].SetLatency(5 * loadLatency)
			if policy == "least-connections" {
				// As long as least-load needs below, then a look: the counts stay even.
				before := clusterkit.StatementCounts(cl)
				testkit.WaitFor(t, 30*time.Second, "3000 statements", func() bool {
					now := clusterkit.StatementCounts(cl)
					return now[0]+now[1]+now[2]-before[0]-before[1]-before[2] >= 3000
				})
				open := clusterkit.OpenCounts(c, cl)
				t.Logf("least-connections: open per proxy %v", open)
				if clusterkit.Spread(open) > 1 {
					t.Errorf("least-connections moved connections by latency: open per proxy %v", open)
				}
				return
			}
			start := time.Now()
			testkit.WaitFor(t, 10*time.Second, "the rebalancer to move connections off the slow proxy", func() bool {
				open := clusterkit.OpenCounts(c, cl)
				return 4*open[2] <= 3*min(open[0], open[1]) && retiredByRebalance(c, cl)[2] > 0
			})
			ns, _ := c.Stats().Node(cl.Addrs()[2])
			t.Logf("least-load: open per proxy %v after %v; retired by the rebalancer %v; slow proxy's latency %v, speed %.2f",
				clusterkit.OpenCounts(c, cl), time.Since(start), retiredByRebalance(c, cl), ns.Latency, ns.Speed)
		})
	}
}

// retiredByRebalance returns how many connections the rebalancer retired per proxy.
func retiredByRebalance(c *lbd.Connector, cl *lbdtest.Cluster) []uint64 {
	st := c.Stats()
	out := make([]uint64, 0, len(cl.Addrs()))
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out = append(out, ns.RetiredBy[lbd.RetireRebalance])
	}
	return out
}
