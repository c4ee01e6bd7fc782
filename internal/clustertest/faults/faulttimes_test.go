package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// faultKind is one way a proxy fails: how to start it and how to end it.
type faultKind struct {
	name  string
	start func(p *lbdtest.Proxy)
	end   func(p *lbdtest.Proxy)
}

var faultKinds = []faultKind{
	{"kill (connections reset, port refused)", func(p *lbdtest.Proxy) { _ = p.Stop() }, func(p *lbdtest.Proxy) { _ = p.Start() }},
	{"hang (accepts, answers nothing)", (*lbdtest.Proxy).Hang, (*lbdtest.Proxy).Resume},
	{"latency (1 s on every statement)", func(p *lbdtest.Proxy) { p.SetLatency(time.Second) }, func(p *lbdtest.Proxy) { p.SetLatency(0) }},
}

// faultTiming is what one fault cost: how long until the proxy was out, how many statements
// failed, how many times the proxy came back while the fault lasted (flapping), and how long
// after the fault ended it served again.
type faultTiming struct {
	out, back time.Duration
	failed    int64
	flaps     int
}

// faultRepeats is how many times each fault is applied; the table gives the least, the median
// and the most of the repeats (a single run says little: detection waits on ticks and probe
// schedules whose phase a fault meets at random).
const faultRepeats = 5

// faultStatementLatency is what every statement costs on every proxy while faults are measured,
// so that a fault can start at a chosen offset into a running statement; it is far below the
// stall threshold's floor (100 ms), which the measured detection depends on.
const faultStatementLatency = 5 * time.Millisecond

// faultOffset is where into a running statement the i-th repeat starts its fault.
func faultOffset(i int) time.Duration {
	return time.Duration(i) * faultStatementLatency / faultRepeats
}

// median is the middle of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// faultSpread is the least, the median and the most of ds, rounded for the table.
func faultSpread(ds []time.Duration) string {
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	return fmt.Sprintf("%s / %s / %s s", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}

// TestFaultTimings measures, under 16 workers on three proxies, how long each kind of fault
// takes to detect and how soon after it ends the proxy serves again, at the defaults and with
// 1 s probes, and how soon a demoted primary's connections are retired, each faultRepeats
// times at different offsets into a running statement. The bounds, held by every repeat, are
// lbd's promises: out within about a third of a second for a hung or slow proxy (the stall
// rule), at once for a killed one; never back while the fault lasts (a slow proxy's probes,
// answered slower than the stall threshold, do not bring it back); back in rotation within a
// second of the fault's end; a demoted primary's connections retired within one probe interval;
// with read retries (the default), no read lost to a killed proxy; and a proxy whose probes
// time out while its statements are answered never taken out. The figures are logged as a
// table of least / median / most.
func TestFaultTimings(t *testing.T) {
	testkit.SkipUnlessLong(t)
	var table []string
	for _, cfg := range []struct {
		name string
		opts []lbd.Option
	}{
		{"defaults", nil},
		{"1 s probes", []lbd.Option{lbd.WithCheckHealthInterval(time.Second)}},
		{"retryReads=false", []lbd.Option{lbd.WithRetryReads(false)}},
	} {
		for _, k := range faultKinds {
			t.Run(cfg.name+"/"+k.name, func(t *testing.T) {
				var outs, backs []time.Duration
				var failed []int64
				for i := range faultRepeats {
					ft := measureFault(t, k, cfg.opts, faultOffset(i))
					outs, backs, failed = append(outs, ft.out), append(backs, ft.back), append(failed, ft.failed)
					if ft.failed != 0 && cfg.name != "retryReads=false" {
						t.Errorf("repeat %d: %d reads failed; with read retries on, the reads in flight on the proxy run again elsewhere", i, ft.failed)
					}
					if ft.out > time.Second {
						t.Errorf("repeat %d: out after %v, want about 0.3 s, never beyond 1 s", i, ft.out)
					}
					// A slow proxy answers its recovery probes, but slower than the stall
					// threshold: they do not count, so it stays out while slow and is back as
					// soon as its probes are fast again.
					if ft.back > time.Second {
						t.Errorf("repeat %d: back in rotation %v after the fault ended, want within 1 s", i, ft.back)
					}
					if ft.flaps != 0 {
						t.Errorf("repeat %d: the proxy came back %d times while the fault lasted, want never", i, ft.flaps)
					}
				}
				if m := median(outs); m > 600*time.Millisecond {
					t.Errorf("out after %v (the median of %d repeats), want about 0.3 s", m, faultRepeats)
				}
				slices.Sort(failed)
				table = append(table, fmt.Sprintf("| %s | %s | %s | %d–%d | %s |", k.name, cfg.name, faultSpread(outs), failed[0], failed[len(failed)-1], faultSpread(backs)))
			})
		}
		if cfg.name != "retryReads=false" {
			t.Run(cfg.name+"/probes time out", func(t *testing.T) {
				timedOut, downs, watch := measureProbeTimeouts(t, cfg.opts)
				if timedOut == 0 {
					t.Errorf("no probe failed in %v: the probe delay did not bite", watch)
				}
				if downs != 0 {
					t.Errorf("taken down %d times in %v while its probes timed out and its statements were answered, want never", downs, watch)
				}
				table = append(table, fmt.Sprintf("| probes time out, statements answered | %s | never (%d probes timed out in %.0f s) | 0 | |", cfg.name, timedOut, watch.Seconds()))
			})
		}
		t.Run(cfg.name+"/switchover", func(t *testing.T) {
			var ds []time.Duration
			for i := range faultRepeats {
				d, interval := measureDemotion(t, cfg.opts)
				ds = append(ds, d)
				if d > interval {
					t.Errorf("repeat %d: the demoted primary's connections were retired %v after the role change, want within one probe interval (%v)", i, d, interval)
				}
			}
			table = append(table, fmt.Sprintf("| switchover (read_only on the primary) | %s | demoted primary's connections retired after %s | | |", cfg.name, faultSpread(ds)))
		})
	}
	t.Logf("\n| fault | settings | out after (least / median / most) | failed | back in rotation after |\n|---|---|--:|--:|--:|\n%s", strings.Join(table, "\n"))
}

// measureFault runs 16 workers reading SELECT 1 over three proxies, applies k to the first for
// 2 s, starting offset after a statement reached it, and times it.
func measureFault(t *testing.T, k faultKind, opts []lbd.Option, offset time.Duration) faultTiming {
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies() {
		p.SetLatency(faultStatementLatency)
	}
	db, c := clusterkit.OpenDB(t, cl, "", opts...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	r := startReaders(t, db, 16)
	defer r.stop()
	waitAllServing(t, cl)
	p := cl.Proxy(0)
	state := func() lbd.NodeState { ns, _ := c.Stats().Node(p.Addr()); return ns.State }

	// A statement reaches the proxy (its count moves), then the fault starts offset into it.
	n := p.Statements()
	testkit.WaitFor(t, 5*time.Second, "a statement reaching the proxy", func() bool { return p.Statements() != n })
	time.Sleep(offset)

	var ft faultTiming
	failedBefore := r.failed.Load()
	began := time.Now()
	k.start(p)
	testkit.WaitFor(t, 10*time.Second, "the proxy out", func() bool { return state() == lbd.StateDown })
	ft.out = time.Since(began)
	time.Sleep(2*time.Second - ft.out) // the fault lasts 2 s
	ft.flaps = transitionsOf(c, p.Addr(), lbd.StateUp, began, time.Now())
	k.end(p)
	p.SetLatency(faultStatementLatency) // the latency fault ends by setting 0
	ended := time.Now()
	served := p.Statements()
	testkit.WaitFor(t, 10*time.Second, "the proxy back in rotation", func() bool { return state() == lbd.StateUp && p.Statements() > served })
	ft.back = time.Since(ended)
	ft.failed = r.failed.Load() - failedBefore
	return ft
}

// measureProbeTimeouts runs 16 workers reading SELECT 1 over three proxies and holds the first
// one's probes for a minute each (lbdtest's DelayQueries) for three probe intervals and a probe
// timeout, while its statements are answered; it returns how many of its probes failed, how many
// times it was taken down meanwhile, and how long it was watched.
func measureProbeTimeouts(t *testing.T, opts []lbd.Option) (timedOut uint64, downs int, watch time.Duration) {
	cl := lbdtest.NewCluster(t, 3)
	for _, p := range cl.Proxies() {
		p.SetLatency(faultStatementLatency)
	}
	db, c := clusterkit.OpenDB(t, cl, "", opts...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	r := startReaders(t, db, 16)
	defer r.stop()
	waitAllServing(t, cl)
	p := cl.Proxy(0)
	cfg := c.Config()
	watch = 3*cfg.CheckHealthInterval + cfg.CheckHealthTimeout
	before, _ := c.Stats().Node(p.Addr())
	began := time.Now()
	p.DelayQueries("/* ping */", time.Minute)
	time.Sleep(watch)
	after, _ := c.Stats().Node(p.Addr())
	if r.failed.Load() != 0 {
		t.Errorf("%d reads failed", r.failed.Load())
	}
	return after.ProbeFailures - before.ProbeFailures, transitionsOf(c, p.Addr(), lbd.StateDown, began, time.Now()), watch
}

// measureDemotion runs writes on two primaries under target=primary, makes the first a
// read_only replica, and returns how long until none of its connections was left open, and
// the probe interval.
func measureDemotion(t *testing.T, opts []lbd.Option) (time.Duration, time.Duration) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "roleCheck=mysql&target=primary", opts...)
	interval := c.Config().CheckHealthInterval
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if _, err := db.Exec("CREATE TABLE demote (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	clusterkit.WaitForRoles(t, c, cl, func(int) nodes.Role { return nodes.RolePrimary })
	var seq atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = db.ExecContext(ctx, "INSERT INTO demote VALUES (?)", seq.Add(1))
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	p := cl.Proxy(0)
	testkit.WaitFor(t, 10*time.Second, "connections on the first primary", func() bool { ns, _ := c.Stats().Node(p.Addr()); return ns.Open > 2 })
	began := time.Now()
	p.SetRole(lbdtest.Replica)
	testkit.WaitFor(t, 2*interval+5*time.Second, "the demoted primary's connections retired", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.Role == nodes.RoleReplica && ns.Open == 0
	})
	return time.Since(began), interval
}
