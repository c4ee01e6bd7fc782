// Package clusterkit holds the helpers lbd's cluster-level tests share: counters and waits
// over an lbdtest cluster's proxies. It is not for users.
package clusterkit

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// The share tests run at the defaults (balancePolicy=least-load, probes and rebalancing at
// their intervals) beside BusySpinners CPU-bound processes they start themselves (CPULoad), as
// a user's host is never quiet, and judge with margins. Each case measures the statements
// every proxy counted while SELECT 1 loops ran for ShareRun.
const ShareRun = 2 * time.Second

// BusySpinners is how many CPU-bound processes run beside the share tests: as many as this
// 2-core machine's cores.
const BusySpinners = 2

// MaxShareCV is the most the per-proxy statement counts may vary (stddev/mean) for statements
// to count as evenly spread.
const MaxShareCV = 0.05

// StatementCounts returns each proxy's statement count, in the cluster's order.
func StatementCounts(cl *lbdtest.Cluster) []int64 {
	out := make([]int64, 0, len(cl.Proxies()))
	for _, p := range cl.Proxies() {
		out = append(out, p.Statements())
	}
	return out
}

// ShareCV returns the coefficient of variation (population standard deviation over mean) of
// counts: 0 for perfectly even counts, sqrt(n-1) when one of n proxies got everything, NaN
// when there is nothing to compare.
func ShareCV(counts []int64) float64 {
	var sum float64
	for _, c := range counts {
		sum += float64(c)
	}
	if len(counts) == 0 || sum == 0 {
		return math.NaN()
	}
	mean := sum / float64(len(counts))
	var sq float64
	for _, c := range counts {
		d := float64(c) - mean
		sq += d * d
	}
	return math.Sqrt(sq/float64(len(counts))) / mean
}

// ResetProxyCounters zeroes every proxy's statement and connection counters.
func ResetProxyCounters(cl *lbdtest.Cluster) {
	for _, p := range cl.Proxies() {
		p.ResetCounters()
	}
}

// Deltas returns the statements each proxy counted since before, and updates before.
func Deltas(cl *lbdtest.Cluster, before []int64) []int64 {
	now := StatementCounts(cl)
	out := make([]int64, len(now))
	for i := range now {
		out[i] = now[i] - before[i]
		before[i] = now[i]
	}
	return out
}

// LoopFor runs SELECT 1 on workers goroutines of each db for d and returns the statements
// each proxy of cl counted meanwhile.
func LoopFor(t testing.TB, cl *lbdtest.Cluster, workers int, d time.Duration, dbs ...*sql.DB) []int64 {
	t.Helper()
	return LoopUntil(t, cl, workers, d, 0, dbs...)
}

// LoopUntil is LoopFor that goes on, for at most 4d, until the proxies counted at least least
// statements: a spread judged on a few hundred statements per proxy is mostly sampling noise
// (a CV of 4 % at 500 each), and under -race with 64 workers two seconds give no more.
func LoopUntil(t testing.TB, cl *lbdtest.Cluster, workers int, d time.Duration, least int64, dbs ...*sql.DB) []int64 {
	t.Helper()
	before := StatementCounts(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 4*d)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := d
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			var sum int64
			for i, n := range StatementCounts(cl) {
				sum += n - before[i]
			}
			if sum >= least {
				cancel()
				return
			}
			wait = 50 * time.Millisecond
		}
	}()
	var waits []func()
	for _, db := range dbs {
		waits = append(waits, SelectLoop(ctx, t, db, workers))
	}
	for _, w := range waits {
		w()
	}
	cancel()
	<-done // the watcher reads before; Deltas writes it
	return Deltas(cl, before)
}

// Shares returns each count's fraction of their sum.
func Shares(counts []int64) []float64 {
	var sum int64
	for _, n := range counts {
		sum += n
	}
	out := make([]float64, len(counts))
	for i, n := range counts {
		out[i] = float64(n) / float64(max(sum, 1))
	}
	return out
}

// Speeds returns each proxy's speed factor and latency estimate from Stats, for the logs.
func Speeds(c *lbd.Connector, cl *lbdtest.Cluster) []string {
	st := c.Stats()
	out := make([]string, 0, len(cl.Addrs()))
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out = append(out, fmt.Sprintf("%.2f@%v", ns.Speed, ns.Latency.Round(time.Microsecond)))
	}
	return out
}
