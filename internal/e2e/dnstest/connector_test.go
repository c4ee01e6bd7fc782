package dnstest

import (
	"database/sql"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

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

// srvFor is the SRV record of a proxy: target localhost, the proxy's port.
func srvFor(t testing.TB, addr string) record {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return record{target: "localhost", port: uint16(p), weight: 10}
}

// nodeAddr is how a proxy appears among the Connector's nodes: the SRV target and port.
func nodeAddr(r record) string { return net.JoinHostPort(r.target, strconv.Itoa(int(r.port))) }

// SRV records added and removed under load move connections onto the new proxy and off the
// removed one, without a failed statement; a name that disappears changes nothing but one log
// line. The Connector is configured through the DSN alone.
func TestConnectorFollowsSRVRecords(t *testing.T) {
	srv := startDNS(t)
	cl := lbdtest.NewCluster(t, 3)
	recs := []record{srvFor(t, cl.Proxy(0).Addr()), srvFor(t, cl.Proxy(1).Addr()), srvFor(t, cl.Proxy(2).Addr())}
	const name = "_mysql._tcp.proxies.test"
	srv.setSRV(name, recs[0], recs[1])

	dsn := cl.User() + ":" + cl.Password() + "@lbdns(" + name + ")/" + cl.Database() +
		"?dnsServer=" + srv.addr + "&dnsRefreshIntervalSeconds=1&dnsTimeoutMillis=500"
	l := &logs{}
	// The probe timeout is capped at the health interval; much below 200ms, a busy machine
	// running the race detector makes probes miss it and takes every node down at once.
	c, err := testkit.Started(lbd.NewConnector(dsn,
		lbd.WithCheckHealthInterval(200*time.Millisecond),
		lbd.WithCheckHealthTimeout(200*time.Millisecond),
		lbd.WithCheckBalanceInterval(200*time.Millisecond),
		lbd.WithWarmup(0), // the added proxy must take connections at once here
		lbd.WithLogger(l.Logger())))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	t.Cleanup(func() { db.Close() })
	if n := len(c.Stats().Nodes); n != 2 {
		t.Fatalf("%d nodes at start, want the 2 SRV targets", n)
	}
	w := startWorkload(t, db)

	srv.setSRV(name, recs[0], recs[1], recs[2])
	waitFor(t, 5*time.Second, "connections on the third proxy", func() bool {
		n, ok := c.Stats().Node(nodeAddr(recs[2]))
		return ok && n.State == lbd.StateUp && n.Open > 0 && cl.Proxy(2).Statements() > 0
	})

	srv.setSRV(name, recs[1], recs[2])
	waitFor(t, 5*time.Second, "the first proxy drained and gone", func() bool {
		_, listed := c.Stats().Node(nodeAddr(recs[0]))
		return !listed && cl.Proxy(0).OpenConns() == 0
	})

	srv.remove(name)
	waitFor(t, 5*time.Second, "the failure line", func() bool { return l.Count("DNS lookup failed") > 0 })
	// Two more lookups of the removed name (one query each): the second starts only once the
	// round of the first has ended, with whatever it logged.
	rounds(t, srv, 2)
	if n := len(c.Stats().Nodes); n != 2 || l.Count("DNS lookup failed") != 1 {
		t.Fatalf("%d nodes while the name is gone, want 2; log:\n%s", n, l.All())
	}
	w.Check(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
