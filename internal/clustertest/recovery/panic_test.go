package recovery

import (
	"github.com/lbd-go/lbd"

	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestNoFailClosedWhileAProxyAnswers reproduces lbd failing closed with a healthy proxy: one
// proxy is killed, the other's probe fails once, so both are down in the table while the
// second accepts connections. Connect must still reach it (panic mode), and that success
// brings it up.
func TestNoFailClosedWhileAProxyAnswers(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			const interval = 400 * time.Millisecond
			cl := lbdtest.NewCluster(t, 2)
			logs := &testkit.Logs{}
			// Three good probes spaced half an interval apart keep the second proxy down for
			// at least a whole interval after its failed probe.
			db, c := clusterkit.OpenDB(t, cl, "balance="+mode+"&recoverCheckCount=3", clusterkit.Fast(interval, interval, time.Hour, logs)...)
			dead, alive := cl.Proxy(0), cl.Proxy(1)
			if err := dead.Stop(); err != nil {
				t.Fatal(err)
			}
			alive.FailNext(1, &mysql.MySQLError{Number: 1105, Message: "probe refused once"})
			testkit.WaitFor(t, 5*time.Second, "both proxies down", func() bool {
				for _, ns := range c.Stats().Nodes {
					if ns.State != lbd.StateDown {
						return false
					}
				}
				return true
			})
			conns := alive.TotalConns()
			if _, err := db.Exec("SELECT 1"); err != nil {
				var ce *lbd.ConnectError
				t.Fatalf("exec with both proxies down in the table but %s answering: %v (ConnectError: %v)",
					alive.Addr(), err, errors.As(err, &ce))
			}
			if alive.TotalConns() == conns {
				t.Fatalf("%s accepted no connection for the statement", alive.Addr())
			}
			ns, _ := c.Stats().Node(alive.Addr())
			if ns.State != lbd.StateUp || ns.TransitionsBy[lbd.CausePanic] != 1 {
				t.Fatalf("%s is %v with transitions by cause %v; want up, by one panic-mode success", alive.Addr(), ns.State, ns.TransitionsBy)
			}
			line := clusterkit.WaitForTransition(t, c, logs, alive.Addr(), lbd.StateUp)
			if line.Attrs["cause"] != "panic" {
				t.Fatalf("logged %v, want cause panic", line.Attrs)
			}
			if s, _ := clusterkit.NodeState(c, dead.Addr()); s != lbd.StateDown {
				t.Fatalf("the killed proxy is %v, want down", s)
			}
			for i := range 20 {
				if _, err := db.Exec("SELECT 1"); err != nil {
					t.Fatalf("exec %d after the panic-mode success: %v", i, err)
				}
			}
		})
	}
}
