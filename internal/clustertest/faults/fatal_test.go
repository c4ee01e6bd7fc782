package faults

import (
	"github.com/lbd-go/lbd"

	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

var (
	errServerInitializing = &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "Server is initializing"}
	errNoSuchTable        = &mysql.MySQLError{Number: 1146, SQLState: [5]byte{'4', '2', 'S', '0', '2'}, Message: "Table 'test.nope' doesn't exist"}
)

func TestFatalErrorRetiresItsConnection(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	p := cl.Proxy(0)
	p.FailNext(1, errServerInitializing)
	_, err := db.Exec("SELECT 1")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 8001 {
		t.Fatalf("error = %v, want the proxy's 8001 unchanged", err)
	}
	ns := c.Stats().Nodes[0]
	if ns.FatalErrors != 1 || ns.Retired != 1 {
		t.Fatalf("fatal errors %d, retired %d; want 1 and 1", ns.FatalErrors, ns.Retired)
	}
	if ns.Open != 0 || ns.State != lbd.StateUp {
		t.Fatalf("after one fatal error: open %d, state %v; want 0 and up (one error does not block)", ns.Open, ns.State)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatalf("statement after the fatal error: %v", err)
	}
	if got := c.Stats().Nodes[0].Dials; got != 2 {
		t.Fatalf("dials = %d, want 2 (the retired connection was replaced, never reused)", got)
	}
}

func TestNonFatalErrorKeepsTheConnection(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	cl.Proxy(0).FailNext(1, errNoSuchTable)
	if _, err := db.Exec("SELECT 1"); err == nil {
		t.Fatal("the injected 1146 did not reach the caller")
	}
	for range 5 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	ns := c.Stats().Nodes[0]
	if ns.Retired != 0 || ns.FatalErrors != 0 || ns.Dials != 1 {
		t.Fatalf("retired %d, fatal %d, dials %d; want 0, 0, 1", ns.Retired, ns.FatalErrors, ns.Dials)
	}
}

func TestRepeatedFatalErrorsTakeTheNodeDown(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	// No scheduled probe runs (the first is an hour away), so only application errors can
	// start the node's way down: the threshold, or the early probe a fatal error triggers.
	// No idle connection is kept, so every statement is a fresh pick and the bad node gets
	// its share.
	opts := append(clusterkit.Fast(time.Hour, time.Hour, time.Hour, logs), lbd.WithJitter(func(max time.Duration) time.Duration { return max - 1 }))
	db, c := clusterkit.OpenDB(t, cl, "fatalErrorThreshold=3&recoverCheckCount=2", opts...)
	db.SetMaxIdleConns(0)
	bad := cl.Proxy(1)
	bad.FailNext(-1, errServerInitializing)
	failures := 0
	for range 300 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			failures++
		}
	}
	if s, _ := clusterkit.NodeState(c, bad.Addr()); s != lbd.StateDown {
		t.Fatalf("node answering 8001 to everything is %v, want down", s)
	}
	if failures < 1 || failures > 3 {
		t.Fatalf("%d statements failed, want 1 to the threshold (3): the node's fatal errors must take it down", failures)
	}
	clusterkit.WaitForTransition(t, c, logs, bad.Addr(), lbd.StateDown)
	downs := logs.Match("lbd: node state changed", "node", bad.Addr(), "to", "down")
	if len(downs) != 1 {
		t.Fatalf("%d down transitions logged, want 1", len(downs))
	}
	t.Logf("%d application errors before the node went down: %s", failures, downs[0].Attrs["reason"])
}

func TestFatalNodeComesBackAfterRecoveryProbes(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "fatalErrorThreshold=2", clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	bad := cl.Proxy(0)
	bad.FailNext(-1, errServerInitializing)
	testkit.WaitFor(t, 5*time.Second, "the failing node to go down", func() bool {
		db.Exec("SELECT 1")
		s, _ := clusterkit.NodeState(c, bad.Addr())
		return s == lbd.StateDown
	})
	bad.FailNext(0, nil)
	clusterkit.WaitForTransition(t, c, logs, bad.Addr(), lbd.StateUp)
	if ups := logs.Match("lbd: node state changed", "node", bad.Addr(), "to", "up"); len(ups) != 1 {
		t.Fatalf("%d up transitions logged, want 1", len(ups))
	}
}

func TestCustomSorterByOption(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	everything := exception.SorterFunc(func(err error) bool { return err != nil })
	db, c := clusterkit.OpenDB(t, cl, "", append(clusterkit.Quiet(), lbd.WithExceptionSorter(everything))...)
	db.SetMaxOpenConns(1)
	// The connection first, so that the statements lbd sends with a session's first command
	// (session tracking's, on MariaDB) are answered before the failure is injected: the relay
	// answers an injected failure at once, ahead of what it still waits for from the server.
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	// By text, not FailNext: a probe may reach the proxy before the application's statement.
	cl.Proxy(0).FailQueries("SELECT 1", errNoSuchTable)
	if _, err := db.Exec("SELECT 1"); err == nil {
		t.Fatal("SELECT 1 succeeded; the proxy was told to fail it")
	}
	cl.Proxy(0).FailQueries("", nil)
	if got := c.Stats().Nodes[0].FatalErrors; got != 1 {
		t.Fatalf("fatal errors = %d with a sorter that calls everything fatal, want 1", got)
	}
}

func TestNodeOfError(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	var served string
	for _, ns := range c.Stats().Nodes {
		if ns.Open == 1 {
			served = ns.Addr
		}
	}
	for _, p := range cl.Proxies() {
		p.FailNext(1, errServerInitializing)
	}
	_, err := db.Exec("SELECT 1")
	if err == nil {
		t.Fatal("no error injected")
	}
	addr, ok := c.NodeOfError(fmt.Errorf("wrapped: %w", err))
	if !ok || addr != served {
		t.Fatalf("NodeOfError = %q, %v; want %q", addr, ok, served)
	}
	if _, ok := c.NodeOfError(errors.New("something else")); ok {
		t.Fatal("NodeOfError matched an error it never saw")
	}
	if c.ExceptionSorter() == nil {
		t.Fatal("no sorter reported")
	}
}
