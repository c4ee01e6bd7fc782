package e2e

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestScaleOutAndIn is lb-driver's scenario 5: proxies are added and removed by editing the
// schema's document in etcd while the application runs. The new proxy must take connections
// and the removed one must drain, without a single failed statement.
func TestScaleOutAndIn(t *testing.T) {
	r := newRig(t, 3, 1)
	p := r.p
	a := r.mustOpenApp(t, r.servers(), t.TempDir())
	a.expectNodes(t, "start", p[0], p[1])
	w := startWorkload(t, a.db)
	testkit.WaitFor(t, settleWithin, "p0 and p1 to hold connections", func() bool { return a.serving(p[0]) && a.serving(p[1]) })
	w.Progress(t, settleWithin, 100)

	// Scale out: p2 joins and takes a share of the connections.
	r.setProxies(p[0], p[1], p[2])
	testkit.WaitFor(t, settleWithin, "p2 to be up and hold connections", func() bool { return a.serving(p[2]) })
	testkit.WaitFor(t, settleWithin, "connections spread over p0, p1 and p2 (counts within one)", func() bool {
		st := a.conn.Stats()
		lo, hi := -1, 0
		for _, n := range st.Nodes {
			if lo < 0 || n.Open < lo {
				lo = n.Open
			}
			hi = max(hi, n.Open)
		}
		return len(st.Nodes) == 3 && lo > 0 && hi-lo <= 1
	})
	w.Progress(t, settleWithin, 100)
	w.ExpectNoErrors(t, "scale-out")

	// Scale in: p1 drains away, connections included (the Connector's probe connection too).
	r.setProxies(p[0], p[2])
	testkit.WaitFor(t, settleWithin, "p1 to leave Stats and hold no connection on the proxy", func() bool {
		return a.gone(p[1]) && r.cluster.Proxy(1).OpenConns() == 0
	})
	dialed := r.cluster.Proxy(1).TotalConns()
	w.Progress(t, settleWithin, 200)
	if !a.serving(p[0]) || !a.serving(p[2]) {
		t.Errorf("after scale-in: %+v, want p0 and p2 up with connections", a.conn.Stats().Nodes)
	}
	if n := r.cluster.Proxy(1).TotalConns(); n != dialed || r.cluster.Proxy(1).OpenConns() != 0 {
		t.Errorf("the removed proxy p1 was connected to again: %d connections before, %d after, %d open", dialed, n, r.cluster.Proxy(1).OpenConns())
	}
	w.Stop()
	w.ExpectNoErrors(t, "scale-in")
	a.expectNodes(t, "end", p[0], p[2])
}
