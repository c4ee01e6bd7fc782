// Package routing tests where lbd sends connections and statements, and the Connector's own
// life: the node list from the DSN and from sources, roles and their checks (replication,
// Galera, group replication), the read/write split with read-your-writes and causal reads,
// replication lag, switchovers, zones, groups and read retries; connecting, errors,
// credentials, TLS and Close. The tests that need real MariaDB servers (those of the
// *_mariadb_test.go files, and a few beside them) skip unless the environment names them.
package routing

import (
	"database/sql"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }

func TestCloseLeavesNothingBehind(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	before := testkit.IgnoreCurrent()
	logs := &testkit.Logs{}
	c, err := lbd.NewConnector(cl.DSN("logStats=true"), clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, 100*time.Millisecond, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(10)
	w := clusterkit.StartWorkload(t, db, 10)
	testkit.WaitFor(t, 5*time.Second, "probes and statements on every proxy", func() bool {
		for _, ns := range c.Stats().Nodes {
			if ns.Probes == 0 || ns.Dials == 0 {
				return false
			}
		}
		return true
	})
	if f := clusterkit.Failures(w); len(f) > 0 {
		t.Fatalf("workload errors: %v", f[0].Err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "every proxy to see 0 open connections", func() bool {
		for _, p := range cl.Proxies() {
			if p.OpenConns() != 0 {
				return false
			}
		}
		return true
	})
	testkit.VerifyNone(t, before)
}
