package leastload

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestSlowProxyShedsWithoutStarving: a proxy that adds 10 ms to every statement (the others
// 1 ms) gets between 1/16 and 1/3 of a fast proxy's statements within 5 s, at one worker and at
// sixteen (before: none at one worker, 0.05 at sixteen), and once it is fast again it regains at
// least 15 % of the statements within 4 s at one worker.
func TestSlowProxyShedsWithoutStarving(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	for _, workers := range []int{1, 16} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies() {
				p.SetLatency(time.Millisecond)
			}
			db, c := clusterkit.OpenDSN(t, cl.DSN("balance=statement"))
			db.SetMaxIdleConns(workers)
			clusterkit.LoopFor(t, cl, workers, clusterkit.ShareRun/4, db)
			slow := cl.Proxies()[2]
			slow.SetLatency(11 * time.Millisecond)
			var ratio float64
			deadline := time.Now().Add(5 * time.Second)
			for {
				d := clusterkit.LoopFor(t, cl, workers, time.Second, db)
				ratio = float64(d[2]) / float64(max(min(d[0], d[1]), 1))
				t.Logf("slow/fast %.3f (%v), speeds %v", ratio, d, clusterkit.Speeds(c, cl))
				if ratio >= 1.0/16 && ratio <= 1.0/3 || time.Now().After(deadline) {
					break
				}
			}
			if ratio < 1.0/16 || ratio > 1.0/3 {
				t.Fatalf("the slow proxy got %.3f of a fast proxy's statements 5 s after it slowed, want 1/16 to 1/3", ratio)
			}
			if workers != 1 {
				return
			}
			slow.SetLatency(time.Millisecond)
			deadline = time.Now().Add(4 * time.Second)
			var share float64
			for {
				d := clusterkit.LoopFor(t, cl, workers, 500*time.Millisecond, db)
				share = clusterkit.Shares(d)[2]
				t.Logf("healed: share %.3f (%v), speeds %v", share, d, clusterkit.Speeds(c, cl))
				if share >= 0.15 || time.Now().After(deadline) {
					break
				}
			}
			if share < 0.15 {
				t.Errorf("the healed proxy has %.3f of the statements 4 s after it healed, want at least 0.15", share)
			}
		})
	}
}

// TestSlowProxyLosesPooledConnections: in connection mode at the defaults, a proxy that adds
// 10 ms to every statement (the others 1 ms) holds at most half a fast proxy's pooled
// connections within 5 s: the load policy's slowdown brings the rebalancer's round forward
// instead of waiting for its 10 s interval.
func TestSlowProxyLosesPooledConnections(t *testing.T) {
	clusterkit.CPULoad(t, clusterkit.BusySpinners)
	const workers, pool = 16, 24
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies() {
		p.SetLatency(time.Millisecond)
	}
	db, c := clusterkit.OpenDSN(t, cl.DSN(""))
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	for _, cn := range testkit.HoldConns(t, db, pool) { // 8 per proxy
		cn.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := clusterkit.SelectLoop(ctx, t, db, workers)
	defer wait()
	defer cancel()
	clusterkit.LoopFor(t, cl, 1, clusterkit.ShareRun/4, db) // the estimates settle
	cl.Proxies()[2].SetLatency(11 * time.Millisecond)
	start := time.Now()
	testkit.WaitFor(t, 5*time.Second, "the slow proxy to hold at most half a fast proxy's connections", func() bool {
		open := clusterkit.OpenCounts(c, cl)
		return 2*open[2] <= min(open[0], open[1])
	})
	t.Logf("open per proxy %v after %v; retired by the rebalancer %v; speeds %v",
		clusterkit.OpenCounts(c, cl), time.Since(start).Round(time.Millisecond), retiredByRebalance(c, cl), clusterkit.Speeds(c, cl))
}
