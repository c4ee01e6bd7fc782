package lbd

import (
	"context"
	"database/sql"
	"errors"
	"github.com/lbd-go/lbd/internal/testkit"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/physical"
)

// TestRetiredByReason retires connections for each reason the root can cause on its own (a
// fatal error, a node down, a node draining, rebalancing) and checks that Stats counts each
// under its reason, and Retired as their sum.
func TestRetiredByReason(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	db, c := openFakeDB(t, srvs, "", quiet()...)
	a, b, x := srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()

	// One connection on each node (least connections), all in use.
	held := testkit.HoldConns(t, db, 3)
	on := map[string]*sql.Conn{}
	for _, h := range held {
		h.Raw(func(dc any) error { on[dc.(*physical.Conn).Node().Addr()] = h; return nil })
	}
	if len(on) != 3 {
		t.Fatalf("3 connections landed on %d nodes, want one on each", len(on))
	}

	// A fatal error (8001, "server is initializing": OceanBase asks the client to close) on the
	// first node's connection.
	srvs[0].AddFault(mysqlfake.Fault{Name: "command/8001", Phase: mysqlfake.PhaseCommand, Times: 1,
		Bytes: mysqlfake.Payload(mysqlfake.ErrPayload(8001, "08004", "Server is initializing")),
		Match: func(c mysqlfake.Command) bool { return c.Text == "SELECT 1" }})
	if _, err := on[a].ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Fatal("the injected 8001 did not reach the caller")
	}
	on[a].Close()

	// The second node's connection back in the pool, then the node down: it retires as node_down.
	on[b].Close()
	// The third node leaves the list while its connection is in use: it retires as node_draining.
	for _, tn := range c.table.Nodes(nil) {
		if tn.Addr() == b {
			c.table.Probed(tn, time.Now(), errors.New("probe failed on purpose"), time.Millisecond)
		}
	}
	if err := c.SetNodes([]string{a, b}); err != nil {
		t.Fatal(err)
	}
	// Rebalancing: a fresh connection on the first node, retired as surplus.
	fresh := testkit.HoldConns(t, db, 1)[0]
	for _, tn := range c.table.Nodes(nil) {
		if tn.Addr() == a {
			if got := tn.Payload().RetireSurplus(1); got != 1 {
				t.Fatalf("retireSurplus retired %d, want 1", got)
			}
		}
	}
	fresh.Close()
	on[x].Close()

	want := map[string][NumRetireReasons]uint64{
		a: {RetireFatal: 1, RetireRebalance: 1},
		b: {RetireNodeDown: 1},
	}
	st := c.Stats()
	for addr, w := range want {
		ns, ok := st.Node(addr)
		if !ok {
			t.Fatalf("%s missing from Stats", addr)
		}
		if ns.RetiredBy != w || ns.Retired != ns.RetiredBy[RetireFatal]+ns.RetiredBy[RetireRebalance]+ns.RetiredBy[RetireNodeDown] {
			t.Errorf("%s: RetiredBy %v, Retired %d; want %v and their sum", addr, ns.RetiredBy, ns.Retired, w)
		}
	}
	if ns, ok := st.Node(x); ok { // it drained its last connection and left, or is about to
		if ns.RetiredBy != [NumRetireReasons]uint64{RetireNodeDraining: 1} {
			t.Errorf("%s: RetiredBy %v, want one node_draining", x, ns.RetiredBy)
		}
	}
	for r := range NumRetireReasons {
		if r.String() == "unknown" {
			t.Errorf("RetireReason %d has no name", r)
		}
	}
}

// TestObserverSeesProbesAndDials registers an Observer, dials and probes, and checks every
// call names the node and carries a duration; after remove, nothing more is called.
func TestObserverSeesProbesAndDials(t *testing.T) {
	srvs := startFakes(t, 1, mysqlfake.Config{})
	logs := &logRecorder{}
	db, c := openFakeDB(t, srvs, "", fast(20*time.Millisecond, time.Second, time.Hour, logs)...)
	addr := srvs[0].Addr()

	var mu sync.Mutex
	var probes, dials, bad int
	remove := c.AddObserver(Observer{
		Probe: func(a string, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			probes++
			if a != addr || took <= 0 || err != nil {
				bad++
			}
		},
		Dial: func(a string, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			dials++
			if a != addr || took <= 0 || err != nil {
				bad++
			}
		},
	})
	c.AddObserver(Observer{}) // nil fields are skipped
	for _, h := range testkit.HoldConns(t, db, 2) {
		defer h.Close()
	}
	waitFor(t, 5*time.Second, "two probes observed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return probes >= 2
	})
	remove()
	remove() // a second call does nothing
	mu.Lock()
	gotDials, gotBad, probesAtRemove := dials, bad, probes
	mu.Unlock()
	if gotDials != 2 || gotBad != 0 {
		t.Fatalf("dials observed %d (want 2), calls with a wrong node, duration or error %d", gotDials, gotBad)
	}
	third := testkit.HoldConns(t, db, 1)[0] // a third connection: dialled, not observed
	defer third.Close()
	before := c.Stats().Nodes[0].Probes
	waitFor(t, 5*time.Second, "two more probes run", func() bool { return c.Stats().Nodes[0].Probes >= before+2 })
	mu.Lock()
	defer mu.Unlock()
	if dials != 2 || probes > probesAtRemove+1 { // one probe may have been reporting as remove ran
		t.Fatalf("after remove: dials %d, probes %d (were %d): the Observer is still called", dials, probes, probesAtRemove)
	}
}
