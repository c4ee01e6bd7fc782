package routing

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

// pairDSN is the split over the MariaDB pair at the defaults but for params.
func pairDSN(t *testing.T, params string) (dsn, primary, replica string) {
	t.Helper()
	pCfg, _ := mysql.ParseDSN(os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN"))
	rCfg, _ := mysql.ParseDSN(os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	return fmt.Sprintf("%s:%s@lb(%s,%s)/%s?balance=statement&readWriteSplit=true&roleCheck=mysql&%s",
		pCfg.User, pCfg.Passwd, pCfg.Addr, rCfg.Addr, pCfg.DBName, params), pCfg.Addr, rCfg.Addr
}

// TestSplitReadsGoToTheReplicaOnThePair: at the defaults, plain reads after a write made
// elsewhere run on the replica of the real pair (before: 0 of 10, the primary being one more
// read candidate that won the turns), and with readConsistency=gtid, causal reads find their
// write, those the replica serves included, and plain reads after them still go to the
// replica: a causal wait is not the replica's latency (before: after reads that each waited
// about a second, its estimate stood at a second and it got none).
func TestSplitReadsGoToTheReplicaOnThePair(t *testing.T) {
	primaryDB, replicaDB := mariaDBPair(t)
	table := pairTable(t, primaryDB, replicaDB, "lbd_offload")
	for _, params := range []string{"", "readConsistency=gtid&readAfterWriteMillis=3000"} {
		t.Run("params="+params, func(t *testing.T) {
			dsn, pAddr, rAddr := pairDSN(t, params)
			db, c := clusterkit.OpenDSN(t, dsn)
			testkit.WaitFor(t, 15*time.Second, "the role checks", func() bool {
				p, _ := c.Stats().Node(pAddr)
				r, _ := c.Stats().Node(rAddr)
				return p.Role == nodes.RolePrimary && r.Role == nodes.RoleReplica
			})
			ctx := context.Background()
			if params != "" {
				// Causal reads: each waits on the delayed replica for its own write.
				for i := range 5 {
					sc := lbd.ReadYourWrites(ctx)
					id := time.Now().UnixNano() + int64(i)
					if _, err := db.ExecContext(sc, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, id)); err != nil {
						t.Fatal(err)
					}
					var n int
					if err := db.QueryRowContext(sc, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id = %d", table, id)).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n != 1 {
						t.Fatalf("a causal read missed its write (%d rows)", n)
					}
				}
				cs := c.Stats().Causal
				t.Logf("causal: %+v", cs)
				if cs.Waits+cs.Known == 0 {
					t.Errorf("causal stats %+v: no causal read was served by the replica", cs)
				}
			}
			if _, err := primaryDB.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", table, time.Now().UnixNano())); err != nil {
				t.Fatal(err)
			}
			before, _ := c.Stats().Node(rAddr)
			for range 10 {
				var n int
				if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s", table)).Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			after, _ := c.Stats().Node(rAddr)
			p, _ := c.Stats().Node(pAddr)
			t.Logf("replica: %d of 10 plain reads; latency estimates primary %v, replica %v (speed %.2f)",
				after.Reads-before.Reads, p.Latency, after.Latency, after.Speed)
			if got := after.Reads - before.Reads; got != 10 {
				t.Errorf("%d of 10 plain reads ran on the replica, want all 10", got)
			}
		})
	}
}
