package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
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
// failed, and how long after the fault ended it served again.
type faultTiming struct {
	out, back time.Duration
	failed    int64
}

// TestFaultTimings measures, under 16 workers on three proxies, how long each kind of fault
// takes to detect and how soon after it ends the proxy serves again, at the defaults and with
// 1 s probes, and how soon a demoted primary's connections are retired. The bounds are
// lbd's promises: out within about a third of a second for a hung or slow proxy (the stall
// rule), at once for a killed one; back in rotation within a second; a demoted primary's
// connections retired within one probe interval; and, with read retries (the default), no
// read lost to a killed proxy. The figures are logged as a table.
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
				ft := measureFault(t, k, cfg.opts)
				table = append(table, fmt.Sprintf("| %s | %s | %v | %d | %v |", k.name, cfg.name, ft.out.Round(10*time.Millisecond), ft.failed, ft.back.Round(10*time.Millisecond)))
				if ft.failed != 0 && cfg.name != "retryReads=false" {
					t.Errorf("%d reads failed; with read retries on, the reads in flight on the proxy run again elsewhere", ft.failed)
				}
				if ft.out > 600*time.Millisecond {
					t.Errorf("out after %v, want about 0.3 s at most", ft.out)
				}
				// A slow proxy still answers its recovery probes (a second is within the probe
				// timeout), so it comes back while slow, is taken out again by the stall rule,
				// and each ejection lengthens the next (Envoy's rule): its return after the
				// fault waits out the ejection time it earned, and is only reported.
				if ft.back > time.Second && !strings.HasPrefix(k.name, "latency") {
					t.Errorf("back in rotation %v after the fault ended, want within 1 s", ft.back)
				}
			})
		}
		t.Run(cfg.name+"/switchover", func(t *testing.T) {
			d, interval := measureDemotion(t, cfg.opts)
			table = append(table, fmt.Sprintf("| switchover (read_only on the primary) | %s | demoted primary's connections retired after %v | | |", cfg.name, d.Round(10*time.Millisecond)))
			if d > interval {
				t.Errorf("the demoted primary's connections were retired %v after the role change, want within one probe interval (%v)", d, interval)
			}
		})
	}
	t.Logf("\n| fault | settings | out after | failed | back in rotation after |\n|---|---|--:|--:|--:|\n%s", strings.Join(table, "\n"))
}

// measureFault runs 16 workers reading SELECT 1 over three proxies, applies k to the first for
// 2 s, and times it.
func measureFault(t *testing.T, k faultKind, opts []lbd.Option) faultTiming {
	cl := lbdtest.NewCluster(t, 3)
	db, c := openDB(t, cl, "", opts...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	var ok, failed atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
					ok.Add(1)
				} else if ctx.Err() == nil {
					failed.Add(1)
				}
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	p := cl.Proxy(0)
	waitFor(t, 10*time.Second, "every proxy serving", func() bool {
		return p.Statements() > 100 && cl.Proxy(1).Statements() > 100 && cl.Proxy(2).Statements() > 100
	})
	state := func() lbd.NodeState { ns, _ := c.Stats().Node(p.Addr()); return ns.State }

	var ft faultTiming
	failedBefore := failed.Load()
	began := time.Now()
	k.start(p)
	waitFor(t, 10*time.Second, "the proxy out", func() bool { return state() == lbd.StateDown })
	ft.out = time.Since(began)
	time.Sleep(2*time.Second - ft.out) // the fault lasts 2 s
	k.end(p)
	ended := time.Now()
	served := p.Statements()
	waitFor(t, 10*time.Second, "the proxy back in rotation", func() bool { return state() == lbd.StateUp && p.Statements() > served })
	ft.back = time.Since(ended)
	ft.failed = failed.Load() - failedBefore
	return ft
}

// measureDemotion runs writes on two primaries under target=primary, makes the first a
// read_only replica, and returns how long until none of its connections was left open, and
// the probe interval.
func measureDemotion(t *testing.T, opts []lbd.Option) (time.Duration, time.Duration) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := openDB(t, cl, "roleCheck=mysql&target=primary", opts...)
	interval := c.Config().CheckHealthInterval
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if _, err := db.Exec("CREATE TABLE demote (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	waitForRoles(t, c, cl, func(int) nodes.Role { return nodes.RolePrimary })
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
	waitFor(t, 10*time.Second, "connections on the first primary", func() bool { ns, _ := c.Stats().Node(p.Addr()); return ns.Open > 2 })
	began := time.Now()
	p.SetRole(lbdtest.Replica)
	waitFor(t, 2*interval+5*time.Second, "the demoted primary's connections retired", func() bool {
		ns, _ := c.Stats().Node(p.Addr())
		return ns.Role == nodes.RoleReplica && ns.Open == 0
	})
	return time.Since(began), interval
}
