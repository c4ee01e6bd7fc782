package routing

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// releaseAll returns held connections to the pool.
func releaseAll(t *testing.T, conns []*sql.Conn) {
	t.Helper()
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// view describes c's nodes (state, role) and its recent transitions, for a failure message.
func view(c *lbd.Connector, cl *lbdtest.Cluster) string {
	st := c.Stats()
	out := ""
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out += fmt.Sprintf(" %s %v %v;", a, ns.State, ns.Role)
	}
	for _, tr := range st.Recent {
		out += fmt.Sprintf("\n  %s %v>%v %v>%v %s", tr.Node, tr.From, tr.To, tr.RoleFrom, tr.RoleTo, tr.Reason)
	}
	return out
}

// waitForUpRoles waits until every proxy of cl is up in c's view with the role rs gives it by
// index.
func waitForUpRoles(t *testing.T, c *lbd.Connector, cl *lbdtest.Cluster, rs ...nodes.Role) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("every proxy up with roles %v", rs), func() bool {
		for i, a := range cl.Addrs() {
			if ns, _ := c.Stats().Node(a); ns.State != lbd.StateUp || ns.Role != rs[i] {
				return false
			}
		}
		return true
	})
}

// roleCheck=galera on lbdtest's Galera emulation: a node that is not Synced (a donor) becomes
// a standby, takes no new connection and sees its idle ones retired; once Synced again it is a
// primary and takes connections.
func TestGaleraRoleCheckOnEmulation(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "roleCheck=galera", clusterkit.Fast(50*time.Millisecond, time.Second, time.Hour, logs)...)
	db.SetMaxIdleConns(12)
	P, S := nodes.RolePrimary, nodes.RoleStandby
	waitForUpRoles(t, c, cl, P, P, P)

	releaseAll(t, testkit.HoldConns(t, db, 6)) // two per node, idle in the pool
	donor := cl.Proxy(1)
	donor.SetRole(lbdtest.Standby)
	waitForUpRoles(t, c, cl, P, S, P)
	testkit.WaitFor(t, 5*time.Second, "the donor's idle connections to close", func() bool { return clusterkit.OpenCounts(c, cl)[1] == 0 })
	held := testkit.HoldConns(t, db, 9)
	if got := clusterkit.OpenCounts(c, cl); got[1] != 0 || got[0]+got[2] < 9 {
		t.Fatalf("open per node %v while node 1 is a donor; want none on it", got)
	}
	ns, _ := c.Stats().Node(donor.Addr())
	if ns.State != lbd.StateUp || ns.RoleError != "" {
		t.Fatalf("the donor is %v (role error %q); want up, a standby by its answer", ns.State, ns.RoleError)
	}
	releaseAll(t, held)

	donor.SetRole(lbdtest.Primary)
	waitForUpRoles(t, c, cl, P, P, P)
	db.SetMaxIdleConns(0) // new connections from here on
	db.SetMaxIdleConns(12)
	held = testkit.HoldConns(t, db, 9)
	defer releaseAll(t, held)
	if got := clusterkit.OpenCounts(c, cl); got[1] == 0 {
		t.Fatalf("open per node %v once node 1 is Synced again; want some on it", got)
	}
}

// roleCheck=group-replication on lbdtest's Group Replication emulation: an ONLINE PRIMARY is the
// primary, an ONLINE SECONDARY a replica, a RECOVERING member a standby that takes nothing; a
// member that comes ONLINE takes its share.
func TestGroupReplicationRoleCheckOnEmulation(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	cl.Proxy(1).SetRole(lbdtest.Replica)
	cl.Proxy(2).SetRole(lbdtest.Standby)
	P, R, S := nodes.RolePrimary, nodes.RoleReplica, nodes.RoleStandby
	for _, tc := range []struct {
		target string
		want   func(open []int) bool
	}{
		{"primary", func(o []int) bool { return o[0] == 6 && o[1] == 0 && o[2] == 0 }},
		{"replica", func(o []int) bool { return o[0] == 0 && o[1] == 6 && o[2] == 0 }},
		{"any", func(o []int) bool { return o[0] == 3 && o[1] == 3 && o[2] == 0 }},
	} {
		t.Run(tc.target, func(t *testing.T) {
			logs := &testkit.Logs{}
			db, c := clusterkit.OpenDB(t, cl, "roleCheck=group-replication&target="+tc.target, clusterkit.Fast(50*time.Millisecond, time.Second, time.Hour, logs)...)
			waitForUpRoles(t, c, cl, P, R, S)
			held := testkit.HoldConns(t, db, 6)
			defer releaseAll(t, held)
			if got := clusterkit.OpenCounts(c, cl); !tc.want(got) {
				t.Fatalf("target=%s: open per node %v;%s", tc.target, got, view(c, cl))
			}
		})
	}

	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "roleCheck=group-replication&target=replica", clusterkit.Fast(50*time.Millisecond, time.Second, time.Hour, logs)...)
	waitForUpRoles(t, c, cl, P, R, S)
	cl.Proxy(2).SetRole(lbdtest.Replica) // RECOVERING -> ONLINE
	waitForUpRoles(t, c, cl, P, R, R)
	held := testkit.HoldConns(t, db, 6)
	defer releaseAll(t, held)
	if got := clusterkit.OpenCounts(c, cl); got[0] != 0 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("target=replica after member 2 came ONLINE: open per node %v, want 0 3 3", got)
	}
}

// roleCheck=galera with singleWriter=true on lbdtest's emulation: the first Synced node in the
// list is the one primary and the others replicas; when it becomes a donor the next one writes,
// and it writes again once Synced.
func TestGaleraSingleWriterOnEmulation(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	opts := clusterkit.Fast(50*time.Millisecond, time.Second, time.Hour, logs)
	writes, wc := clusterkit.OpenDB(t, cl, "roleCheck=galera&singleWriter=true&target=primary", opts...)
	reads, c := clusterkit.OpenDB(t, cl, "roleCheck=galera&singleWriter=true&target=replica", opts...)
	P, R, S := nodes.RolePrimary, nodes.RoleReplica, nodes.RoleStandby
	waitForUpRoles(t, c, cl, P, R, R)
	waitForUpRoles(t, wc, cl, P, R, R)
	check := func(db *sql.DB, c *lbd.Connector, want string) {
		t.Helper()
		db.SetMaxIdleConns(0)
		held := testkit.HoldConns(t, db, 6)
		defer releaseAll(t, held)
		if got := fmt.Sprint(clusterkit.OpenCounts(c, cl)); got != want {
			t.Fatalf("open per proxy %s, want %s;%s", got, want, view(c, cl))
		}
	}
	check(writes, wc, "[6 0 0]")
	check(reads, c, "[0 3 3]")
	cl.Proxy(0).SetRole(lbdtest.Standby) // the writer becomes a donor
	waitForUpRoles(t, c, cl, S, P, R)
	waitForUpRoles(t, wc, cl, S, P, R)
	check(writes, wc, "[0 6 0]")
	check(reads, c, "[0 0 6]")
	cl.Proxy(0).SetRole(lbdtest.Primary)
	waitForUpRoles(t, wc, cl, P, R, R)
	check(writes, wc, "[6 0 0]")
}
