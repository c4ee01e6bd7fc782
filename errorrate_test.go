package lbd

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// TestFastFailingProxyIsEjected: one proxy of three answers every statement with 1105 at once
// while its probe passes. It finishes its statements fastest, so the least busy pick would send
// it the most. The error-rate watch ejects it: within 5 s under 16 workers it gets at most 10 %
// of the statements, in both balance modes. Application errors that every proxy answers alike
// (30 % duplicate keys everywhere) eject nothing.
func TestFastFailingProxyIsEjected(t *testing.T) {
	broken := func(q string) *mysqlfake.Result {
		if q == probeQuery {
			return mysqlfake.DefaultAnswer(q)
		}
		return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1105, State: "HY000", Message: "proxy: backend pool exhausted"}}
	}
	var n atomic.Int64
	duplicates := func(q string) *mysqlfake.Result {
		if strings.Contains(q, "INSERT") && n.Add(1)%10 < 3 {
			return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1062, State: "23000", Message: "Duplicate entry '1' for key 'PRIMARY'"}}
		}
		return mysqlfake.DefaultAnswer("SELECT 1")
	}
	for _, mode := range []string{"connection", "statement"} {
		// The modes run side by side: each case runs for a set time, not a set count, and
		// judges shares and transitions, which the other mode's load on the host moves no more
		// than the host's own would.
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			errorRateCases(t, mode, broken, duplicates)
		})
	}
}

// errorRateCases runs TestFastFailingProxyIsEjected's two cases in one balance mode.
func errorRateCases(t *testing.T, mode string, broken, duplicates func(string) *mysqlfake.Result) {
	t.Run("1105 on one proxy", func(t *testing.T) {
		srvs := []*mysqlfake.Server{
			mysqlfake.Start(t, mysqlfake.Config{Answer: broken}),
			mysqlfake.Start(t, mysqlfake.Config{}),
			mysqlfake.Start(t, mysqlfake.Config{}),
		}
		share, c := runErrorLoad(t, srvs, mode, "INSERT INTO t VALUES (1)", 5*time.Second)
		t.Logf("the failing proxy got %.1f %% of the statements", 100*share[0])
		if share[0] > 0.10 {
			t.Errorf("the failing proxy got %.1f %% of the statements in 5 s, want at most 10 %%", 100*share[0])
		}
		ns, _ := c.Stats().Node(srvs[0].Addr())
		if ns.TransitionsBy[CausePassive] == 0 || !strings.Contains(ns.LastError, "error rate") {
			t.Errorf("the failing proxy: %d passive ejections, last error %q; want one for its error rate", ns.TransitionsBy[CausePassive], ns.LastError)
		}
		for _, s := range srvs[1:] {
			if ns, _ := c.Stats().Node(s.Addr()); ns.Transitions != 0 {
				t.Errorf("%s, healthy: %d transitions, want none", s.Addr(), ns.Transitions)
			}
		}
	})
	t.Run("duplicates on every proxy", func(t *testing.T) {
		srvs := startFakes(t, 3, mysqlfake.Config{Answer: duplicates})
		_, c := runErrorLoad(t, srvs, mode, "INSERT INTO t VALUES (1)", 2*time.Second)
		for _, ns := range c.Stats().Nodes {
			if ns.Transitions != 0 {
				t.Errorf("%s: %d transitions; errors every proxy answers alike eject none", ns.Addr, ns.Transitions)
			}
		}
	})
}

// runErrorLoad runs q from 16 workers for d over srvs in the given balance mode and returns
// each server's share of the commands it received meanwhile.
func runErrorLoad(t *testing.T, srvs []*mysqlfake.Server, mode, q string, d time.Duration) ([]float64, *Connector) {
	t.Helper()
	db, c := openFakeDB(t, srvs, "balance="+mode)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	before := make([]int64, len(srvs))
	for i, s := range srvs {
		before[i] = s.Commands()
	}
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				db.ExecContext(ctx, q) // errors are the point
				cancel()
			}
		})
	}
	wg.Wait()
	share := make([]float64, len(srvs))
	var total int64
	for i, s := range srvs {
		d := s.Commands() - before[i]
		share[i] = float64(d)
		total += d
	}
	if total < 400 {
		t.Fatalf("only %d commands in %v: the load proves nothing", total, d)
	}
	for i := range share {
		share[i] /= float64(total)
	}
	return share, c
}
