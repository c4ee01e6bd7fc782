package routing

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// groupDSN is cl's DSN with the proxy of index bi written in group "bi" (host:port+bi).
func groupDSN(cl *lbdtest.Cluster, bi int, params string) string {
	addr := cl.Proxy(bi).Addr()
	return strings.Replace(cl.DSN(params), addr, addr+"+bi", 1)
}

// The analytics isolation case: a primary, two replicas for the application, and a replica set
// aside for BI (group "bi", isolated). With the read/write split at the defaults, 16 workers of
// everyday reads and writes never reach the BI replica; BI reads (lbd.InGroup) run on it and
// nowhere else, while its writes still go to the primary.
func TestIsolatedGroupTakesOnlyItsOwnReads(t *testing.T) {
	cl := lbdtest.NewCluster(t, 4)
	for _, p := range cl.Proxies()[1:] {
		p.SetRole(lbdtest.Replica)
	}
	const bi = 3
	c, err := lbd.NewConnector(groupDSN(cl, bi, "balance=statement&readWriteSplit=true&roleCheck=mysql&interpolateParams=true&isolatedGroups=bi"),
		append(clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, &testkit.Logs{}), lbd.WithLogger(clusterkit.DiscardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	testkit.Ready(t, c)
	db.SetMaxOpenConns(32)
	clusterkit.WaitForRoles(t, c, cl, func(i int) nodes.Role {
		if i == 0 {
			return nodes.RolePrimary
		}
		return nodes.RoleReplica
	})
	tbl := fmt.Sprintf("grp_%d", time.Now().UnixNano())
	clusterkit.DropOnBackend(t, cl, tbl)
	if _, err := db.Exec("CREATE TABLE " + tbl + " (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}

	// Everyday work, no group chosen: 16 workers, 80 % reads, each worker its own
	// read-your-writes scope; twelve only read, so their reads go to the replicas.
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			ctx := lbd.ReadYourWrites(context.Background())
			for i := range 50 {
				var err error
				if w < 4 {
					_, err = db.ExecContext(ctx, "INSERT INTO "+tbl+" (id, v) VALUES (?, ?)", w*1000+i, i)
				} else {
					err = db.QueryRowContext(ctx, "SELECT COUNT(*) AS oltp FROM "+tbl).Scan(new(int))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	reads, writes := countQueries(cl, "SELECT COUNT(*) AS oltp"), countQueries(cl, "INSERT INTO "+tbl)
	if reads[bi] != 0 || writes[bi] != 0 {
		t.Fatalf("the BI replica ran %d everyday reads and %d writes, want none", reads[bi], writes[bi])
	}
	if reads[1] == 0 || reads[2] == 0 || writes[0] != 200 {
		t.Fatalf("everyday reads %v, writes %v: want reads on both application replicas and every write on the primary", reads, writes)
	}

	// BI work, its context choosing the group: reads on the BI replica alone; a write (a BI
	// job's bookkeeping) still goes to the primary, which the group does not have.
	ctx := lbd.InGroup(lbd.ReadYourWrites(context.Background()), "bi")
	for range 40 {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) AS bi FROM "+tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if _, err := db.ExecContext(ctx, "UPDATE "+tbl+" SET v = v + 1 WHERE id = ?", i); err != nil {
			t.Fatal(err)
		}
	}
	biReads, biWrites := countQueries(cl, "SELECT COUNT(*) AS bi"), countQueries(cl, "UPDATE "+tbl)
	if biReads[0] != 0 || biReads[1] != 0 || biReads[2] != 0 || biReads[bi] != 40 {
		t.Fatalf("BI reads per proxy %v: want all 40 on the BI replica", biReads)
	}
	if biWrites[0] != 4 || biWrites[bi] != 0 {
		t.Fatalf("BI writes per proxy %v: want every one on the primary", biWrites)
	}
	if ns, _ := c.Stats().Node(cl.Proxy(bi).Addr()); len(ns.Groups) != 1 || ns.Groups[0] != "bi" || ns.Reads == 0 {
		t.Fatalf("Stats of the BI replica: groups %v, %d reads", ns.Groups, ns.Reads)
	}
}

// In connection mode a Connector with group=bi is a pool of the BI replica alone, from the same
// list the application's Connector reads.
func TestGroupConnectorIsAPoolOfItsGroup(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	const bi = 2
	c, err := lbd.NewConnector(groupDSN(cl, bi, "group=bi"), append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				var n int
				if err := db.QueryRow("SELECT 2 AS bi_pool").Scan(&n); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := countQueries(cl, "SELECT 2 AS bi_pool"); got[0] != 0 || got[1] != 0 || got[bi] != 80 {
		t.Fatalf("statements per proxy %v, want all 80 on the BI replica", got)
	}
	if open := clusterkit.OpenCounts(c, cl); open[0] != 0 || open[1] != 0 || open[bi] == 0 {
		t.Fatalf("open connections per proxy %v, want them on the BI replica alone", open)
	}
}
