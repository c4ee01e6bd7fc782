package clusterkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// OpenCounts returns Stats' open count per proxy, in the cluster's order.
func OpenCounts(c *lbd.Connector, cl *lbdtest.Cluster) []int {
	st := c.Stats()
	out := make([]int, 0, len(cl.Addrs()))
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out = append(out, ns.Open)
	}
	return out
}

// ProxyCounts returns each proxy's own count of open client connections.
func ProxyCounts(cl *lbdtest.Cluster) []int {
	var out []int
	for _, p := range cl.Proxies() {
		out = append(out, p.OpenConns())
	}
	return out
}

// Spread returns the largest count less the smallest.
func Spread(counts []int) int {
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return hi - lo
}

// NodeState returns addr's state in c's Stats, and false when addr is not there.
func NodeState(c *lbd.Connector, addr string) (lbd.NodeState, bool) {
	ns, ok := c.Stats().Node(addr)
	return ns.State, ok
}

// WaitForTransition waits until addr is in state to and its change to it is logged, and
// returns the first logged change of addr to that state. The table shows the new state before
// the Connector logs the change (the log runs outside the table's lock), so a test that reads
// the log must wait for the log line itself.
func WaitForTransition(t testing.TB, c *lbd.Connector, logs *testkit.Logs, addr string, to lbd.NodeState) testkit.Line {
	t.Helper()
	var lines []testkit.Line
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%s to go %v", addr, to), func() bool {
		s, _ := NodeState(c, addr)
		lines = logs.Match("lbd: node state changed", "node", addr, "to", to.String())
		return s == to && len(lines) > 0
	})
	return lines[0]
}
