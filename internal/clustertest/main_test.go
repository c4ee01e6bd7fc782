package clustertest

import (
	"database/sql"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the package when any goroutine outlives the tests: every Connector, probe,
// rebalancer and stats loop must stop on Close.
//
// The tests that call t.Parallel wait on sleeps, outages and deadlines rather than the CPU, or
// take milliseconds, and judge no time tightly, so unless -test.parallel is given, up to
// clusterParallel of them run at once. Go runs the other tests first, one at a time and alone:
// those that judge shares, latencies or how soon a fault is seen (probes at intervals of
// 50-500 ms whose timeouts a busy process misses), those that keep the CPU busy on their own
// (thousands of statements or dials: beside each other they stretched from 3 s to 25 s and ran
// out of their waits), those that count the process's goroutines, and those that change
// process-wide state (registrations, the environment).
func TestMain(m *testing.M) {
	testkit.DefaultParallel(clusterParallel)
	testkit.VerifyTestMain(m)
}

// clusterParallel is how many functional tests run at once by default.
const clusterParallel = 4

func TestCloseLeavesNothingBehind(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	before := testkit.IgnoreCurrent()
	logs := &logRecorder{}
	c, err := lbd.NewConnector(cl.DSN("logStats=true"), fast(250*time.Millisecond, 250*time.Millisecond, 100*time.Millisecond, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(10)
	w := startWorkload(t, db, 10)
	waitFor(t, 5*time.Second, "probes and statements on every proxy", func() bool {
		for _, ns := range c.Stats().Nodes {
			if ns.Probes == 0 || ns.Dials == 0 {
				return false
			}
		}
		return true
	})
	if f := failures(w); len(f) > 0 {
		t.Fatalf("workload errors: %v", f[0].Err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "every proxy to see 0 open connections", func() bool {
		for _, p := range cl.Proxies() {
			if p.OpenConns() != 0 {
				return false
			}
		}
		return true
	})
	testkit.VerifyNone(t, before)
}
