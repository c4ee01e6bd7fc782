package faults

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// readers runs SELECT 1 on n goroutines, with no deadline of their own, until stop; it counts
// the statements that failed.
type readers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ok     atomic.Int64
	failed atomic.Int64
}

func startReaders(t *testing.T, db *sql.DB, n int) *readers {
	ctx, cancel := context.WithCancel(context.Background())
	r := &readers{cancel: cancel}
	for range n {
		r.wg.Go(func() {
			for ctx.Err() == nil {
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
					r.ok.Add(1)
				} else if ctx.Err() == nil {
					r.failed.Add(1)
				}
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

func (r *readers) stop() { r.cancel(); r.wg.Wait() }

// transitionsOf counts the transitions of addr to state to in c's recent list within [from, to).
func transitionsOf(c *lbd.Connector, addr string, state lbd.NodeState, from, to time.Time) int {
	n := 0
	for _, x := range c.Stats().Recent {
		if x.Node == addr && x.To == state && !x.At.Before(from) && x.At.Before(to) {
			n++
		}
	}
	return n
}

// waitAllServing waits until every proxy of cl has served more than 100 statements.
func waitAllServing(t *testing.T, cl *lbdtest.Cluster) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "every proxy serving", func() bool {
		for _, p := range cl.Proxies() {
			if p.Statements() <= 100 {
				return false
			}
		}
		return true
	})
}

// TestSlowProxyStaysOutWhileSlowAndReturnsFast: at the defaults, under 16 readers, a proxy that
// takes a second per statement (its probes too: the latency delays every statement) is taken
// out once by the stall rule and stays out while it is slow, for 4 s, without coming back and
// being taken out again; once it answers fast again it is back in rotation within a second.
// A down node's probe that answers slower than the stall threshold is not a good one.
func TestSlowProxyStaysOutWhileSlowAndReturnsFast(t *testing.T) {
	const slowFor = 4 * time.Second
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies() {
		p.SetLatency(faultStatementLatency)
	}
	db, c := clusterkit.OpenDB(t, cl, "")
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	r := startReaders(t, db, 16)
	waitAllServing(t, cl)
	p := cl.Proxy(0)
	state := func() lbd.NodeState { s, _ := clusterkit.NodeState(c, p.Addr()); return s }

	slowAt := time.Now()
	p.SetLatency(time.Second)
	testkit.WaitFor(t, 5*time.Second, "the slow proxy out", func() bool { return state() == lbd.StateDown })
	out := time.Since(slowAt)
	if out > time.Second {
		t.Errorf("out %v after it turned slow, want about 0.3 s, never beyond 1 s", out)
	}
	time.Sleep(slowFor - out) // the length of the fault, not a verdict
	healedAt := time.Now()
	p.SetLatency(faultStatementLatency)
	if ups := transitionsOf(c, p.Addr(), lbd.StateUp, slowAt, healedAt); ups != 0 {
		t.Errorf("the proxy came back %d times while it was slow, want never; transitions: %+v", ups, c.Stats().Recent)
	}
	if downs := transitionsOf(c, p.Addr(), lbd.StateDown, slowAt, healedAt); downs != 1 {
		t.Errorf("the proxy was taken down %d times while it was slow, want once", downs)
	}
	served := p.Statements()
	testkit.WaitFor(t, 10*time.Second, "the healed proxy back in rotation", func() bool { return state() == lbd.StateUp && p.Statements() > served })
	back := time.Since(healedAt)
	if back > time.Second {
		t.Errorf("back in rotation %v after it healed, want within 1 s", back)
	}
	r.stop()
	if f := r.failed.Load(); f != 0 {
		t.Errorf("%d reads failed; a slow proxy fails none", f)
	}
	ns, _ := c.Stats().Node(p.Addr())
	t.Logf("out %v after it turned slow, stayed out %v without returning (%d probes, %d failed), back %v after it healed",
		out.Round(time.Millisecond), slowFor, ns.Probes, ns.ProbeFailures, back.Round(time.Millisecond))
}

// TestProbeTimeoutsWhileAnsweringAreNoVerdict: a proxy whose probes time out while it answers
// the application's statements is not taken out, however many of its probes time out; the same
// proxy is taken out as soon as it answers nothing (a hang), and, with no statements to show it
// alive, by its probes alone.
//
// The long runs (LBD_TEST_LONG=1) watch it for 30 s at the default probe settings (a probe
// every 5 s, 3 s timeout: a probe ends every 8 s, so three or four time out). Otherwise it is watched for 5 s with a probe
// every second and a 0.5 s timeout: three or four probes time out, which is what the rule is
// about; the longer watch adds no other case.
func TestProbeTimeoutsWhileAnsweringAreNoVerdict(t *testing.T) {
	watch, params, minFailed := 5*time.Second, "checkHealthIntervalSeconds=1&checkHealthTimeoutMillis=500", uint64(2)
	if testkit.Long() {
		watch, params, minFailed = 30*time.Second, "", 3
	}
	t.Run("answering", func(t *testing.T) {
		cl := lbdtest.NewCluster(t, 3)
		db, c := clusterkit.OpenDB(t, cl, params)
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(16)
		r := startReaders(t, db, 16)
		waitAllServing(t, cl)
		p := cl.Proxy(0)
		before, _ := c.Stats().Node(p.Addr())
		began := time.Now()
		p.DelayQueries("/* ping */", time.Minute)
		for time.Since(began) < watch {
			if s, _ := clusterkit.NodeState(c, p.Addr()); s != lbd.StateUp {
				t.Fatalf("%v into the watch the proxy is %v; its statements are answered; transitions: %+v", time.Since(began), s, c.Stats().Recent)
			}
			time.Sleep(20 * time.Millisecond)
		}
		after, _ := c.Stats().Node(p.Addr())
		if failed := after.ProbeFailures - before.ProbeFailures; failed < minFailed {
			t.Fatalf("%d probes failed in %v, want at least %d: the probe delay did not bite", failed, watch, minFailed)
		}
		if tr := after.Transitions - before.Transitions; tr != 0 {
			t.Fatalf("%d transitions in %v, want none", tr, watch)
		}
		if f := r.failed.Load(); f != 0 {
			t.Errorf("%d reads failed", f)
		}
		t.Logf("%d probes timed out in %v, %d statements answered by the proxy, no transition",
			after.ProbeFailures-before.ProbeFailures, watch, p.Statements())

		// Now it answers nothing: out by the stall rule, well within a second.
		hungAt := time.Now()
		p.Hang()
		testkit.WaitFor(t, 5*time.Second, "the hung proxy out", func() bool { s, _ := clusterkit.NodeState(c, p.Addr()); return s == lbd.StateDown })
		d := time.Since(hungAt)
		if d > time.Second {
			t.Errorf("the hung proxy was out after %v, want within 1 s", d)
		}
		t.Logf("hung, it was out after %v", d.Round(time.Millisecond))
		p.Resume()
	})
	t.Run("idle", func(t *testing.T) {
		cl := lbdtest.NewCluster(t, 3)
		_, c := clusterkit.OpenDB(t, cl, params)
		p := cl.Proxy(0)
		p.DelayQueries("/* ping */", time.Minute)
		interval, timeout := c.Config().CheckHealthInterval, c.Config().CheckHealthTimeout
		testkit.WaitFor(t, interval+timeout+5*time.Second, "the proxy out by its probes", func() bool {
			s, _ := clusterkit.NodeState(c, p.Addr())
			return s == lbd.StateDown
		})
		if x, ok := transitionOf(c, p.Addr(), lbd.StateDown, time.Time{}); !ok || x.Cause != lbd.CauseProbe {
			t.Errorf("taken down by %+v, want its probe", x)
		}
	})
}
