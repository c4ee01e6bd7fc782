package faults

import (
	"github.com/lbd-go/lbd"

	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// transitionOf returns the first transition of addr to state to in c's recent list at or
// after since.
func transitionOf(c *lbd.Connector, addr string, to lbd.NodeState, since time.Time) (lbd.Transition, bool) {
	for _, x := range c.Stats().Recent {
		if x.Node == addr && x.To == to && !x.At.Before(since) {
			return x, true
		}
	}
	return lbd.Transition{}, false
}

// TestShortHangIsEjectedPassively: at the default settings (a probe every 5 s), a proxy that
// hangs for 2 s under load is taken out by what the statements see, before the hang ends, and
// comes back after it.
func TestShortHangIsEjectedPassively(t *testing.T) {
	const hangFor = 2 * time.Second
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "")
	db.SetMaxOpenConns(12)
	db.SetMaxIdleConns(12)
	w := clusterkit.StartWorkload(t, db, 12)
	testkit.WaitFor(t, 10*time.Second, "statements flowing through every proxy", func() bool {
		for _, p := range cl.Proxies() {
			if p.Statements() < 100 {
				return false
			}
		}
		return true
	})
	hung := cl.Proxy(1)
	hungAt := time.Now()
	hung.Hang()
	time.Sleep(hangFor) // the length of the fault, not a verdict
	hung.Resume()
	resumedAt := time.Now()

	down, ok := transitionOf(c, hung.Addr(), lbd.StateDown, hungAt)
	if !ok {
		t.Fatalf("the proxy hung for %v and was never taken down; transitions: %+v", hangFor, c.Stats().Recent)
	}
	if down.Cause != lbd.CausePassive {
		t.Errorf("taken down by %v (%s), want a passive ejection", down.Cause, down.Reason)
	}
	if !down.At.Before(resumedAt) {
		t.Errorf("taken down %v after the hang ended", down.At.Sub(resumedAt))
	}
	t.Logf("taken down %v into the hang: %s", down.At.Sub(hungAt), down.Reason)

	testkit.WaitFor(t, 30*time.Second, "the proxy back up", func() bool {
		_, ok := transitionOf(c, hung.Addr(), lbd.StateUp, resumedAt)
		return ok
	})
	w.Progress(t, 5*time.Second, 100)
	failed := clusterkit.Failures(w)
	for _, o := range failed {
		if !o.Start.Before(down.At) {
			t.Errorf("statement started %v after the ejection failed: %v", o.Start.Sub(down.At), o.Err)
		}
	}
	t.Logf("%d statements, %d failed, all started before the ejection", w.Count(), len(failed))
}

// TestServerErrorsAreNoSignal: errors the server answers with say nothing about the proxy.
// Probes wait an hour: a probe would take one of the injected errors and fail.
func TestServerErrorsAreNoSignal(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "checkHealthIntervalSeconds=3600")
	db.SetMaxOpenConns(3)
	for _, p := range cl.Proxies() {
		p.FailNext(20, &mysql.MySQLError{Number: 1062, Message: "Duplicate entry '1' for key 'PRIMARY'"})
	}
	errs := 0
	for range 60 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			errs++
		}
		if _, err := db.Exec("SELEC 1"); err == nil {
			t.Fatal("a syntax error went through")
		}
	}
	if errs == 0 {
		t.Fatal("no injected error reached the application")
	}
	for _, ns := range c.Stats().Nodes {
		if ns.PassiveSignals != 0 || ns.State != lbd.StateUp {
			t.Errorf("%s: %d passive signals, %v, after %d server errors; want none, up", ns.Addr, ns.PassiveSignals, ns.State, errs+60)
		}
	}
}
