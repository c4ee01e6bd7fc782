package clustertest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// weightedDSN is cl's DSN with weights on its proxies (0: none).
func weightedDSN(cl *lbdtest.Cluster, weights []int, params string) string {
	addrs := cl.Addrs()
	list := make([]string, len(addrs))
	for i, a := range addrs {
		list[i] = a
		if i < len(weights) && weights[i] > 0 {
			list[i] = fmt.Sprintf("%s*%d", a, weights[i])
		}
	}
	return strings.Replace(cl.DSN(params), strings.Join(addrs, ","), strings.Join(list, ","), 1)
}

// TestWeightsAreSharesAtTheDefaults: weights 3:1:1 give 60/20/20 (± 5 points) of the statements
// at 1, 4 and 16 workers in statement mode, and of the new connections in connection mode;
// equal proxies share with a CV of at most 5 % at 1, 4, 16 and 64 workers. Before, a strict
// minimum over (in use+1)/weight gave 3:1:1 100/0/0 at one worker, and the load policy's
// estimates drifting apart on a busy host gave equal proxies a CV of 58 % at 4 workers.
func TestWeightsAreSharesAtTheDefaults(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	cl := lbdtest.NewCluster(t, 3)
	// The defaults first; least-connections shares by the same rule (only the load policy's
	// speed factors differ), so it is held to the same figures.
	for _, policy := range []string{"", "balancePolicy=least-connections&"} {
		name := strings.TrimSuffix(strings.TrimPrefix(policy, "balancePolicy="), "&")
		if name == "" {
			name = "defaults"
		}
		for _, workers := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("%s/3:1:1/workers=%d", name, workers), func(t *testing.T) {
				db, c := clusterkit.OpenDSN(t, weightedDSN(cl, []int{3, 1, 1}, policy+"balance=statement"))
				db.SetMaxIdleConns(workers)
				clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun/4, db) // the estimates settle
				got := clusterkit.Shares(clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun, db))
				t.Logf("shares %.3f, speeds %v", got, clusterkit.Speeds(c, cl))
				for i, want := range []float64{0.6, 0.2, 0.2} {
					if got[i] < want-0.05 || got[i] > want+0.05 {
						t.Errorf("proxy %d has %.3f of the statements, want %.2f ± 0.05", i, got[i], want)
					}
				}
			})
		}
		for _, workers := range []int{1, 4, 16, 64} {
			t.Run(fmt.Sprintf("%s/equal/workers=%d", name, workers), func(t *testing.T) {
				db, c := clusterkit.OpenDSN(t, cl.DSN(policy+"balance=statement"))
				db.SetMaxIdleConns(workers)
				clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun/4, db)
				windows := 1
				if workers >= inFlightRules {
					windows = 2
				}
				var cv float64
				for w := range windows {
					counts := clusterkit.LoopUntil(t, cl, workers, clusterkit.ShareRun, 9000, db)
					cv = clusterkit.ShareCV(counts)
					t.Logf("window %d: statements %v, CV %.1f%%, speeds %v", w+1, counts, cv*100, clusterkit.Speeds(c, cl))
					if cv <= clusterkit.MaxShareCV {
						break
					}
				}
				if cv > clusterkit.MaxShareCV {
					t.Errorf("CV %.1f%% of the statements per proxy, want at most %.0f%%", cv*100, clusterkit.MaxShareCV*100)
				}
			})
		}
	}
	t.Run("defaults/3:1:1/connection-mode-dials", func(t *testing.T) {
		// One connection at a time, closed after each statement: every dial sees no connection
		// open anywhere, and still the dials follow the weights.
		db, _ := clusterkit.OpenDSN(t, weightedDSN(cl, []int{3, 1, 1}, ""))
		db.SetMaxIdleConns(0)
		clusterkit.ResetProxyCounters(cl)
		for range 200 {
			var one int
			if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
		}
		var dials []int64
		for _, p := range cl.Proxies() {
			dials = append(dials, p.TotalConns())
		}
		got := clusterkit.Shares(dials)
		t.Logf("dials %v", dials)
		for i, want := range []float64{0.6, 0.2, 0.2} {
			if got[i] < want-0.05 || got[i] > want+0.05 {
				t.Errorf("proxy %d took %.3f of the new connections, want %.2f ± 0.05", i, got[i], want)
			}
		}
	})
}

// inFlightRules is the concurrency from which the pick order is weighted least-connections
// (the window of recent units is empty: internal/nodetable's recent.go). There a proxy's
// statement share follows its speed, as it should: a proxy whose connections the host stalls
// for a moment rightly gets fewer statements meanwhile, and with 64 workers over three proxies
// (21 in flight on each) a few statements stalled on one proxy move its share by several
// points for that window (once in CI against MariaDB: [3247 2779 3056], CV 6.3 %). So an equal
// case at that concurrency that fails its window measures a second one and fails only if that
// fails too: a pick that drifts fails every window, a moment of the host does not repeat. The
// cases below it, where the window of recent units makes turns exact, get one window.
const inFlightRules = 16

// TestManyClientsShareEvenly: 30 Connectors of one worker each, each with its own estimates
// and its own turns, put a third (± 5 points) of the statements on each of three proxies.
func TestManyClientsShareEvenly(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	cl := lbdtest.NewCluster(t, 3)
	dbs := make([]*sql.DB, 30)
	for i := range dbs {
		dbs[i], _ = clusterkit.OpenDSN(t, cl.DSN("balance=statement"))
	}
	clusterkit.LoopFor(t, cl, 1, clusterkit.ShareRun/4, dbs...)
	got := clusterkit.Shares(clusterkit.LoopFor(t, cl, 1, clusterkit.ShareRun, dbs...))
	t.Logf("shares %.3f", got)
	for i, s := range got {
		if s < 1.0/3-0.05 || s > 1.0/3+0.05 {
			t.Errorf("proxy %d has %.3f of the statements of 30 one-worker clients, want 0.33 ± 0.05", i, s)
		}
	}
}

// TestSlowProxyShedsWithoutStarving: a proxy that adds 10 ms to every statement (the others
// 1 ms) gets between 1/16 and 1/3 of a fast proxy's statements within 5 s, at one worker and at
// sixteen (before: none at one worker, 0.05 at sixteen), and once it is fast again it regains at
// least 15 % of the statements within 4 s at one worker.
func TestSlowProxyShedsWithoutStarving(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(time.Millisecond)
			}
			db, c := clusterkit.OpenDSN(t, cl.DSN("balance=statement"))
			db.SetMaxIdleConns(workers)
			clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun/4, db)
			slow := cl.Proxies()[2]
			slow.SetLatency(11 * time.Millisecond)
			var ratio float64
			deadline := time.Now().Add(5 * time.Second)
			for {
				d := clusterkit.LoopFor(t, cl, workers, time.Second, db)
				ratio = float64(d[2]) / float64(max(min(d[0], d[1]), 1))
				t.Logf("slow/fast %.3f (%v), speeds %v", ratio, d, clusterkit.Speeds(c, cl))
				if ratio >= 1.0/16 && ratio <= 1.0/3 || time.Now().After(deadline) {
					break
				}
			}
			if ratio < 1.0/16 || ratio > 1.0/3 {
				t.Fatalf("the slow proxy got %.3f of a fast proxy's statements 5 s after it slowed, want 1/16 to 1/3", ratio)
			}
			if workers != 1 {
				return
			}
			slow.SetLatency(time.Millisecond)
			deadline = time.Now().Add(4 * time.Second)
			var share float64
			for {
				d := clusterkit.LoopFor(t, cl, workers, 500*time.Millisecond, db)
				share = clusterkit.Shares(d)[2]
				t.Logf("healed: share %.3f (%v), speeds %v", share, d, clusterkit.Speeds(c, cl))
				if share >= 0.15 || time.Now().After(deadline) {
					break
				}
			}
			if share < 0.15 {
				t.Errorf("the healed proxy has %.3f of the statements 4 s after it healed, want at least 0.15", share)
			}
		})
	}
}

// TestSplitOffloadsThePrimary: with the read/write split at its defaults, plain reads go to the
// replicas while one serves; the primary serves at most 5 % of them at 1 and 8 workers, with
// one replica or two (before: a third, as one more candidate).
func TestSplitOffloadsThePrimary(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	for _, replicas := range []int{1, 2} {
		for _, workers := range []int{1, 8} {
			t.Run(fmt.Sprintf("replicas=%d/workers=%d", replicas, workers), func(t *testing.T) {
				cl := lbdtest.NewCluster(t, 1+replicas)
				for _, p := range cl.Proxies()[1:] {
					p.SetRole(lbdtest.Replica)
				}
				db, c := clusterkit.OpenDSN(t, cl.DSN("balance=statement&readWriteSplit=true&roleCheck=mysql"))
				db.SetMaxIdleConns(workers)
				testkit.WaitFor(t, 15*time.Second, "roles checked", func() bool {
					st := c.Stats()
					for i, a := range cl.Addrs() {
						ns, _ := st.Node(a)
						if want := i > 0; (ns.Role.String() == "replica") != want {
							return false
						}
					}
					return true
				})
				got := clusterkit.Shares(clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun, db))
				t.Logf("read shares %.3f", got)
				if got[0] > 0.05 {
					t.Errorf("the primary served %.3f of the plain reads, want at most 0.05", got[0])
				}
			})
		}
	}
}

// TestSlowProxyLosesPooledConnections: in connection mode at the defaults, a proxy that adds
// 10 ms to every statement (the others 1 ms) holds at most half a fast proxy's pooled
// connections within 5 s: the load policy's slowdown brings the rebalancer's round forward
// instead of waiting for its 10 s interval.
func TestSlowProxyLosesPooledConnections(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	const workers, pool = 16, 24
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies() {
		p.SetLatency(time.Millisecond)
	}
	db, c := clusterkit.OpenDSN(t, cl.DSN(""))
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	for _, cn := range clusterkit.HoldConns(t, db, pool) { // 8 per proxy
		cn.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := clusterkit.SelectLoop(ctx, t, db, workers)
	defer wait()
	defer cancel()
	clusterkit.LoopFor(t, cl, 1, clusterkit.ShareRun/4, db) // the estimates settle
	cl.Proxies()[2].SetLatency(11 * time.Millisecond)
	start := time.Now()
	testkit.WaitFor(t, 5*time.Second, "the slow proxy to hold at most half a fast proxy's connections", func() bool {
		open := clusterkit.OpenCounts(c, cl)
		return 2*open[2] <= min(open[0], open[1])
	})
	t.Logf("open per proxy %v after %v; retired by the rebalancer %v; speeds %v",
		clusterkit.OpenCounts(c, cl), time.Since(start).Round(time.Millisecond), retiredByRebalance(c, cl), clusterkit.Speeds(c, cl))
}
