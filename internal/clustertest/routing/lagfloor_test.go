package routing

import (
	"github.com/lbd-go/lbd"

	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// TestLagFloorOnTheEmulation: a primary and two replicas (lbdtest's roles), both replicas
// lagging past maxReplicationLagSeconds (3 s and 5 s behind, a limit of 1 s). With the default
// floor of one, the replica 3 s behind keeps serving reads and the other takes none; a scope's
// read right after its write still goes to the primary, for the kept replica's lag (the
// 300 ms window alone would have let it go to the replica); with minServingReplicas=0 every
// read goes to the primary, as before.
func TestLagFloorOnTheEmulation(t *testing.T) {
	for _, floor := range []string{"", "0"} {
		name := "default"
		if floor != "" {
			name = "off"
		}
		t.Run(name, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			for _, p := range cl.Proxies()[1:] {
				p.SetRole(lbdtest.Replica)
			}
			cl.Proxy(1).SetReplicationLag(5 * time.Second)
			cl.Proxy(2).SetReplicationLag(3 * time.Second)
			params := "balance=statement&readWriteSplit=true&roleCheck=mysql&maxReplicationLagSeconds=1"
			if floor != "" {
				params += "&minServingReplicas=" + floor
			}
			logs := &testkit.Logs{}
			db, c := clusterkit.OpenDB(t, cl, params, clusterkit.Fast(200*time.Millisecond, 200*time.Millisecond, time.Hour, logs)...)
			clusterkit.WaitForRoles(t, c, cl, func(i int) nodes.Role {
				if i == 0 {
					return nodes.RolePrimary
				}
				return nodes.RoleReplica
			})
			testkit.WaitFor(t, 5*time.Second, "both replicas lagging", func() bool {
				for _, p := range cl.Proxies()[1:] {
					if ns, _ := c.Stats().Node(p.Addr()); !ns.Lagging {
						return false
					}
				}
				return true
			})
			// Reads from 8 workers: where do they go?
			before := clusterkit.StatementCounts(cl)
			w := clusterkit.StartWorkload(t, db, 8)
			w.Progress(t, 10*time.Second, 2000)
			w.Stop()
			if fails := w.Failures(); len(fails) > 0 {
				t.Fatalf("%d reads failed, first: %v", len(fails), fails[0].Err)
			}
			after := clusterkit.StatementCounts(cl)
			for i := range after {
				after[i] -= before[i]
			}
			st := c.Stats()
			r1, _ := st.Node(cl.Proxy(1).Addr())
			r2, _ := st.Node(cl.Proxy(2).Addr())
			t.Logf("statements per proxy (primary, 5 s behind, 3 s behind): %v; floor: %v %v", after, r1.LagFloor, r2.LagFloor)
			if floor == "0" {
				if r1.Reads+r2.Reads != 0 || r1.LagFloor || r2.LagFloor {
					t.Fatalf("with no floor, lagging replicas ran %d and %d reads (floor %v %v), want none", r1.Reads, r2.Reads, r1.LagFloor, r2.LagFloor)
				}
				return
			}
			if !r2.LagFloor || r1.LagFloor || !r2.Lagging {
				t.Fatalf("floor flags: 5 s behind %v, 3 s behind %v (lagging %v); want only the replica 3 s behind kept, still shown lagging", r1.LagFloor, r2.LagFloor, r2.Lagging)
			}
			if r1.Reads != 0 || r2.Reads < 500 {
				t.Fatalf("reads on the replicas: %d on the one 5 s behind, %d on the one 3 s behind; want none and a fair share", r1.Reads, r2.Reads)
			}
			// Read-your-writes: the write's scope reads from the primary though its 300 ms
			// window has passed, while the kept replica is 3 s behind.
			ctx := lbd.ReadYourWrites(context.Background())
			if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS lagfloor_t (id INT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			clusterkit.DropOnBackend(t, cl, "lagfloor_t")
			time.Sleep(500 * time.Millisecond) // past readAfterWriteMillis (300 ms), within the replica's lag
			for i := range 10 {
				mark := fmt.Sprintf("/* ryw %d */", i)
				var n int
				if err := db.QueryRowContext(ctx, "SELECT "+mark+" COUNT(*) FROM lagfloor_t").Scan(&n); err != nil {
					t.Fatal(err)
				}
				for _, p := range cl.Proxies()[1:] {
					for _, q := range p.Queries() {
						if strings.Contains(q, mark) {
							t.Fatalf("read %d of a scope that wrote 0.5 s before ran on a replica 3 s behind", i)
						}
					}
				}
			}
		})
	}
}
