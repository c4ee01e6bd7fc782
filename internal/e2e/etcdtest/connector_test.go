package etcdtest

import (
	"database/sql"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes/etcd"
)

// The Connector's timings in these tests. A probe's timeout is capped at the health interval,
// and one failed probe takes a node down: much below 200ms, a busy machine running the race
// detector makes probes miss their deadline and takes every node down at once.
const (
	healthInterval  = 200 * time.Millisecond
	balanceInterval = 200 * time.Millisecond
)

// fastOptions are the Connector's timings for these tests, logging into l.
func fastOptions(l *slog.Logger) []lbd.Option {
	return []lbd.Option{
		lbd.WithCheckHealthInterval(healthInterval),
		lbd.WithCheckHealthTimeout(healthInterval),
		lbd.WithCheckBalanceInterval(balanceInterval),
		lbd.WithWarmup(0), // added proxies must take connections at once here
		lbd.WithLogger(l),
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openDB opens a pool over c sized for the workload; it closes (with c) at test end.
func openDB(t testing.TB, c *lbd.Connector) *sql.DB {
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	t.Cleanup(func() { db.Close() })
	return db
}

// The workload: workers goroutines, each running SELECT 1 and pausing thinkTime, so that the
// load leaves the Connector's probes the time they need.
const (
	workers   = 10
	thinkTime = 10 * time.Millisecond
)

// startWorkload runs SELECT 1 from several goroutines, paced, until the test ends.
func startWorkload(t testing.TB, db *sql.DB) *testkit.Workload {
	return testkit.StartWorkload(t, db, testkit.WorkloadConfig{Workers: workers, Pace: thinkTime})
}

func nodeOpen(c *lbd.Connector, addr string) (int, bool) {
	n, ok := c.Stats().Node(addr)
	return n.Open, ok
}

// Writing the key under load moves connections onto a new proxy and drains a removed one,
// without one failed statement. The Connector is configured through the DSN alone.
func TestScaleOutAndInUnderLoad(t *testing.T) {
	testkit.SkipUnlessLong(t)
	srv := startEtcd(t)
	cl := lbdtest.NewCluster(t, 3)
	addrs := cl.Addrs()
	srv.put(testKey, doc("im_user", addrs[0], addrs[1]))

	dsn := cl.User() + ":" + cl.Password() + "@lbetcd(" + srv.Endpoint() + ")/" + cl.Database() +
		"?etcdKey=" + url.QueryEscape(testKey) + "&etcdDialTimeoutMillis=1000"
	l := &logs{}
	c, err := testkit.Started(lbd.NewConnector(dsn, fastOptions(l.Logger())...))
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, c)
	if n := len(c.Stats().Nodes); n != 2 {
		t.Fatalf("%d nodes at start, want the key's 2", n)
	}
	w := startWorkload(t, db)
	waitFor(t, 5*time.Second, "load on both listed proxies", func() bool {
		a, _ := nodeOpen(c, addrs[0])
		b, _ := nodeOpen(c, addrs[1])
		return a > 0 && b > 0
	})

	written := time.Now()
	srv.put(testKey, doc("im_user", addrs[0], addrs[1], addrs[2]))
	waitFor(t, 5*time.Second, "the third proxy up", func() bool {
		n, ok := c.Stats().Node(addrs[2])
		return ok && n.State == lbd.StateUp
	})
	up := time.Since(written)
	upAt := time.Now()
	waitFor(t, 5*time.Second, "connections on the third proxy", func() bool {
		n, _ := nodeOpen(c, addrs[2])
		return n > 0
	})
	// The pool keeps every connection idle (no lifetime, idle limit = open limit), so only the
	// rebalancer moves one onto the new proxy, and it must do so within two of its rounds after
	// the proxy came up. Rounds are counted from the rebalancer's log lines, not from the clock:
	// a round logs one line per node it retired from, all at once, and rounds are a balance
	// interval apart.
	moved := time.Since(written)
	if rounds := rebalanceRounds(l, upAt); rounds > 2 {
		t.Errorf("connections reached the third proxy after %d rebalancing rounds, want within two of it being up", rounds)
	}
	t.Logf("third proxy up %v after the write, holding connections after %v (balance interval %v)", up.Round(time.Millisecond), moved.Round(time.Millisecond), balanceInterval)

	srv.put(testKey, doc("im_user", addrs[1], addrs[2]))
	waitFor(t, 5*time.Second, "the first proxy drained and gone", func() bool {
		_, listed := c.Stats().Node(addrs[0])
		return !listed && cl.Proxy(0).OpenConns() == 0
	})
	// With no connection left to it, the removed proxy can take no statement; the next ones
	// the workload runs must all have gone to the others.
	statements := cl.Proxy(0).Statements()
	w.Progress(t, 5*time.Second, 100)
	if cl.Proxy(0).Statements() != statements {
		t.Error("the removed proxy still receives statements")
	}
	w.Check(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := l.Count("lbd: etcd"); n != 0 {
		t.Errorf("the source logged trouble:\n%s", l.All())
	}
}

// Stopping etcd under load changes nothing for the application and is logged once; once etcd
// is back, writes to the key are followed again.
func TestEtcdOutageUnderLoad(t *testing.T) {
	testkit.SkipUnlessLong(t)
	srv := startEtcd(t)
	cl := lbdtest.NewCluster(t, 3)
	addrs := cl.Addrs()
	srv.put(testKey, doc("im_user", addrs[0], addrs[1]))

	l := &logs{}
	src, err := etcd.New(etcd.Config{
		Endpoints:       []string{srv.Endpoint()},
		Key:             testKey,
		DialTimeout:     300 * time.Millisecond,
		RefreshInterval: 100 * time.Millisecond,
		Logger:          l.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	dsn := cl.User() + ":" + cl.Password() + "@lb()/" + cl.Database()
	c, err := testkit.Started(lbd.NewConnector(dsn, append(fastOptions(discard()), lbd.WithSource(src))...))
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, c)
	w := startWorkload(t, db)

	stopping := time.Now()
	srv.stop()
	t.Logf("etcd stopped in %v", time.Since(stopping))
	waitFor(t, 5*time.Second, "the unreachable line", func() bool { return l.Count("etcd unreachable") > 0 })
	// The application keeps going while the source fails to read: 100 more statements succeed
	// (a count with a deadline, not a rate over a fixed second).
	w.Progress(t, 10*time.Second, 100)
	if n := l.Count("etcd unreachable"); n != 1 {
		t.Fatalf("%d unreachable lines, want 1:\n%s", n, l.All())
	}
	if n := len(c.Stats().Nodes); n != 2 {
		t.Fatalf("%d nodes during the outage, want 2", n)
	}

	restarted := time.Now()
	srv.start()
	waitFor(t, 10*time.Second, "the reachable-again line", func() bool { return l.Count("etcd reachable again") > 0 })
	t.Logf("source reached etcd %v after its restart", time.Since(restarted).Round(time.Millisecond))
	srv.put(testKey, doc("im_user", addrs[0], addrs[1], addrs[2]))
	waitFor(t, 10*time.Second, "connections on the third proxy", func() bool {
		n, _ := nodeOpen(c, addrs[2])
		return n > 0
	})
	t.Logf("third proxy in use %v after the restart", time.Since(restarted).Round(time.Millisecond))
	w.Check(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n, m := l.Count("etcd unreachable"), l.Count("reachable again"); n != 1 || m != 1 {
		t.Fatalf("%d unreachable and %d reachable-again lines, want 1 each:\n%s", n, m, l.All())
	}
}

// rebalanceRounds counts the rebalancing rounds that retired connections since since: the
// rebalancer's log lines, lines less than half a balance interval apart counting as one round.
func rebalanceRounds(l *logs, since time.Time) int {
	rounds := 0
	var last time.Time
	for _, line := range l.Match("lbd: rebalanced") {
		if line.At.Before(since) {
			continue
		}
		if last.IsZero() || line.At.Sub(last) >= balanceInterval/2 {
			rounds++
		}
		last = line.At
	}
	return rounds
}
