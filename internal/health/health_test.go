package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/budget"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

func init() {
	// The root package registers Dial for the Connector; these tests have no Connector.
	mysql.RegisterDialContext("lb", physical.Dial)
}

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// rig is a Monitor over a node table of the nodes at addrs, built as the root builds them but
// with nothing started: the test alone drives the probes.
type rig struct {
	m      *Monitor
	table  *physical.Table
	stop   chan struct{}
	closed atomic.Bool
}

// newRig builds a rig whose nodes are checked with the role check named check ("none" for
// none); the Monitor is closed when the test ends.
func newRig(t *testing.T, check string, addrs ...string) *rig {
	t.Helper()
	rc, err := role.ParseCheck(check)
	if err != nil {
		t.Fatal(err)
	}
	table, err := nodetable.New(nodetable.Config[*physical.Node]{RoleCheck: rc.Query() != "", RecoverCount: 1, FatalThreshold: 3,
		FatalWindow: time.Minute, ProbeInterval: time.Hour, MaxEjectionPercent: 100, BaseEjectionTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sorter, _ := exception.Lookup("mysql")
	r := &rig{table: table, stop: make(chan struct{})}
	r.m, err = New(Config{
		Table: table, Check: rc, Interval: time.Hour, Timeout: time.Second, FatalWindow: time.Minute, Sorter: sorter,
		RetryBudgetPercent: 20, RetryBudgetPerSecond: 10,
		Clock: clock.Real, Jitter: func(max time.Duration) time.Duration { return max - 1 },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stop: r.stop, Closed: r.closed.Load,
		Refused:      func(addr string, err error) error { return err },
		ShuttingDown: func(addr string, err error) error { return err },
		ObserveProbe: func(string, time.Duration, error) {},
		Record:       func(time.Time, nodetable.Transition[*physical.Node]) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	list := make([]nodes.Node, len(addrs))
	for i, a := range addrs {
		list[i] = nodes.Node{Addr: a, Weight: 1}
	}
	build := func(tn *physical.TableNode) (*physical.Node, error) {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "u", "lb", tn.Addr(), time.Second
		tr, err := physical.NewTransport(cfg)
		if err != nil {
			return nil, err
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		n := &Node{}
		r.m.InitNode(n, tn)
		pn := physical.NewNode(table, tn, connector, tr, n)
		n.Attach(pn)
		return pn, nil
	}
	if err := table.Start(list, build); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !r.closed.Swap(true) {
			close(r.stop)
		}
		r.m.Close()
	})
	return r
}

// target returns a probe target for the rig's first node, closed when the test ends.
func (r *rig) target(t *testing.T) *nodeProbe {
	target := &nodeProbe{m: r.m, n: at(r.table.Nodes(nil)[0])}
	t.Cleanup(func() { target.Close() })
	return target
}

// probeOnce runs one probe of target within timeout.
func probeOnce(target *nodeProbe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return target.Probe(ctx)
}

// TestNodeOfTheHooks: the health side of a physical node is found through its hooks, whether
// they are the Node itself or a value that embeds it (the root's node).
func TestNodeOfTheHooks(t *testing.T) {
	r := newRig(t, "none", "127.0.0.1:1")
	tn := r.table.Nodes(nil)[0]
	if n := NodeOf(tn.Payload()); n == nil || n.Addr() != "127.0.0.1:1" || n.tn != tn {
		t.Fatalf("NodeOf: %+v", n)
	}
	type wrapper struct {
		Node
		_ int // more than the Node, as the root's node has
	}
	w := &wrapper{}
	r.m.InitNode(&w.Node, tn)
	pn := physical.NewNode(r.table, tn, nil, physical.Transport{}, w)
	if NodeOf(pn) != &w.Node {
		t.Fatal("NodeOf does not find the Node a wrapper embeds")
	}
}

// TestDialFailed: what a failed dial tells the table, by its error.
func TestDialFailed(t *testing.T) {
	r := newRig(t, "none", "127.0.0.1:1")
	tn := r.table.Nodes(nil)[0]
	denied := &mysql.MySQLError{Number: 1045, Message: "Access denied"}
	for range 3 {
		r.m.DialFailed(context.Background(), tn, denied)
	}
	if v := r.table.Snapshot(nil)[0]; v.State != nodetable.Up || v.DialFailures != 3 {
		t.Fatalf("after 3 access denied: %v with %d dial failures, want up with 3", v.State, v.DialFailures)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.m.DialFailed(ctx, tn, context.Canceled)
	if v := r.table.Snapshot(nil)[0]; v.DialFailures != 3 {
		t.Fatalf("a dial the caller cancelled counted against the node: %d failures", v.DialFailures)
	}
	for range 2 {
		r.m.DialFailed(context.Background(), tn, errors.New("connection refused"))
	}
	if v := r.table.Snapshot(nil)[0]; v.State != nodetable.Down {
		t.Fatalf("after two failed dials: %v, want down", v.State)
	}
}

// TestFailoverWaiters: at most MaxFailoverWaiters Connects wait at once, the one beyond fails
// at once and is counted refused; a change of the topology wakes a wait, its deadline and Close
// end it; a wait the budget cannot pay for fails at once.
func TestFailoverWaiters(t *testing.T) {
	r := newRig(t, "none", "127.0.0.1:1")
	r.m.cfg.MaxFailoverWaiters = 1
	changed := r.m.Topology()
	woke := make(chan bool, 1)
	go func() {
		ok, err := r.m.AwaitTarget(context.Background(), role.PrimaryOnly, time.Now().Add(time.Minute), changed)
		if err != nil {
			t.Error(err)
		}
		woke <- ok
	}()
	testkit.WaitFor(t, 10*time.Second, "the first waiter", func() bool { w, _ := r.m.Waiting(); return w == 1 })
	_, err := r.m.AwaitTarget(context.Background(), role.PrimaryOnly, time.Now().Add(time.Minute), changed)
	if !errors.Is(err, ErrFailoverWaitersFull) || !strings.Contains(err.Error(), "target=primary") {
		t.Fatalf("a second waiter beyond MaxFailoverWaiters=1: %v, want ErrFailoverWaitersFull naming the target", err)
	}
	if w, refused := r.m.Waiting(); w != 1 || refused != 1 {
		t.Fatalf("Waiting() = %d, %d; want 1 waiting, 1 refused", w, refused)
	}
	r.m.TopologyChanged()
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("a wait woken by a change reported nothing worth picking again")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a change of the topology did not wake the wait")
	}
	if w, _ := r.m.Waiting(); w != 0 {
		t.Fatalf("%d still waiting after the wait ended", w)
	}
	if ok, err := r.m.AwaitTarget(context.Background(), role.Any, time.Now().Add(20*time.Millisecond), r.m.Topology()); ok || err != nil {
		t.Fatalf("a wait whose deadline passed: %v, %v; want false, nil", ok, err)
	}
	r.closed.Store(true)
	close(r.stop)
	start := time.Now()
	if ok, _ := r.m.AwaitTarget(context.Background(), role.Any, time.Now().Add(time.Minute), r.m.Topology()); ok || time.Since(start) > 10*time.Second {
		t.Fatal("a wait did not end at Close")
	}
	r.m.budget = budget.New(0, 0)
	if _, err := r.m.AwaitTarget(context.Background(), role.Any, time.Now().Add(time.Minute), r.m.Topology()); !errors.Is(err, ErrRetryBudget) {
		t.Fatalf("a wait with the budget spent: %v, want ErrRetryBudget", err)
	}
	if w, _ := r.m.Waiting(); w != 0 {
		t.Fatalf("%d still waiting after a refused wait", w)
	}
}
