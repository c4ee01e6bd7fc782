package faults

import (
	"github.com/lbd-go/lbd"

	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	_ "github.com/lbd-go/lbd/statuscheck" // statusURL's HTTP check
)

// TestRollingRestartAnnouncedShutdown restarts three proxies one after the other under 16
// workers; each announces its shutdown first (1053 on every statement and new connection for
// announceFor), then closes every connection and comes back. No statement outside a
// transaction may fail: the ones a stopping proxy refused did not run and run again elsewhere.
// From the moment lbd drains a proxy until it is back, lbd dials it no more (its probes
// aside).
func TestRollingRestartAnnouncedShutdown(t *testing.T) {
	t.Parallel()
	const announceFor = 2 * time.Second
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			logs := &testkit.Logs{}
			db, c := clusterkit.OpenDB(t, cl, "balance="+mode, clusterkit.Fast(time.Second, time.Second, time.Second, logs)...)
			db.SetMaxOpenConns(24)
			db.SetMaxIdleConns(24)
			w := clusterkit.StartWorkload(t, db, 16)
			for i, p := range cl.Proxies() {
				testkit.WaitFor(t, 10*time.Second, "statements on every proxy", func() bool {
					for _, q := range cl.Proxies() {
						if s, _ := clusterkit.NodeState(c, q.Addr()); s != lbd.StateUp {
							return false
						}
					}
					return p.Statements() > 50
				})
				before, _ := c.Stats().Node(p.Addr())
				p.AnnounceShutdown()
				testkit.WaitFor(t, 5*time.Second, "the stopping proxy drained", func() bool {
					ns, _ := c.Stats().Node(p.Addr())
					return ns.State == lbd.StateDown && ns.TransitionsBy[lbd.CauseShutdown] > before.TransitionsBy[lbd.CauseShutdown]
				})
				drained, _ := c.Stats().Node(p.Addr())
				time.Sleep(announceFor) // the proxy keeps announcing while the load runs on
				during, _ := c.Stats().Node(p.Addr())
				if d := during.Dials + during.DialFailures - drained.Dials - drained.DialFailures; d != 0 {
					t.Errorf("proxy %d: %d dials while it was drained", i, d)
				}
				if during.InUse != 0 || during.Open != 0 {
					t.Errorf("proxy %d: %d open, %d in use %v after it was drained", i, during.Open, during.InUse, announceFor)
				}
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
				testkit.WaitFor(t, 10*time.Second, "the restarted proxy up", func() bool {
					s, _ := clusterkit.NodeState(c, p.Addr())
					return s == lbd.StateUp
				})
				t.Logf("proxy %d: drained after it refused statements; %d connections turned away (probes)", i, p.TurnedAway())
			}
			fails := clusterkit.Failures(w)
			t.Logf("%d statements, %d failed", w.Count(), len(fails))
			for j, f := range fails {
				if j < 5 {
					t.Errorf("failed statement: %v", f.Err)
				}
			}
			if len(fails) > 0 {
				t.Fatalf("%d statements failed outside transactions in the rolling restart", len(fails))
			}
		})
	}
}

// TestShutdownInTransaction: a statement of a transaction that a stopping proxy refuses is
// not run again (the transaction's earlier statements are lost with it): the caller gets 1053,
// and the proxy is drained all the same.
func TestShutdownInTransaction(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 2)
			db, c := clusterkit.OpenDB(t, cl, "balance="+mode, clusterkit.Quiet()...)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var one int
			if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			addr := ""
			for _, p := range cl.Proxies() {
				if ns, _ := c.Stats().Node(p.Addr()); ns.InUse > 0 || (mode == "connection" && ns.Open > 0) {
					addr = p.Addr()
					p.AnnounceShutdown()
				}
			}
			err = tx.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			var me *mysql.MySQLError
			var se *lbd.ShutdownError
			if !errors.As(err, &me) || me.Number != 1053 || errors.As(err, &se) {
				t.Fatalf("statement in a transaction on %s while it stops: %v; want the server's 1053, not run again", addr, err)
			}
			if s, _ := clusterkit.NodeState(c, addr); s != lbd.StateDown {
				t.Fatalf("%s is %v after it refused a statement while stopping, want down", addr, s)
			}
		})
	}
}

// TestStatusURLDrains: with statusURL, a node whose status endpoint stops answering 2xx is
// drained (CauseShutdown) while its SQL port still serves; the load moves to the others, and
// it is back once the endpoint answers 200 again.
func TestStatusURLDrains(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			var mu sync.Mutex
			codes := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				code, ok := codes[strings.TrimPrefix(r.URL.Path, "/status/")]
				mu.Unlock()
				if !ok {
					code = http.StatusOK
				}
				w.WriteHeader(code)
			}))
			defer srv.Close()
			_, srvPort, _ := net.SplitHostPort(srv.Listener.Addr().String())
			tmpl := url.QueryEscape("http://{host}:" + srvPort + "/status/{port}")
			logs := &testkit.Logs{}
			db, c := clusterkit.OpenDB(t, cl, "balance="+mode+"&statusURL="+tmpl, clusterkit.Fast(200*time.Millisecond, 200*time.Millisecond, time.Hour, logs)...)
			w := clusterkit.StartWorkload(t, db, 8)
			p := cl.Proxy(1)
			_, port, _ := net.SplitHostPort(p.Addr())
			mu.Lock()
			codes[port] = http.StatusServiceUnavailable
			mu.Unlock()
			testkit.WaitFor(t, 5*time.Second, "the node whose status says 503 drained", func() bool {
				ns, _ := c.Stats().Node(p.Addr())
				return ns.State == lbd.StateDown && ns.TransitionsBy[lbd.CauseShutdown] > 0 && ns.Open == 0
			})
			before := p.Statements()
			w.Progress(t, 5*time.Second, 200)
			// Its probes still run SQL on it; the workload's statements must not.
			if d := p.Statements() - before; d > 20 {
				t.Fatalf("%d statements reached the drained node while the workload ran", d)
			}
			mu.Lock()
			delete(codes, port)
			mu.Unlock()
			testkit.WaitFor(t, 5*time.Second, "the node back up", func() bool {
				s, _ := clusterkit.NodeState(c, p.Addr())
				return s == lbd.StateUp
			})
			if fails := clusterkit.Failures(w); len(fails) > 0 {
				t.Fatalf("%d statements failed, first: %v", len(fails), fails[0].Err)
			}
		})
	}
}

// TestIdleConnectionsClosedWithShutdown: a proxy ends its shutdown by sending 1053 to every
// session and closing it. The pooled connections that find it waiting at their next checkout
// drain the proxy (cause shutdown), before any dial or probe fails on it; no statement fails.
func TestIdleConnectionsClosedWithShutdown(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	db.SetMaxIdleConns(12)
	conns := testkit.HoldConns(t, db, 12)
	for _, cn := range conns {
		cn.Close() // back to the pool, idle
	}
	p := cl.Proxy(0)
	if ns, _ := c.Stats().Node(p.Addr()); ns.Open < 3 {
		t.Fatalf("%s holds %d pooled connections, want its share", p.Addr(), ns.Open)
	}
	if err := p.StopWithShutdownError(); err != nil {
		t.Fatal(err)
	}
	// Check every pooled connection out at once (database/sql hands out the most recently
	// returned first), each running a statement.
	ctx := context.Background()
	again := testkit.HoldConns(t, db, 12)
	defer func() {
		for _, cn := range again {
			cn.Close()
		}
	}()
	for i, cn := range again {
		var one int
		if err := cn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("statement %d after the proxy closed its sessions: %v", i, err)
		}
	}
	ns, _ := c.Stats().Node(p.Addr())
	if ns.State != lbd.StateDown || ns.TransitionsBy[lbd.CauseShutdown] != 1 || ns.DialFailures != 0 {
		t.Fatalf("%s is %v, transitions by cause %v, %d dial failures; want down by its shutdown, undialed",
			p.Addr(), ns.State, ns.TransitionsBy, ns.DialFailures)
	}
}
