package shares

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
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

// TestWeightedProxiesHoldTheirShare: with weights 1 and 3 in the DSN, 40 connections end up 10
// and 30 on the proxies.
func TestWeightedProxiesHoldTheirShare(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 2)
	a := cl.Addrs()
	dsn := strings.Replace(cl.DSN(""), strings.Join(a, ","), a[0]+","+a[1]+"*3", 1)
	c, err := lbd.NewConnector(dsn, append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var conns []driver.Conn
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for range 40 {
		cn, err := c.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	if got := fmt.Sprint(clusterkit.OpenCounts(c, cl)); got != "[10 30]" {
		t.Fatalf("open per proxy %s, want [10 30] for weights 1 and 3", got)
	}
	if ns, _ := c.Stats().Node(a[1]); ns.Weight != 3 || ns.EffectiveWeight != 3 || ns.Warmup != 1 {
		t.Fatalf("Stats of the weight-3 proxy: weight %d effective %v warm-up %v", ns.Weight, ns.EffectiveWeight, ns.Warmup)
	}
}
