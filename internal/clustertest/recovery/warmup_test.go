package recovery

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestAddedProxyWarmsUp holds 60 connections on two proxies and turns them over (close the
// oldest, connect a new one) while a third proxy joins. Each new connection is filed by the
// newcomer's warm-up progress at the moment it was made, as Stats reports it; the verdict is
// on the newcomer's share of new connections per quarter of the window, not on when things
// happened. Without slow start it takes every new connection until it holds a third.
func TestAddedProxyWarmsUp(t *testing.T) {
	const pool = 60
	cl := lbdtest.NewCluster(t, 2)
	c, err := lbd.NewConnector(cl.DSN("warmupSeconds=4"),
		lbd.WithLogger(clusterkit.DiscardLogger()), lbd.WithCheckBalanceInterval(time.Hour), lbd.WithCheckHealthInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ring := make([]driver.Conn, 0, pool)
	defer func() {
		for _, cn := range ring {
			cn.Close()
		}
	}()
	connect := func() {
		t.Helper()
		cn, err := c.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ring = append(ring, cn)
	}
	for range pool {
		connect()
	}
	p, err := cl.AddProxy()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetNodes(append(cl.Addrs()[:2], p.Addr())); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the new proxy to come up", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.State == lbd.StateUp
	})

	// buckets: [0, .25), [.25, .5), [.5, .75), [.75, 1), warm.
	var made, toNew [5]int
	deadline := time.Now().Add(2 * time.Minute)
	for made[4] < 300 {
		if time.Now().After(deadline) {
			t.Fatalf("gave up: new connections per quarter of the warm-up %v", made)
		}
		ns, _ := c.Stats().Node(p.Addr())
		b := min(int(ns.Warmup*4), 4)
		before := p.TotalConns()
		ring[0].Close()
		ring = ring[1:]
		connect()
		made[b]++
		if p.TotalConns() > before {
			toNew[b]++
		}
	}
	var shares [5]float64
	for i := range shares {
		if made[i] == 0 {
			t.Fatalf("no connection was made in quarter %d of the warm-up (made %v); the ramp skipped a step", i, made)
		}
		shares[i] = float64(toNew[i]) / float64(made[i])
	}
	t.Logf("newcomer's share of new connections by quarter of its warm-up, then warm: %.2f (of %v)", shares, made)
	// Fair share is a third. In the first quarter its weight is 10-25% of a warm proxy's, which
	// holds it near 5-11% of the connections.
	if shares[0] > 0.2 {
		t.Errorf("first quarter: the newcomer took %.0f%% of new connections, want the floor's slice, not a wave", 100*shares[0])
	}
	if toNew[0] == 0 {
		t.Errorf("first quarter: the newcomer took no connection; the floor should give it some")
	}
	for i := 1; i < len(shares); i++ {
		if shares[i] < shares[i-1]-0.05 {
			t.Errorf("the share fell from %.2f to %.2f between quarters %d and %d", shares[i-1], shares[i], i-1, i)
		}
	}
	if shares[4] < 0.25 || shares[4] > 0.42 {
		t.Errorf("warm: the newcomer took %.0f%% of new connections, want about a third", 100*shares[4])
	}
}
