package routing

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// zoneDSN is cl's DSN with proxies 0 and 1 in zone az1 and the others in az2.
func zoneDSN(cl *lbdtest.Cluster, params string) string {
	entries := make([]string, 0, len(cl.Addrs()))
	for i, a := range cl.Addrs() {
		z := "az2"
		if i < 2 {
			z = "az1"
		}
		entries = append(entries, a+"~"+z)
	}
	return strings.Replace(cl.DSN(params), "lb("+strings.Join(cl.Addrs(), ",")+")", "lb("+strings.Join(entries, ",")+")", 1)
}

// busyLoop runs SELECT 1 on workers goroutines until ctx ends and counts the failures (a
// proxy stopped or hung under a statement fails it; each statement has a second); it returns
// a wait for the workers.
func busyLoop(ctx context.Context, db *sql.DB, workers int, failed *atomic.Int64) (wait func()) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				var one int
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				err := db.QueryRowContext(sctx, "SELECT 1").Scan(&one)
				cancel()
				if err != nil && ctx.Err() == nil {
					failed.Add(1)
					time.Sleep(time.Millisecond) // a failing proxy must not spin the worker
				}
			}
		})
	}
	return wg.Wait
}

// zoneShare counts the statements each zone's proxies take until n more have run, and returns
// az1's share of them.
func zoneShare(t *testing.T, cl *lbdtest.Cluster, n int64) (float64, []int64) {
	t.Helper()
	before := clusterkit.StatementCounts(cl)
	var d []int64
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("%d statements", n), func() bool {
		now := clusterkit.StatementCounts(cl)
		var sum int64
		for i := range now {
			sum += now[i] - before[i]
		}
		if sum < n {
			return false
		}
		d = clusterkit.Deltas(cl, before)
		return true
	})
	var local, all int64
	for i, c := range d {
		all += c
		if i < 2 {
			local += c
		}
	}
	return float64(local) / float64(all), d
}

// TestLocalZoneKeepsTrafficAndSpills runs 8 workers over four proxies, two in the client's
// zone (localZone=az1) and two in az2. With the local zone up, at least 90% of the statements
// must stay in it. Both local proxies are then stopped: the picks must spill to az2 within
// one probe interval (plus the probe's timeout) of the stop, as the probes that find them down
// report it, and statements must run in az2; once the proxies are back and recovered, the
// traffic must return to az1 (connection mode: as the rebalancer moves the pooled connections
// back).
func TestLocalZoneKeepsTrafficAndSpills(t *testing.T) {
	const (
		workers  = 8
		interval = 300 * time.Millisecond
		timeout  = 200 * time.Millisecond
	)
	for _, balance := range []string{"statement", "connection"} {
		t.Run(balance, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 4)
			for _, p := range cl.Proxies() {
				p.SetLatency(2 * time.Millisecond)
			}
			c, err := lbd.NewConnector(zoneDSN(cl, "balance="+balance+"&localZone=az1"), lbd.WithLogger(clusterkit.DiscardLogger()),
				lbd.WithCheckHealthInterval(interval), lbd.WithCheckHealthTimeout(timeout),
				lbd.WithCheckBalanceInterval(200*time.Millisecond),
				lbd.WithJitter(func(time.Duration) time.Duration { return 0 }))
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			testkit.Ready(t, c)
			db.SetMaxOpenConns(workers)
			db.SetMaxIdleConns(workers)
			var failed atomic.Int64
			ctx, cancel := context.WithCancel(context.Background())
			wait := busyLoop(ctx, db, workers, &failed)
			defer wait()
			defer cancel()

			share, d := zoneShare(t, cl, 2000)
			t.Logf("az1 up: statements per proxy %v, az1 share %.1f%%", d, share*100)
			if share < 0.9 {
				t.Errorf("with the local zone up it took %.1f%% of the statements, want at least 90%%", share*100)
			}
			if st := c.Stats(); !st.ZoneLocal || st.LocalZone != "az1" || st.ZoneLive != 2 || st.ZoneActive != 2 {
				t.Errorf("Stats: local zone %q, live %d, active %d, local %v; want az1, 2, 2, true", st.LocalZone, st.ZoneLive, st.ZoneActive, st.ZoneLocal)
			}

			stopped := time.Now()
			cl.Proxy(0).Stop()
			cl.Proxy(1).Stop()
			testkit.WaitFor(t, 10*time.Second, "the picks to spill out of az1", func() bool { return !c.Stats().ZoneLocal })
			took := time.Since(stopped)
			t.Logf("az1 stopped: spilled after %v (probe interval %v, timeout %v), %d statements failed meanwhile", took, interval, timeout, failed.Load())
			if took > interval+timeout {
				t.Errorf("the picks spilled %v after the local zone stopped, want within one probe interval and its timeout (%v)", took, interval+timeout)
			}
			share, d = zoneShare(t, cl, 1000)
			t.Logf("az1 down: statements per proxy %v", d)
			if d[2] == 0 || d[3] == 0 {
				t.Errorf("with az1 down the az2 proxies ran %v statements, want both to take some", d[2:])
			}

			cl.Proxy(0).Start()
			cl.Proxy(1).Start()
			back := time.Now()
			testkit.WaitFor(t, 15*time.Second, "the picks to return to az1", func() bool { return c.Stats().ZoneLocal })
			t.Logf("az1 restarted: local again after %v", time.Since(back))
			testkit.WaitFor(t, 15*time.Second, "90% of the statements back in az1", func() bool {
				share, d = zoneShare(t, cl, 500)
				return share >= 0.9
			})
			t.Logf("az1 back: statements per proxy %v, az1 share %.1f%%, after %v", d, share*100, time.Since(back))
			st := c.Stats()
			for _, n := range st.Nodes {
				if want := map[bool]string{true: "az1", false: "az2"}[n.Addr == cl.Addrs()[0] || n.Addr == cl.Addrs()[1]]; n.Zone != want {
					t.Errorf("%s: Stats zone %q, want %q", n.Addr, n.Zone, want)
				}
			}
		})
	}
}

// TestLocalZoneSpillsWhenItHangs hangs both proxies of the local zone instead of stopping
// them: no dial fails, so it is the probes (every 300 ms, 200 ms timeout) and the stall
// watch that must find them down, and the picks must spill within one probe interval and its
// timeout; once resumed, the traffic must come back.
func TestLocalZoneSpillsWhenItHangs(t *testing.T) {
	const (
		workers  = 8
		interval = 300 * time.Millisecond
		timeout  = 200 * time.Millisecond
	)
	cl := lbdtest.NewCluster(t, 4)
	for _, p := range cl.Proxies() {
		p.SetLatency(2 * time.Millisecond)
	}
	c, err := lbd.NewConnector(zoneDSN(cl, "balance=statement&localZone=az1"), lbd.WithLogger(clusterkit.DiscardLogger()),
		lbd.WithCheckHealthInterval(interval), lbd.WithCheckHealthTimeout(timeout),
		lbd.WithJitter(func(time.Duration) time.Duration { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	testkit.Ready(t, c)
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	var failed atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	wait := busyLoop(ctx, db, workers, &failed)
	defer wait()
	defer cancel()
	if share, d := zoneShare(t, cl, 1000); share < 0.9 {
		t.Fatalf("with the local zone up it took %.1f%% of the statements (%v), want at least 90%%", share*100, d)
	}

	hung := time.Now()
	cl.Proxy(0).Hang()
	cl.Proxy(1).Hang()
	testkit.WaitFor(t, 10*time.Second, "the picks to spill out of the hung az1", func() bool { return !c.Stats().ZoneLocal })
	took := time.Since(hung)
	t.Logf("az1 hung: spilled after %v (probe interval %v, timeout %v)", took, interval, timeout)
	if took > interval+timeout {
		t.Errorf("the picks spilled %v after the local zone hung, want within one probe interval and its timeout (%v)", took, interval+timeout)
	}
	if _, d := zoneShare(t, cl, 500); d[2] == 0 || d[3] == 0 {
		t.Errorf("with az1 hung the az2 proxies ran %v statements, want both to take some", d[2:])
	}
	cl.Proxy(0).Resume()
	cl.Proxy(1).Resume()
	testkit.WaitFor(t, 15*time.Second, "90% of the statements back in az1", func() bool {
		share, _ := zoneShare(t, cl, 500)
		return share >= 0.9
	})
	t.Logf("az1 resumed: back after %v; %d statements failed in all", time.Since(hung)-took, failed.Load())
}
