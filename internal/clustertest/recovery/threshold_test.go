package recovery

import (
	"github.com/lbd-go/lbd"

	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestPanicThresholdSpreads: two of three proxies fail their probes while they still serve
// SQL. Below the panic threshold (default 50%: one of three is up) the load spreads over all
// three instead of piling onto the one up; with panicThresholdPercent=0 it all goes to that
// one, as before.
func TestPanicThresholdSpreads(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		for _, threshold := range []string{"", "0"} {
			name := mode + "/default"
			params := "balance=" + mode
			if threshold != "" {
				name = mode + "/off"
				params += "&panicThresholdPercent=" + threshold
			}
			t.Run(name, func(t *testing.T) {
				cl := lbdtest.NewCluster(t, 3)
				logs := &testkit.Logs{}
				db, c := clusterkit.OpenDB(t, cl, params, clusterkit.Fast(300*time.Millisecond, 300*time.Millisecond, time.Second, logs)...)
				db.SetMaxOpenConns(24)
				db.SetMaxIdleConns(24)
				w := clusterkit.StartWorkload(t, db, 16)
				w.Progress(t, 5*time.Second, 500)
				for _, p := range cl.Proxies()[1:] {
					p.FailQueries("/* ping */", &mysql.MySQLError{Number: 1105, Message: "probe refused"})
				}
				testkit.WaitFor(t, 5*time.Second, "two proxies down by their probes", func() bool {
					for _, p := range cl.Proxies()[1:] {
						if s, _ := clusterkit.NodeState(c, p.Addr()); s != lbd.StateDown {
							return false
						}
					}
					return true
				})
				// Let the pool settle (the connections the down proxies had are retired; below
				// the threshold new ones go there), then measure the shares over a window.
				w.Progress(t, 20*time.Second, 2000)
				if threshold == "" {
					testkit.WaitFor(t, 10*time.Second, "connections on the down proxies again", func() bool {
						open := clusterkit.OpenCounts(c, cl)
						return open[1] >= 4 && open[2] >= 4
					})
				}
				before := clusterkit.StatementCounts(cl)
				w.Progress(t, 20*time.Second, 5000)
				after := clusterkit.StatementCounts(cl)
				share := make([]float64, 3)
				var total int64
				for i := range after {
					after[i] -= before[i]
					total += after[i]
				}
				for i := range after {
					share[i] = float64(after[i]) / float64(total)
				}
				t.Logf("statement shares with proxies 2 and 3 down by probes: %.2f %.2f %.2f (open %v)", share[0], share[1], share[2], clusterkit.OpenCounts(c, cl))
				if threshold == "0" {
					if share[0] < 0.95 {
						t.Fatalf("with the threshold off, the up proxy took %.2f of the statements, want nearly all", share[0])
					}
				} else {
					for i, s := range share {
						if s < 0.2 {
							t.Fatalf("proxy %d took %.2f of the statements below the panic threshold, want at least 0.2 (spread over all three)", i+1, s)
						}
					}
					for _, p := range cl.Proxies()[1:] {
						if s, _ := clusterkit.NodeState(c, p.Addr()); s != lbd.StateDown {
							t.Fatalf("%s is %v; serving below the threshold must not bring it up", p.Addr(), s)
						}
					}
				}
				// With the threshold off, the one proxy up carries everything and may miss its
				// own probes' deadline on a busy machine, taking the whole fleet down: that is
				// what the threshold prevents, so only its runs must not fail.
				if fails := clusterkit.Failures(w); threshold == "" && len(fails) > 0 {
					t.Fatalf("%d statements failed, first: %v", len(fails), fails[0].Err)
				}
			})
		}
	}
}
