package clustertest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
)

func TestZZMeasure(t *testing.T) {
	if os.Getenv("LBD_MEASURE") == "" {
		t.Skip()
	}
	clusterkit.CPULoad(t, busySpinners)
	const run = 3 * time.Second
	for _, pol := range []string{"", "balancePolicy=least-connections&"} {
		cl := lbdtest.NewCluster(t, 3)
		line := "policy=" + pol + ": "
		for _, w := range []int{1, 4, 16, 64} {
			db, _ := openShareDB(t, cl.DSN(pol+"balance=statement"))
			db.SetMaxIdleConns(w)
			loopFor(t, cl, w, run/4, db)
			c := loopFor(t, cl, w, run, db)
			line += fmt.Sprintf("equal w=%d CV %.1f%% %v; ", w, shareCV(c)*100, c)
			db.Close()
		}
		for _, w := range []int{1, 4, 16} {
			db, _ := openShareDB(t, weightedDSN(cl, []int{3, 1, 1}, pol+"balance=statement"))
			db.SetMaxIdleConns(w)
			loopFor(t, cl, w, run/4, db)
			line += fmt.Sprintf("3:1:1 w=%d %.2f; ", w, shares(loopFor(t, cl, w, run, db)))
			db.Close()
		}
		cl.Close()
		for _, slow := range []struct {
			base, slow time.Duration
			w          int
		}{{0, 0, 1}, {time.Millisecond, 11 * time.Millisecond, 1}, {time.Millisecond, 11 * time.Millisecond, 16}} {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(slow.base)
			}
			db, _ := openShareDB(t, cl.DSN(pol+"balance=statement"))
			db.SetMaxIdleConns(slow.w)
			var d []int64
			if slow.slow == 0 {
				// three times slower: the slow proxy's statements take 3x (relay latency 2 ms vs 0)
				for _, p := range cl.Proxies() {
					p.SetLatency(time.Millisecond)
				}
				cl.Proxies()[2].SetLatency(3 * time.Millisecond)
			} else {
				cl.Proxies()[2].SetLatency(slow.slow)
			}
			loopFor(t, cl, slow.w, 5*time.Second, db)
			d = loopFor(t, cl, slow.w, run, db)
			line += fmt.Sprintf("slow(%v vs %v) w=%d slow/fast %.3f %v; ", slow.slow, slow.base, slow.w, float64(d[2])/float64(max(min(d[0], d[1]), 1)), d)
			db.Close()
			cl.Close()
		}
		for _, w := range []int{1, 8} {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies()[1:] {
				p.SetRole(lbdtest.Replica)
			}
			db, c := openShareDB(t, cl.DSN(pol+"balance=statement&readWriteSplit=true&roleCheck=mysql"))
			db.SetMaxIdleConns(w)
			waitFor(t, 15*time.Second, "roles", func() bool {
				st := c.Stats()
				ns, _ := st.Node(cl.Addrs()[1])
				return ns.Role.String() == "replica"
			})
			line += fmt.Sprintf("split w=%d primary share %.3f; ", w, shares(loopFor(t, cl, w, run, db))[0])
			db.Close()
			cl.Close()
		}
		t.Log(line)
	}
}
