package routing

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// TestRolesFromTheStaticList: with roles written in the DSN's list (no role check) and
// target=primary, every new connection goes to the listed primary; a node list that swaps the
// roles moves new connections to the new primary, and the old primary's connections are
// retired as for a drain: the idle ones close at once, the one in use keeps working and closes
// at its return.
func TestRolesFromTheStaticList(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	addrs := cl.Addrs()
	entries := []string{addrs[0] + "#primary", addrs[1] + "*2#replica", addrs[2] + "#standby"}
	dsn := fmt.Sprintf("%s:%s@lb(%s)/%s?target=primary", cl.User(), cl.Password(), strings.Join(entries, ","), cl.Database())
	c, err := lbd.NewConnector(dsn, append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()), lbd.WithWarmup(0))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	testkit.Ready(t, c)
	db.SetMaxIdleConns(20)

	for i, want := range []nodes.Role{nodes.RolePrimary, nodes.RoleReplica, nodes.RoleStandby} {
		if ns, _ := c.Stats().Node(addrs[i]); ns.Role != want {
			t.Fatalf("%s has role %s, want %s from the DSN", addrs[i], ns.Role, want)
		}
	}
	held := testkit.HoldConns(t, db, 8)
	if got := clusterkit.OpenCounts(c, cl); !slices.Equal(got, []int{8, 0, 0}) {
		t.Fatalf("open connections per proxy %v, want all 8 on the listed primary", got)
	}
	keep := held[0] // stays checked out across the switch
	for _, cn := range held[1:] {
		cn.Close() // back to the pool, idle
	}

	// The switchover: the replica becomes the primary.
	if err := c.SetNodes([]string{addrs[0] + "#replica", addrs[1] + "*2#primary", addrs[2] + "#standby"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the old primary's idle connections to close", func() bool {
		ns, _ := c.Stats().Node(addrs[0])
		return ns.Open == 1
	})
	if ns, _ := c.Stats().Node(addrs[0]); ns.Role != nodes.RoleReplica || ns.RetiredBy[lbd.RetireRole] != 8 {
		t.Fatalf("old primary after the switch: role %s, %d retired for its role; want replica and all 8 (the one in use marked, to close at its return)", ns.Role, ns.RetiredBy[lbd.RetireRole])
	}
	// The connection in use was not cut: it still runs statements, and closes at its return.
	if err := keep.PingContext(context.Background()); err != nil {
		t.Fatalf("the connection in use across the switch: %v", err)
	}
	var one int
	if err := keep.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("statement on the connection in use across the switch: %d, %v", one, err)
	}
	keep.Close()
	testkit.WaitFor(t, 5*time.Second, "the held connection to close at its return", func() bool {
		ns, _ := c.Stats().Node(addrs[0])
		return ns.Open == 0
	})

	for _, cn := range testkit.HoldConns(t, db, 8) {
		defer cn.Close()
	}
	if got := clusterkit.OpenCounts(c, cl); !slices.Equal(got, []int{0, 8, 0}) {
		t.Fatalf("open connections per proxy after the switch %v, want all 8 on the new primary", got)
	}
}
