package lbd

import (
	"database/sql"
	"flag"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/lbdtest"
)

// TestMain fails the package when any goroutine outlives the tests: every Connector, probe,
// rebalancer and stats loop must stop on Close.
//
// The hostile suite's parallel cases wait on deadlines and probes rather than the CPU, so
// unless -test.parallel is given, up to hostileParallel of them run at once.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(hostileParallel))
	}
	goleak.VerifyTestMain(m)
}

// hostileParallel is how many hostile cases run at once by default.
const hostileParallel = 6

func TestCloseLeavesNothingBehind(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	before := goleak.IgnoreCurrent()
	logs := &logRecorder{}
	c, err := NewConnector(cl.DSN("logStats=true"), fast(250*time.Millisecond, 250*time.Millisecond, 100*time.Millisecond, logs)...)
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
	goleak.VerifyNone(t, before)
}
