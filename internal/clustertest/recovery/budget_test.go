package recovery

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// dialAttempts sums the application's dials over every node: made and failed (probes are not
// counted there).
func dialAttempts(c *lbd.Connector) uint64 {
	var n uint64
	for _, ns := range c.Stats().Nodes {
		n += ns.Dials + ns.DialFailures
	}
	return n
}

// TestEverythingDownStaysWithinTheBudget: every proxy stopped for 5 s under 32 workers. lbd's
// own dials in that time stay within the retry budget (each a panic-mode dial the budget
// allowed), every statement fails within about a second, goroutines do not pile up, and the
// fleet serves again within a second of the first proxy's return. A tight budget is then
// seen refusing.
func TestEverythingDownStaysWithinTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		percent   int
		perSecond int
	}{
		{"defaults", lbd.DefaultRetryBudgetPercent, lbd.DefaultRetryBudgetPerSecond},
		{"tight", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const outage = 5 * time.Second
			cl := lbdtest.NewCluster(t, 3)
			db, c := clusterkit.OpenDB(t, cl, "", lbd.WithRetryBudget(tc.percent, tc.perSecond))
			db.SetMaxOpenConns(32)
			db.SetMaxIdleConns(32)

			var ok, failed atomic.Int64
			var slowest atomic.Int64 // the longest a failing statement took, nanoseconds
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						start := time.Now()
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						_, err := db.ExecContext(ctx, "SELECT 1")
						cancel()
						if err == nil {
							ok.Add(1)
							continue
						}
						failed.Add(1)
						if d := int64(time.Since(start)); d > slowest.Load() {
							slowest.Store(d)
						}
						time.Sleep(time.Millisecond) // an application's minimal back-off
					}
				})
			}
			defer func() { close(stop); wg.Wait() }()
			testkit.WaitFor(t, 10*time.Second, "statements to flow", func() bool { return ok.Load() > 500 })

			baseGoroutines := runtime.NumGoroutine()
			before, retriesBefore := dialAttempts(c), c.Stats().Retries
			for _, p := range cl.Proxies() {
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
			}
			stoppedAt := time.Now()
			testkit.WaitFor(t, 5*time.Second, "every proxy down", func() bool {
				for _, ns := range c.Stats().Nodes {
					if ns.State != lbd.StateDown {
						return false
					}
				}
				return true
			})
			peakGoroutines := 0
			for time.Since(stoppedAt) < outage {
				peakGoroutines = max(peakGoroutines, runtime.NumGoroutine())
				time.Sleep(50 * time.Millisecond)
			}
			dials := dialAttempts(c) - before
			retries := c.Stats().Retries
			panicDials := retries.PanicDials - retriesBefore.PanicDials
			t.Logf("outage %v: %d dial attempts (%d panic-mode dials allowed, %d retries refused), %d statements failed, slowest failure %v, goroutines %d → peak %d",
				outage, dials, panicDials, retries.Refused-retriesBefore.Refused, failed.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), baseGoroutines, peakGoroutines)

			// Dials made while no node was up are panic-mode dials, each allowed by the budget;
			// the few before the table saw every node down are ordinary ones (at most one per
			// worker).
			if dials > panicDials+32 {
				t.Errorf("%d dial attempts during the outage, but the budget allowed %d panic-mode dials", dials, panicDials)
			}
			window := uint64(tc.perSecond) * 10 // the reserve of one 10 s window; the outage is shorter
			if tc.percent == 0 && panicDials > window {
				t.Errorf("%d panic-mode dials with a budget of %d/s and no share: more than the %d of one window", panicDials, tc.perSecond, window)
			}
			if tc.percent == 0 && retries.Refused == retriesBefore.Refused {
				t.Error("the tight budget refused nothing while every proxy was down: the case proves nothing")
			}
			if s := time.Duration(slowest.Load()); s > 1500*time.Millisecond {
				t.Errorf("a statement took %v to fail while everything was down, want about a second at most", s)
			}
			if peakGoroutines > baseGoroutines+64 {
				t.Errorf("goroutines grew from %d to %d during the outage", baseGoroutines, peakGoroutines)
			}

			// The first proxy returns: the fleet serves again within a second.
			if err := cl.Proxy(0).Start(); err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			served := ok.Load()
			testkit.WaitFor(t, 5*time.Second, "a statement served after the first proxy's return", func() bool { return ok.Load() > served })
			if d := time.Since(back); d > time.Second {
				t.Errorf("served again %v after the first proxy's return, want within 1 s", d.Round(time.Millisecond))
			} else {
				t.Logf("served again %v after the first proxy's return", d.Round(time.Millisecond))
			}
			for _, p := range cl.Proxies()[1:] {
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
