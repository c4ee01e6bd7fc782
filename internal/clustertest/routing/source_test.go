package routing

import (
	"github.com/lbd-go/lbd"

	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

func TestSourceDrivesTheNodeList(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	addrs := cl.Addrs()
	src := nodestest.New(addrs[0], addrs[1])
	logs := &testkit.Logs{}
	dsn := strings.Replace(cl.DSN(""), strings.Join(addrs, ","), "", 1) // user:pass@lb()/db
	c, err := lbd.NewConnector(dsn, append(clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs), lbd.WithSource(src))...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Ready(t, c)
	if got := c.Stats().Nodes; len(got) != 2 {
		t.Fatalf("initial nodes %v, want the source's two", got)
	}
	if err := src.Push(nodestest.SetOf(addrs[1], addrs[2])); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the third proxy up and the first gone", func() bool {
		s, ok := clusterkit.NodeState(c, addrs[2])
		_, first := clusterkit.NodeState(c, addrs[0])
		return ok && s == lbd.StateUp && !first
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !src.Closed() {
		t.Fatal("Close did not close the source")
	}
}

type failingSource struct{ closed bool }

func (f *failingSource) Start(context.Context, func(nodes.Set)) (nodes.Set, error) {
	return nodes.Set{}, errors.New("config-server said 500")
}
func (f *failingSource) Close() error { f.closed = true; return nil }

func TestSourceThatCannotStart(t *testing.T) {
	t.Parallel()
	src := &failingSource{}
	c, err := lbd.NewConnector("u:p@lb()/db", lbd.WithSource(src), lbd.WithLogger(clusterkit.DiscardLogger()))
	if err != nil {
		t.Fatalf("NewConnector = %v; the source starts in the background", err)
	}
	defer c.Close()
	for _, wait := range []func() error{
		func() error { return c.Ready(context.Background()) },
		func() error { _, err := c.Connect(context.Background()); return err },
	} {
		err := wait()
		if err == nil || !strings.Contains(err.Error(), "config-server said 500") || !strings.Contains(err.Error(), "build a new Connector") {
			t.Fatalf("got %v, want the source's error and what to do", err)
		}
	}
	if !src.closed {
		t.Fatal("a source that failed to start was not closed")
	}
}

// nodes.Register refuses the static list's network, lbd.Network, as well as an empty name.
func TestRegisterRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", lbd.Network} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("nodes.Register(%q) did not panic", name)
				}
			}()
			nodes.Register(name, nodes.SourceFactory{New: func(nodes.SourceConfig) (nodes.Source, error) { return nil, nil }})
		}()
	}
}

func TestRegisteredSourceNetwork(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	var got nodes.SourceConfig
	newSource := func(sc nodes.SourceConfig) (nodes.Source, error) {
		got = sc
		return nodes.StaticAddrs(cl.Addrs()...), nil
	}
	testSourceNew.Store(&newSource)
	registerTestSource.Do(func() {
		nodes.Register("lbtestsrc", nodes.SourceFactory{
			Params: []string{"testSourceKey"},
			New: func(sc nodes.SourceConfig) (nodes.Source, error) {
				return (*testSourceNew.Load())(sc)
			},
		})
	})
	dsn := cl.User() + ":" + cl.Password() + "@lbtestsrc(anything, here)/" + cl.Database() + "?testSourceKey=v1&parseTime=true"
	cfg, err := lbd.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SourceParams["testSourceKey"] != "v1" || cfg.MySQL.Params != nil || len(cfg.SourceAddrs) != 2 || cfg.SourceAddrs[1] != "here" {
		t.Fatalf("parsed %+v / %+v", cfg, cfg.MySQL.Params)
	}
	if back, err := lbd.ParseDSN(cfg.FormatDSN()); err != nil || back.SourceParams["testSourceKey"] != "v1" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := lbd.ParseDSN(strings.Replace(dsn, "testSourceKey", "testsourcekey", 1)); err == nil {
		t.Fatal("a misspelt source parameter was accepted")
	}
	c2, err := lbd.NewConnector(dsn, append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	testkit.Ready(t, c2)
	if got.Network != "lbtestsrc" || got.Params["testSourceKey"] != "v1" {
		t.Fatalf("factory got %+v", got)
	}
	if len(c2.Stats().Nodes) != 2 {
		t.Fatalf("connector has %d nodes, want the source's 2", len(c2.Stats().Nodes))
	}
}

func TestStandbyNodesAreProbedButTakeNoConnections(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 2)
	a, b := cl.Addrs()[0], cl.Addrs()[1]
	src := &healthSource{Manual: nodestest.New(a)}
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "", append(clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs), lbd.WithSource(src))...)
	if src.health == nil {
		t.Fatal("a HealthAware source was not given the Connector's health view")
	}
	if err := src.Push(nodes.Set{Nodes: []nodes.Node{{Addr: a}, {Addr: b, Standby: true}}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the standby node to pass probes", func() bool {
		up, good, ok := src.health.NodeHealth(b)
		return ok && up && good >= 2
	})
	db.SetMaxIdleConns(10)
	holdAndRelease := func() {
		for _, cn := range testkit.HoldConns(t, db, 6) {
			cn.Close()
		}
	}
	holdAndRelease()
	if ns, _ := c.Stats().Node(b); ns.Open != 0 || !ns.Standby || ns.State != lbd.StateUp {
		t.Fatalf("standby node: %+v, want up, standby, no connection", ns)
	}
	if err := src.Push(nodes.Set{Nodes: []nodes.Node{{Addr: a}, {Addr: b}}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the node to leave standby", func() bool {
		ns, _ := c.Stats().Node(b)
		return !ns.Standby
	})
	db.SetMaxIdleConns(0) // drop the pooled ones so new dials happen
	db.SetMaxIdleConns(10)
	holdAndRelease()
	if ns, _ := c.Stats().Node(b); ns.Open == 0 {
		t.Fatalf("node out of standby took no connection: %+v", ns)
	}
	if _, _, ok := src.health.NodeHealth("127.0.0.1:1"); ok {
		t.Fatal("health view knows a node that is not listed")
	}
}

// healthSource is a manual source that keeps the health view it is given.
type healthSource struct {
	*nodestest.Manual
	health nodes.Health
}

func (h *healthSource) UseHealth(hv nodes.Health) { h.health = hv }

var (
	registerTestSource sync.Once
	testSourceNew      atomic.Pointer[func(nodes.SourceConfig) (nodes.Source, error)]
)
