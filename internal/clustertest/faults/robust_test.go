package faults

import (
	"github.com/lbd-go/lbd"

	"context"
	"errors"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// garbageServer accepts connections and answers with a truncated handshake that go-sql-driver
// cannot read (it panics on it without lbd's guard).
func garbageServer(t *testing.T) string {
	return testkit.Replay(t, []byte{3, 0, 0, 0, 0x0a, 'b', '0'})
}

func TestProxyAnsweringGarbageIsAnErrorNotACrash(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	bad := garbageServer(t)
	logs := &testkit.Logs{}
	dsn := cl.User() + ":" + cl.Password() + "@lb(" + bad + "," + cl.Addrs()[0] + ")/" + cl.Database() + "?timeout=1s"
	c, err := lbd.NewConnector(dsn, clusterkit.Fast(100*time.Millisecond, 100*time.Millisecond, time.Hour, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.WaitFor(t, 5*time.Second, "the garbage proxy to be probed down", func() bool {
		s, _ := clusterkit.NodeState(c, bad)
		return s == lbd.StateDown
	})
	for i := range 5 {
		cn, err := c.Connect(context.Background())
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		cn.Close()
	}
	ns, _ := c.Stats().Node(bad)
	if ns.Open != 0 || ns.LastError == "" {
		t.Fatalf("garbage proxy: %+v, want no open connection and a recorded error", ns)
	}
}

func TestCallerDeadlineIsNotBlamedOnNodes(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	_, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	for i := range 600 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%300)*time.Microsecond)
		if cn, err := c.Connect(ctx); err == nil {
			cn.Close()
		}
		cancel()
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp {
			t.Fatalf("node %s is %v after callers' deadlines expired: %s", ns.Addr, ns.State, ns.LastError)
		}
		if ns.Open != 0 {
			t.Fatalf("node %s holds %d connections after every caller gave up", ns.Addr, ns.Open)
		}
	}
}

func TestCloseCutsAHungDialShort(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	c, err := lbd.NewConnector(cl.DSN(""), append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...) // no timeout in the DSN
	if err != nil {
		t.Fatal(err)
	}
	cl.Proxy(0).Hang()
	defer cl.Proxy(0).Resume()
	accepted := cl.Proxy(0).TotalConns()
	done := make(chan error, 1)
	go func() {
		_, err := c.Connect(context.Background())
		done <- err
	}()
	// The hung proxy has accepted the dial's TCP connection: the dial now waits for a greeting
	// that never comes.
	testkit.WaitFor(t, 5*time.Second, "the hung proxy to accept the dial", func() bool { return cl.Proxy(0).TotalConns() > accepted })
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Connect to a hung proxy succeeded")
		}
		if !errors.Is(err, lbd.ErrClosed) && !errors.Is(err, context.Canceled) {
			t.Logf("Connect ended with %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not cut the hung dial short")
	}
	if ns := c.Stats().Nodes[0]; ns.Open != 0 || ns.State != lbd.StateUp {
		t.Fatalf("after Close: %+v, want no open connection and the node not blamed", ns)
	}
}
