package statementmode

import (
	"github.com/lbd-go/lbd"

	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestStatementModeSpreadsStatementsEvenly warms a pool of 30 connections over 3 proxies and
// counts where SELECT 1 statements land. In connection mode database/sql hands the most
// recently returned idle connection out first (LIFO), so one worker keeps using one connection
// on one proxy although the connections are spread 10/10/10; statement mode binds each checkout
// to the proxy with the fewest connections in use.
//
// One worker takes turns exactly. With several workers the pick follows the statements in
// flight, so it routes around whichever statement the scheduler stalls: on loopback, where a
// statement takes microseconds, such stalls moved 600 statements' shares by up to 21% (CV) on
// a 2-CPU machine under -race. A 3 ms delay per statement at every proxy, a network round trip
// of sorts, makes the statements rather than the scheduler decide; the CV then stayed under 3%,
// also with the CPUs busy.
func TestStatementModeSpreadsStatementsEvenly(t *testing.T) {
	const pool = 30
	share := func(t *testing.T, balance string, workers, total int, latency time.Duration) float64 {
		cl := lbdtest.NewCluster(t, 3)
		for _, p := range cl.Proxies() {
			p.SetLatency(latency)
		}
		// The counting rule alone (least-connections): the load policy's own spread over equal
		// proxies is TestLeastLoadSharesEquallyFastProxies'; here, with a real server
		// behind the proxies (LBD_TEST_MYSQL_DSN), its latency noise would be measured too.
		db, c := clusterkit.OpenDB(t, cl, "balance="+balance+"&balancePolicy=least-connections", clusterkit.Quiet()...)
		db.SetMaxOpenConns(pool)
		db.SetMaxIdleConns(pool)
		for _, cn := range testkit.HoldConns(t, db, pool) { // 30 connections at once, then all idle
			cn.Close()
		}
		if got := db.Stats().OpenConnections; got != pool {
			t.Fatalf("pool holds %d connections after warming, want %d", got, pool)
		}
		clusterkit.ResetProxyCounters(cl)
		clusterkit.RunSelect1(t, db, workers, total)
		counts := clusterkit.StatementCounts(cl)
		var sum int64
		for _, n := range counts {
			sum += n
		}
		if sum != int64(total) {
			t.Fatalf("proxies counted %d statements (%v), want %d", sum, counts, total)
		}
		cv := clusterkit.ShareCV(counts)
		t.Logf("balance=%s, %d worker(s), %v per statement: statements per proxy %v, CV %.1f%%, physical open %v",
			balance, workers, latency, counts, cv*100, clusterkit.OpenCounts(c, cl))
		return cv
	}
	for _, tc := range []struct {
		workers, total int
		latency        time.Duration
	}{{1, 600, 0}, {4, 1200, 3 * time.Millisecond}} {
		t.Run(fmt.Sprintf("statement/workers=%d", tc.workers), func(t *testing.T) {
			if cv := share(t, "statement", tc.workers, tc.total, tc.latency); cv > clusterkit.MaxShareCV {
				t.Errorf("CV of the per-proxy statement counts is %.1f%%, want at most %.0f%%", cv*100, clusterkit.MaxShareCV*100)
			}
		})
	}
	// The LIFO pitfall, and proof that the check above can fail.
	t.Run("connection/workers=1", func(t *testing.T) {
		if cv := share(t, "connection", 1, 600, 0); cv <= clusterkit.MaxShareCV {
			t.Errorf("connection mode with one worker spread statements evenly (CV %.1f%%); "+
				"this test no longer tells the modes apart", cv*100)
		}
	})
}

// countText returns how many of p's recorded statements are exactly text.
func countText(p *lbdtest.Proxy, text string) int {
	n := 0
	for _, q := range p.Queries() {
		if q == text {
			n++
		}
	}
	return n
}

// TestStatementModeReachesEveryProxyAtLowConcurrency runs one statement at a time, where every
// proxy ties at no connection in use, and with fewer idle physical connections than proxies.
// Every proxy must still get its turn, also one that comes back after an outage with no
// physical connection left (connection mode's rebalancing does not apply here).
//
// Only the counting rule is judged, so nothing else may take a proxy out of the turns: the
// policy is least-connections (at one statement at a time the load policy gives a node it
// measured slower no statement at all while the others tie at zero in use), and a probe may
// take seconds on a busy host before it counts as failed (the stopped proxy below refuses
// the probe's dial at once).
func TestStatementModeReachesEveryProxyAtLowConcurrency(t *testing.T) {
	const total = 60
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "balance=statement&balancePolicy=least-connections&recoverCheckCount=1&warmupSeconds=0",
		clusterkit.Fast(200*time.Millisecond, 5*time.Second, time.Hour, logs)...)
	share := func(when string) {
		t.Helper()
		clusterkit.ResetProxyCounters(cl) // probes ("/* ping */ SELECT 1") are not counted below
		clusterkit.RunSelect1(t, db, 1, total)
		var counts []int
		for _, p := range cl.Proxies() {
			counts = append(counts, countText(p, "SELECT 1"))
		}
		t.Logf("%s: SELECT 1 per proxy %v, physical open %v", when, counts, clusterkit.OpenCounts(c, cl))
		for i, n := range counts {
			if n < total/len(counts)/2 {
				ns, _ := c.Stats().Node(cl.Proxy(i).Addr())
				t.Errorf("%s: proxy %d got %d of %d statements (%v), want at least half its share; "+
					"its node: state %v, %d transition(s), %d probe failure(s), in use %d, effective weight %.2f",
					when, i, n, total, counts, ns.State, ns.Transitions, ns.ProbeFailures, ns.InUse, ns.EffectiveWeight)
			}
		}
	}
	for _, pool := range []struct{ open, idle int }{{1, 1}, {2, 0}, {8, 2}} {
		db.SetMaxOpenConns(pool.open)
		db.SetMaxIdleConns(pool.idle)
		share(fmt.Sprintf("maxOpen=%d maxIdle=%d", pool.open, pool.idle))
	}

	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	p := cl.Proxy(1)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the stopped proxy to go down", func() bool {
		s, _ := clusterkit.NodeState(c, p.Addr())
		return s == lbd.StateDown
	})
	testkit.WaitFor(t, 5*time.Second, "its physical connections to close", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.Open == 0
	})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the proxy to come back up", func() bool {
		s, _ := clusterkit.NodeState(c, p.Addr())
		return s == lbd.StateUp
	})
	share("after proxy 1 came back")
}

// TestStatementModePreparedStatementFollowsTheBalance prepares once and executes many times:
// the executions go to every proxy, and each physical connection prepares the statement once,
// lazily, not once per execution.
func TestStatementModePreparedStatementFollowsTheBalance(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	tbl := fmt.Sprintf("lbd_prepared_%d", rand.Uint32())
	if _, err := db.Exec("CREATE TABLE " + tbl + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + tbl) })
	if err := insertValues(context.Background(), db, tbl, 10); err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf("lbd-prepared-%d", rand.Uint32())
	stmt, err := db.Prepare("SELECT /* " + m + " */ v * 2 FROM " + tbl + " WHERE v = ?")
	if err != nil {
		t.Fatal(err)
	}
	const runs = 60
	before := clusterkit.StatementCounts(cl)
	for i := range runs {
		v := i%10 + 1
		var got int
		if err := stmt.QueryRow(v).Scan(&got); err != nil {
			t.Fatalf("execution %d: %v", i, err)
		}
		if got != 2*v {
			t.Fatalf("execution %d returned %d, want %d", i, got, 2*v)
		}
	}
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	for i, n := range clusterkit.StatementCounts(cl) {
		if got := n - before[i]; got < runs/3/2 {
			t.Errorf("proxy %d saw %d of the %d executions, want at least half its share", i, got, runs)
		}
	}
	var prepares []int
	total := 0
	for _, p := range cl.Proxies() {
		n := 0
		for _, q := range p.Queries() {
			if strings.Contains(q, m) {
				n++
			}
		}
		prepares = append(prepares, n)
		total += n
	}
	var dials uint64
	for _, ns := range c.Stats().Nodes {
		dials += ns.Dials
	}
	t.Logf("prepares per proxy %v for %d executions; %d physical connections dialed", prepares, runs, dials)
	for i, n := range prepares {
		if n == 0 {
			t.Errorf("proxy %d never ran the prepared statement (prepares per proxy %v)", i, prepares)
		}
	}
	if uint64(total) > dials {
		t.Errorf("%d prepares over %d physical connections: prepared again on a connection that had it", total, dials)
	}
}
