package routing

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

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
