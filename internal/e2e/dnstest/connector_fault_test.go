package dnstest

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// dialTimes runs n dials through c, each a Connect (connection mode: one new connection to a
// proxy) closed at once, pause apart, and returns how long each took.
func dialTimes(t testing.TB, c *lbd.Connector, n int, pause time.Duration) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		conn, err := c.Connect(ctx)
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conn.Close()
		out = append(out, took)
		time.Sleep(pause)
	}
	return out
}

// median and maximum of ds.
func spread(ds []time.Duration) (med, most time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// The DNS server stalls (never answers), fails (SERVFAIL) or goes stale (keeps answering a
// list one of whose proxies has stopped) under load, through a Connector configured by its DSN
// alone, at the default lookup timeout (2 s) and the shortest refresh interval (1 s). The
// Connector keeps serving its list for the whole fault without a failed statement; dials
// through it take their usual time, well under the lookup timeout, since no dial waits on the
// source; Stats.Source says since when the source fails and why, and the log says it once.
// Once the server answers again, a changed answer is applied at the next round.
//
// The cases run in parallel: each waits out its fault on its own server, cluster and
// Connector, with a light paced load, and a dial bound far above the dials' few milliseconds.
func TestConnectorThroughDNSFaults(t *testing.T) {
	const (
		stall         = 7 * time.Second // at least two failed rounds: 2 s timeout + 1 s interval each
		lookupTimeout = 2 * time.Second // dnsTimeoutMillis's default
		dialBound     = lookupTimeout / 4
	)
	for _, c := range []struct {
		name string
		f    fault // nil: stale, the server keeps answering
	}{
		{"silent", silent},
		{"SERVFAIL", rcode(mdns.RcodeServerFailure)},
		{"stale", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := startDNS(t)
			cl := lbdtest.NewCluster(t, 3)
			recs := []record{srvFor(t, cl.Proxy(0).Addr()), srvFor(t, cl.Proxy(1).Addr()), srvFor(t, cl.Proxy(2).Addr())}
			const name = "_mysql._tcp.proxies.test"
			srv.setSRV(name, recs...)
			dsn := cl.User() + ":" + cl.Password() + "@lbdns(" + name + ")/" + cl.Database() +
				"?dnsServer=" + srv.addr + "&dnsRefreshIntervalSeconds=1"
			l := &logs{}
			conn, err := testkit.Started(lbd.NewConnector(dsn,
				lbd.WithCheckHealthInterval(200*time.Millisecond),
				lbd.WithCheckHealthTimeout(200*time.Millisecond),
				lbd.WithLogger(l.Logger())))
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(conn)
			db.SetMaxOpenConns(workers)
			db.SetMaxIdleConns(workers)
			t.Cleanup(func() { db.Close() })
			st := conn.Stats()
			if st.Source == nil || !st.Source.Ready || st.Source.Status.LastGood.IsZero() || st.Source.Status.Failures != 0 {
				t.Fatalf("Stats.Source at start = %+v", st.Source)
			}
			version := st.Source.Status.Version
			w := startWorkload(t, db)

			before := dialTimes(t, conn, 20, 20*time.Millisecond)
			beforeMed, beforeMax := spread(before)

			faultAt := time.Now()
			if c.f != nil {
				srv.setFault(c.f)
			} else if err := cl.Proxy(2).Stop(); err != nil {
				t.Fatal(err)
			}
			var during []time.Duration
			var seenAt, outAt time.Duration // when Stats.Source showed a failure; when the stopped proxy was down
			for time.Since(faultAt) < stall {
				during = append(during, dialTimes(t, conn, 1, 100*time.Millisecond)...)
				st := conn.Stats()
				if seenAt == 0 && st.Source.Status.Failures > 0 {
					seenAt = time.Since(faultAt)
				}
				if n, ok := st.Node(nodeAddr(recs[2])); outAt == 0 && ok && n.State != lbd.StateUp {
					outAt = time.Since(faultAt)
				}
			}
			duringMed, duringMax := spread(during)
			st = conn.Stats()
			src := st.Source.Status
			t.Logf("dials before: median %v, max %v; during %v of fault: %d dials, median %v, max %v",
				beforeMed, beforeMax, stall, len(during), duringMed, duringMax)
			t.Logf("Stats.Source after %v: %+v", stall, *st.Source)

			if len(st.Nodes) != 3 || src.Version != version {
				t.Fatalf("%d nodes, version %q (had %q) after the fault, want the list kept", len(st.Nodes), src.Version, version)
			}
			if duringMax > dialBound {
				t.Errorf("a dial took %v during the fault, want every one under %v (the lookup timeout is %v)", duringMax, dialBound, lookupTimeout)
			}
			if c.f != nil {
				if src.Failures < 2 || src.LastError == "" || src.FailingSince.Before(faultAt) || time.Since(src.LastGood) < stall-lookupTimeout-time.Second ||
					l.Count("DNS lookup failed") != 1 {
					t.Fatalf("after the fault: Stats.Source.Status %+v; log:\n%s", src, l.All())
				}
				t.Logf("Stats.Source showed the failure %v into the fault", seenAt)
			} else {
				// A stale answer is an answer: the source cannot tell it from an unchanged list,
				// and the probes take the stopped proxy out.
				if src.Failures != 0 || src.LastError != "" || time.Since(src.LastGood) > 2*time.Second ||
					!src.LastChange.Before(faultAt) || l.Count("DNS lookup failed") != 0 {
					t.Fatalf("after the stale answers: Stats.Source.Status %+v; log:\n%s", src, l.All())
				}
				if outAt == 0 {
					t.Fatalf("the stopped proxy listed by the stale answers is still up: %+v", st.Nodes)
				}
				t.Logf("stopped proxy out after %v", outAt)
			}

			srv.setFault(nil)
			srv.setSRV(name, recs[0], recs[1])
			back := time.Now()
			waitFor(t, 5*time.Second, "the changed answer applied", func() bool {
				_, listed := conn.Stats().Node(nodeAddr(recs[2]))
				return !listed
			})
			t.Logf("changed answer applied %v after the server answered again", time.Since(back).Round(time.Millisecond))
			src = conn.Stats().Source.Status
			if src.Failures != 0 || src.LastError != "" || src.Version == version || l.Count("DNS answers again") != min(l.Count("DNS lookup failed"), 1) {
				t.Fatalf("after the server answered again: Stats.Source.Status %+v; log:\n%s", src, l.All())
			}
			w.Check(t)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
