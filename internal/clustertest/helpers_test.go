package clustertest

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// quiet keeps the background loops out of a test's way: no probe or rebalance round runs
// within an hour, so the proxies' own connection counters show application connections only.
func quiet() []lbd.Option {
	return []lbd.Option{
		lbd.WithCheckHealthInterval(time.Hour),
		lbd.WithCheckBalanceInterval(time.Hour),
		lbd.WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openDB opens a *sql.DB through a new Connector over the cluster; both close at test end.
func openDB(t testing.TB, cl *lbdtest.Cluster, params string, opts ...lbd.Option) (*sql.DB, *lbd.Connector) {
	t.Helper()
	return openDSN(t, cl.DSN(params), opts...)
}

// openDSN opens a *sql.DB through a new Connector on dsn, logging nowhere; both close at test
// end.
func openDSN(t testing.TB, dsn string, opts ...lbd.Option) (*sql.DB, *lbd.Connector) {
	t.Helper()
	opts = append([]lbd.Option{lbd.WithLogger(discardLogger())}, opts...)
	c, err := lbd.NewConnector(dsn, opts...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	mustBeReady(t, c)
	return db, c
}

// mustBeReady waits for the Connector's first node list (its source starts in the background).
var mustBeReady = testkit.Ready

var waitFor = testkit.WaitFor

// openCounts returns Stats' open count per proxy, in the cluster's order.
func openCounts(c *lbd.Connector, cl *lbdtest.Cluster) []int {
	st := c.Stats()
	out := make([]int, 0, len(cl.Addrs()))
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out = append(out, ns.Open)
	}
	return out
}

// proxyCounts returns each proxy's own count of open client connections.
func proxyCounts(cl *lbdtest.Cluster) []int {
	var out []int
	for _, p := range cl.Proxies() {
		out = append(out, p.OpenConns())
	}
	return out
}

func spread(counts []int) int {
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return hi - lo
}

// holdConns checks out n connections at once and returns them; the caller closes them.
func holdConns(t testing.TB, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		if err := c.PingContext(context.Background()); err != nil {
			t.Fatalf("ping conn %d: %v", i, err)
		}
		conns[i] = c
	}
	return conns
}

// logRecorder keeps what lbd logs, for tests that check it.
type logRecorder = testkit.Logs

// nodeState returns addr's state in c's Stats, and false when addr is not there.
func nodeState(c *lbd.Connector, addr string) (lbd.NodeState, bool) {
	ns, ok := c.Stats().Node(addr)
	return ns.State, ok
}

// proxiesThatSawText counts the proxies whose recent statements contain text.
func proxiesThatSawText(cl *lbdtest.Cluster, text string) int {
	n := 0
	for _, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if strings.Contains(q, text) {
				n++
				break
			}
		}
	}
	return n
}

// dropOnBackend drops tbl at the end of the test straight on the backend, bounded in time: the
// MariaDB database is shared, and by then the test may have closed its DB or stopped every
// proxy.
func dropOnBackend(t *testing.T, cl *lbdtest.Cluster, tbl string) {
	t.Cleanup(func() {
		direct, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", cl.User(), cl.Password(), cl.BackendAddr(), cl.Database()))
		if err != nil {
			t.Errorf("dropping %s: %v", tbl, err)
			return
		}
		defer direct.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := direct.ExecContext(ctx, "DROP TABLE IF EXISTS "+tbl); err != nil {
			t.Errorf("dropping %s: %v", tbl, err)
		}
	})
}

// waitForTransition waits until addr is in state to and its change to it is logged, and returns
// the first logged change of addr to that state. The table shows the new state before the
// Connector logs the change (the log runs outside the table's lock), so a test that reads the
// log must wait for the log line itself.
func waitForTransition(t testing.TB, c *lbd.Connector, logs *logRecorder, addr string, to lbd.NodeState) testkit.Line {
	t.Helper()
	var lines []testkit.Line
	waitFor(t, 5*time.Second, fmt.Sprintf("%s to go %v", addr, to), func() bool {
		s, _ := nodeState(c, addr)
		lines = logs.Match("lbd: node state changed", "node", addr, "to", to.String())
		return s == to && len(lines) > 0
	})
	return lines[0]
}

// waitForRoles waits until the role checks have given every proxy of cl the role want says
// for its index.
func waitForRoles(t testing.TB, c *lbd.Connector, cl *lbdtest.Cluster, want func(i int) nodes.Role) {
	t.Helper()
	waitFor(t, 5*time.Second, "the role checks", func() bool {
		for i, p := range cl.Proxies() {
			if ns, _ := c.Stats().Node(p.Addr()); ns.Role != want(i) {
				return false
			}
		}
		return true
	})
}
