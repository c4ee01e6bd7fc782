package nodetable

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// withRoles starts a table over list (addr and role) for target, with roles from role checks or
// from the source.
func withRoles(t *testing.T, target role.Target, checked bool, list ...nodes.Node) *harness {
	t.Helper()
	h := newHarnessWith(t, func(c *Config[*payload]) { c.Target, c.RoleCheck = target, checked })
	if err := h.tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	return h
}

func node(addr string, r nodes.Role) nodes.Node { return nodes.Node{Addr: addr, Role: r} }

// pickSet picks k times and releases each pick at once, returning how often each node came.
func (h *harness) pickSet(k int) map[string]int {
	got := map[string]int{}
	for range k {
		n := h.tab.Pick(nil)
		if n == nil {
			got["-"]++
			continue
		}
		got[n.Addr()]++
		h.tab.Release(n)
	}
	return got
}

func TestTargetsPickByRole(t *testing.T) {
	list := []nodes.Node{
		node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica), node("r:2", nodes.RoleReplica),
		node("u:1", nodes.RoleUnknown), node("s:1", nodes.RoleStandby),
	}
	for _, tc := range []struct {
		target role.Target
		want   string // the nodes picks reach, sorted
	}{
		{role.Any, "p:1 r:1 r:2 u:1"},
		{role.PrimaryOnly, "p:1"},
		{role.PreferPrimary, "p:1"},
		{role.ReplicaOnly, "r:1 r:2"},
		{role.PreferReplica, "r:1 r:2"},
	} {
		h := withRoles(t, tc.target, false, list...)
		// Held picks: the least-loaded rule spreads them over every node the target accepts.
		got := map[string]bool{}
		for _, a := range h.picks(8) {
			got[a] = true
		}
		if s := sortedKeys(got); s != tc.want {
			t.Errorf("%v picks %s, want %s", tc.target, s, tc.want)
		}
	}
}

func sortedKeys(m map[string]bool) string { return strings.Join(slices.Sorted(maps.Keys(m)), " ") }

func TestPreferredTierFallsBackOnlyWhenEmpty(t *testing.T) {
	h := withRoles(t, role.PreferReplica, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica))
	// The replica takes every pick while it is up, however loaded it gets.
	if got := h.picks(5); fmt.Sprint(got) != "[r:1 r:1 r:1 r:1 r:1]" {
		t.Fatalf("prefer-replica picks %v, want the replica every time", got)
	}
	h.tab.Probed(h.node("r:1"), h.now, errRefused, 0)
	if got := h.picks(2); fmt.Sprint(got) != "[p:1 p:1]" {
		t.Fatalf("with the replica down, picks %v, want the primary", got)
	}
	h2 := withRoles(t, role.ReplicaOnly, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica))
	h2.tab.Probed(h2.node("r:1"), h2.now, errRefused, 0)
	if got := h2.picks(1); got[0] != "-" {
		t.Fatalf("replica-only with the replica down picked %v, want nothing", got)
	}
}

func TestRoleCheckMovesANodeBetweenTargets(t *testing.T) {
	h := withRoles(t, role.PrimaryOnly, true, node("a:1", nodes.RoleUnknown), node("b:1", nodes.RoleUnknown))
	if got := h.picks(1); got[0] != "-" {
		t.Fatalf("primary-only before any role check picked %v, want nothing (roles unknown)", got)
	}
	a, b := h.node("a:1"), h.node("b:1")
	h.tab.RoleChecked(a, nodes.RolePrimary, nil)
	h.tab.RoleChecked(b, nodes.RoleReplica, nil)
	h.tab.RoleChecked(b, nodes.RoleReplica, nil) // no change, no report
	h.wantTransitions("a:1 role unknown>primary", "b:1 role unknown>replica")
	if got := h.pickSet(4); got["a:1"] != 4 {
		t.Fatalf("picks %v, want all on the primary", got)
	}
	// A failed check changes nothing.
	h.tab.RoleChecked(a, nodes.RoleReplica, errRefused)
	if h.tab.Role(a) != nodes.RolePrimary {
		t.Fatal("a failed role check changed the role")
	}
	// Switchover: a is demoted, b promoted; open connections keep their counts across indexes.
	held := h.tab.Pick(nil)
	if held != a {
		t.Fatalf("pick before the switchover = %v, want a:1", held)
	}
	h.tab.RoleChecked(a, nodes.RoleStandby, nil)
	h.tab.RoleChecked(b, nodes.RolePrimary, nil)
	h.wantTransitions("a:1 role primary>standby", "b:1 role replica>primary")
	if got := h.pickSet(3); got["b:1"] != 3 {
		t.Fatalf("picks after the switchover %v, want all on b:1", got)
	}
	h.tab.Release(held)
	if v, _ := h.view("a:1"); v.Open != 0 || v.Role != nodes.RoleStandby || v.TransitionsBy[CauseRole] != 2 || v.Transitions != 0 {
		t.Fatalf("a:1 open %d role %v, %v role changes, %d transitions; want 0, standby, 2, 0", v.Open, v.Role, v.TransitionsBy[CauseRole], v.Transitions)
	}
	// The state is its own: a standby that fails its probe goes down, and a recovered one is
	// still a standby (no pick) until a check says otherwise.
	h.tab.Probed(a, h.tick(), errRefused, 0)
	h.tab.Probed(a, h.tick(), nil, 0)
	h.tab.Probed(a, h.tick(), nil, 0)
	if h.state("a:1") != Up || h.tab.Role(a) != nodes.RoleStandby {
		t.Fatalf("a:1 %v %v, want up and still standby", h.state("a:1"), h.tab.Role(a))
	}
	if got := h.pickSet(2); got["a:1"] != 0 {
		t.Fatalf("the standby took picks: %v", got)
	}
}

func TestRefusedWriteDemotesAtOnce(t *testing.T) {
	h := withRoles(t, role.PrimaryOnly, true, node("a:1", nodes.RolePrimary), node("b:1", nodes.RoleReplica), node("u:1", nodes.RoleUnknown))
	a := h.node("a:1")
	h.tab.RefusedWrite(a, nodes.RoleStandby)
	h.tab.RefusedWrite(a, nodes.RoleReplica) // no longer a primary: the check decides from here
	h.tab.RefusedWrite(h.node("u:1"), nodes.RoleReplica)
	h.tab.RefusedWrite(h.node("b:1"), nodes.RoleStandby) // a replica refusing a write is no news
	h.wantTransitions("a:1 role primary>standby", "u:1 role unknown>replica")
	if got := h.picks(1); got[0] != "-" {
		t.Fatalf("primary-only picked %v after the only primary refused a write, want nothing", got)
	}
	if h.state("a:1") != Up {
		t.Fatal("a refused write changed the node's state")
	}
}

func TestSourceRoles(t *testing.T) {
	h := withRoles(t, role.PrimaryOnly, false, node("a:1", nodes.RolePrimary), node("b:1", nodes.RoleReplica))
	if _, err := h.tab.SetNodes([]nodes.Node{node("a:1", nodes.RoleReplica), node("b:1", nodes.RolePrimary)}, build); err != nil {
		t.Fatal(err)
	}
	h.wantTransitions("a:1 role primary>replica", "b:1 role replica>primary")
	if got := h.pickSet(2); got["b:1"] != 2 {
		t.Fatalf("picks %v, want the source's new primary", got)
	}
	// With role checks, a source's role seeds new nodes only.
	c := withRoles(t, role.Any, true, node("a:1", nodes.RolePrimary))
	if _, err := c.tab.SetNodes([]nodes.Node{node("a:1", nodes.RoleReplica), node("n:1", nodes.RoleReplica)}, build); err != nil {
		t.Fatal(err)
	}
	c.wantTransitions()
	if c.tab.Role(c.node("a:1")) != nodes.RolePrimary || c.tab.Role(c.node("n:1")) != nodes.RoleReplica {
		t.Fatal("with role checks, the source overrode a known node's role or did not seed a new one")
	}
}

func TestPickInUseByRole(t *testing.T) {
	h := withRoles(t, role.ReplicaOnly, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica))
	for range 3 {
		if n := h.tab.PickInUse(nil); n == nil || n.Addr() != "r:1" {
			t.Fatalf("PickInUse = %v, want r:1", n)
		}
	}
	r := h.node("r:1")
	h.tab.RoleChecked(r, nodes.RolePrimary, nil) // moved while it holds three claims
	for range 3 {
		h.tab.Unclaim(r)
	}
	if v, _ := h.view("r:1"); v.InUse != 0 {
		t.Fatalf("in-use count %d after the claims were given back across a role change, want 0", v.InUse)
	}
}

// UpNodes counts up nodes whatever their role: a standby answers, it only takes no connection.
func TestUpNodesCountsEveryRole(t *testing.T) {
	h := withRoles(t, role.PrimaryOnly, true, node("a:1", nodes.RolePrimary), node("b:1", nodes.RoleStandby))
	if h.tab.UpNodes() != 2 || h.tab.Ups() != 1 {
		t.Fatalf("UpNodes %d, Ups %d; want 2 and 1", h.tab.UpNodes(), h.tab.Ups())
	}
	a := h.node("a:1")
	h.tab.RoleChecked(a, nodes.RoleStandby, nil)
	if h.tab.UpNodes() != 2 || h.tab.Ups() != 0 {
		t.Fatalf("after the demotion UpNodes %d, Ups %d; want 2 and 0", h.tab.UpNodes(), h.tab.Ups())
	}
	h.tab.Probed(a, h.now, errRefused, 0)
	if h.tab.UpNodes() != 1 {
		t.Fatalf("UpNodes %d after a:1 went down, want 1", h.tab.UpNodes())
	}
	h.tab.Probed(a, h.tick(), nil, 0)
	h.tab.Probed(a, h.tick(), nil, 0)
	if h.tab.UpNodes() != 2 {
		t.Fatalf("UpNodes %d after a:1 recovered, want 2", h.tab.UpNodes())
	}
}

// Statement mode's split picks reads and writes for different targets from one table.
func TestPickInUseForTarget(t *testing.T) {
	h := withRoles(t, role.Any, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica), node("r:2", nodes.RoleReplica))
	for range 3 {
		if n := h.tab.PickInUseFor(role.PrimaryOnly, nil); n == nil || n.Addr() != "p:1" {
			t.Fatalf("write pick = %v, want p:1", n)
		}
	}
	got := map[string]int{}
	for range 6 {
		n := h.tab.PickInUseFor(role.Any, nil)
		got[n.Addr()]++
	}
	// p:1 holds three claims, so the six reads fill the replicas to three each first.
	if got["r:1"] != 3 || got["r:2"] != 3 || got["p:1"] != 0 {
		t.Fatalf("read picks %v, want three on each replica while the primary holds three writes", got)
	}
}

// Ties between nodes of different roles are shared by node: with every count equal, one
// primary and three replicas take a quarter of the picks each.
func TestTiesAcrossRolesAreSharedByNode(t *testing.T) {
	h := withRoles(t, role.Any, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica),
		node("r:2", nodes.RoleReplica), node("r:3", nodes.RoleReplica))
	got := map[string]int{}
	for range 400 {
		n := h.tab.PickInUseFor(role.Any, nil)
		got[n.Addr()]++
		h.tab.Unclaim(n)
	}
	for _, a := range []string{"p:1", "r:1", "r:2", "r:3"} {
		if got[a] < 99 || got[a] > 101 {
			t.Fatalf("tied picks %v, want 100 each", got)
		}
	}
}

// A lagging replica takes no pick until it catches up; with every replica lagging, reads go to
// the primary.
func TestLaggingReplicaTakesNoReads(t *testing.T) {
	h := withRoles(t, role.Any, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica))
	r := h.node("r:1")
	if !h.tab.SetLagging(r, true) || h.tab.SetLagging(r, true) {
		t.Fatal("SetLagging does not report the change once")
	}
	for range 4 {
		if n := h.tab.PickInUseFor(role.Any, nil); n == nil || n.Addr() != "p:1" {
			t.Fatalf("read pick with the replica lagging = %v, want the primary", n)
		}
	}
	if v, _ := h.view("r:1"); !v.Lagging || v.State != Up {
		t.Fatalf("lagging replica view %+v, want lagging and still up", v)
	}
	h.tab.SetLagging(r, false)
	if n := h.tab.PickInUseFor(role.Any, nil); n == nil || n.Addr() != "r:1" {
		t.Fatalf("read pick once the replica caught up = %v, want r:1 (the primary holds four claims)", n)
	}
	// A lagging node that goes down and recovers stays out until it catches up.
	h.tab.SetLagging(r, true)
	h.tab.Probed(r, h.tick(), errRefused, 0)
	h.tab.Probed(r, h.tick(), nil, 0)
	h.tab.Probed(r, h.tick(), nil, 0)
	if h.state("r:1") != Up || h.tab.PickInUseFor(role.ReplicaOnly, nil) != nil {
		t.Fatal("a recovered lagging replica took a pick")
	}
}

// A replica that refused a read takes no pick until a good probe at least one probe interval
// later; a sooner probe, or a failed one, does not bring it back.
func TestRefusedReadTakesTheNodeOutUntilAGoodProbe(t *testing.T) {
	h := withRoles(t, role.Any, false, node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica))
	r := h.node("r:1")
	at := h.tick()
	if !h.tab.RefusedRead(r, at) || h.tab.RefusedRead(r, at) {
		t.Fatal("RefusedRead does not report the change once")
	}
	for range 4 {
		if n := h.tab.PickInUseFor(role.Any, nil); n == nil || n.Addr() != "p:1" {
			t.Fatalf("read pick after the replica refused a read = %v, want the primary", n)
		}
	}
	if v, _ := h.view("r:1"); v.State != Up || v.Role != nodes.RoleReplica {
		t.Fatalf("view %+v: a refused read changed the state or role", v)
	}
	h.tab.Probed(r, at.Add(time.Millisecond), nil, 0)
	if n := h.tab.PickInUseFor(role.ReplicaOnly, nil); n != nil {
		t.Fatalf("a good probe right after the refusal brought the node back: %v", n)
	}
	h.tab.Probed(r, at.Add(probeInterval), errRefused, 0)
	if n := h.tab.PickInUseFor(role.ReplicaOnly, nil); n != nil {
		t.Fatalf("a failed probe brought the node back: %v", n)
	}
	for h.state("r:1") != Up {
		h.tab.Probed(r, h.tick(), nil, 0)
	}
	if n := h.tab.PickInUseFor(role.ReplicaOnly, nil); n == nil || n.Addr() != "r:1" {
		t.Fatalf("after a good probe an interval later the replica takes no read pick: %v", n)
	}
}

// roleList returns the role of each node, in order, as "a:1=primary b:1=replica".
func (h *harness) roleList(addrs ...string) string {
	var out []string
	for _, a := range addrs {
		out = append(out, a+"="+h.tab.Role(h.node(a)).String())
	}
	return strings.Join(out, " ")
}

// With SingleWriter, of the nodes a Galera-like check calls primary, only the first up in list
// order is the primary; the others serve as replicas. The writer moves to the next when it
// goes down or stops claiming primary, and back when it returns: the choice depends on the
// current states and answers only.
func TestSingleWriter(t *testing.T) {
	h := newHarnessWith(t, func(c *Config[*payload]) {
		c.Target, c.RoleCheck, c.SingleWriter = role.PrimaryOnly, true, true
	})
	if err := h.tab.Start([]nodes.Node{node("a:1", 0), node("b:1", 0), node("c:1", 0)}, build); err != nil {
		t.Fatal(err)
	}
	a, b, c := h.node("a:1"), h.node("b:1"), h.node("c:1")
	all := []string{"a:1", "b:1", "c:1"}
	// Answers arriving in any order end in the same roles.
	h.tab.RoleChecked(c, nodes.RolePrimary, nil)
	h.tab.RoleChecked(b, nodes.RolePrimary, nil)
	h.tab.RoleChecked(a, nodes.RolePrimary, nil)
	if got := h.roleList(all...); got != "a:1=primary b:1=replica c:1=replica" {
		t.Fatalf("roles %s; want a:1 the one primary", got)
	}
	if got := h.pickSet(4); got["a:1"] != 4 {
		t.Fatalf("target=primary picks %v; want all on a:1", got)
	}
	// The writer desynced (a standby by its check): b:1 writes.
	h.tab.RoleChecked(a, nodes.RoleStandby, nil)
	if got := h.roleList(all...); got != "a:1=standby b:1=primary c:1=replica" {
		t.Fatalf("after a:1 became a standby: %s", got)
	}
	// Synced again: a:1 is the first listed node claiming primary, so it writes again.
	h.tab.RoleChecked(a, nodes.RolePrimary, nil)
	if got := h.roleList(all...); got != "a:1=primary b:1=replica c:1=replica" {
		t.Fatalf("after a:1 came back: %s", got)
	}
	// The writer down (failed probe): b:1 writes; a:1 keeps its claim and waits as a replica.
	h.tab.Probed(a, h.tick(), errRefused, 0)
	if got := h.roleList(all...); got != "a:1=replica b:1=primary c:1=replica" {
		t.Fatalf("after a:1 went down: %s", got)
	}
	if got := h.pickSet(3); got["b:1"] != 3 {
		t.Fatalf("picks %v with a:1 down; want all on b:1", got)
	}
	// Up again after RecoverCount good probes: the writer again.
	h.tab.Probed(a, h.tick(), nil, 0)
	h.tab.Probed(a, h.tick(), nil, 0)
	if h.state("a:1") != Up {
		t.Fatalf("a:1 is %v after two good probes", h.state("a:1"))
	}
	if got := h.roleList(all...); got != "a:1=primary b:1=replica c:1=replica" {
		t.Fatalf("after a:1 came up: %s", got)
	}
	// Nobody claims primary: no primary at all, no replica made up.
	for _, n := range []*Node[*payload]{a, b, c} {
		h.tab.RoleChecked(n, nodes.RoleStandby, nil)
	}
	if got := h.roleList(all...); got != "a:1=standby b:1=standby c:1=standby" {
		t.Fatalf("all standby: %s", got)
	}
	if got := h.picks(1); got[0] != "-" {
		t.Fatalf("picked %v with no primary", got)
	}
	// The role changes the election made name the writer.
	h.tab.RoleChecked(c, nodes.RolePrimary, nil)
	h.tab.RoleChecked(b, nodes.RolePrimary, nil)
	h.mu.Lock()
	last := h.trans[len(h.trans)-1]
	h.mu.Unlock()
	if last.Node != c || last.RoleTo != nodes.RoleReplica || !strings.Contains(last.Reason, "single writer: b:1 is the writer") {
		t.Fatalf("last transition %s %v>%v %q; want c:1 demoted, naming b:1 the writer", last.Node.Addr(), last.RoleFrom, last.RoleTo, last.Reason)
	}
}

// SingleWriter over roles from the source, without a role check: Start makes the first listed
// primary the writer without reporting it, and a new list that drops it hands the role on.
func TestSingleWriterFromTheNodeList(t *testing.T) {
	h := newHarnessWith(t, func(c *Config[*payload]) { c.SingleWriter = true })
	list := []nodes.Node{node("a:1", nodes.RolePrimary), node("b:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica)}
	if err := h.tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	if got := h.roleList("a:1", "b:1", "r:1"); got != "a:1=primary b:1=replica r:1=replica" {
		t.Fatalf("after Start: %s", got)
	}
	h.wantTransitions()
	if _, err := h.tab.SetNodes(list[1:], build); err != nil {
		t.Fatal(err)
	}
	if got := h.roleList("b:1", "r:1"); got != "b:1=primary r:1=replica" {
		t.Fatalf("after a:1 left the list: %s", got)
	}
	// The list makes the writer a standby node (listed, not to be used): the next primary in
	// the list, none here, writes; listed as usable again, it writes again.
	standby := []nodes.Node{{Addr: "b:1", Role: nodes.RolePrimary, Standby: true}, node("c:1", nodes.RolePrimary), list[2]}
	if _, err := h.tab.SetNodes(standby, build); err != nil {
		t.Fatal(err)
	}
	h.tab.Probed(h.node("c:1"), h.tick(), nil, 0) // c:1, added at run time, comes up on a good probe
	if got := h.roleList("b:1", "c:1"); got != "b:1=replica c:1=primary" {
		t.Fatalf("with b:1 a standby node: %s", got)
	}
	if _, err := h.tab.SetNodes([]nodes.Node{node("b:1", nodes.RolePrimary), node("c:1", nodes.RolePrimary), list[2]}, build); err != nil {
		t.Fatal(err)
	}
	if got := h.roleList("b:1", "c:1"); got != "b:1=primary c:1=replica" {
		t.Fatalf("with b:1 usable again: %s", got)
	}
}

// TestSetNodesUpButNotTakingConnectionsDoesNotCount: a listed node that is up but out of the
// pick indexes (a standby role from its role check, a lagging replica) does not let a removal
// of the last node that takes connections through; the removal goes through once it takes
// connections again. Found by the model checker (TestModelNodeTable): a removal after a role
// check demoted the other node to standby left no node to pick and none for panic mode.
func TestSetNodesUpButNotTakingConnectionsDoesNotCount(t *testing.T) {
	for _, tc := range []struct {
		name      string
		out, back func(h *harness, a *Node[*payload])
	}{
		{"standby role",
			func(h *harness, a *Node[*payload]) { h.tab.RoleChecked(a, nodes.RoleStandby, nil) },
			func(h *harness, a *Node[*payload]) { h.tab.RoleChecked(a, nodes.RolePrimary, nil) }},
		{"lagging",
			func(h *harness, a *Node[*payload]) { h.tab.SetLagging(a, true) },
			func(h *harness, a *Node[*payload]) { h.tab.SetLagging(a, false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := withRoles(t, role.Any, true, node("a:1", nodes.RolePrimary), node("b:1", nodes.RolePrimary))
			a := h.node("a:1")
			tc.out(h, a)
			h.took()
			if _, err := h.tab.SetNodes([]nodes.Node{node("a:1", nodes.RolePrimary)}, build); !errors.Is(err, ErrNoUpNodeLeft) {
				t.Fatalf("removing the only node taking connections: err = %v, want ErrNoUpNodeLeft", err)
			}
			if h.state("b:1") != Up || h.tab.Ups() != 1 {
				t.Fatalf("b:1 %v, Ups %d: want b:1 still up and taking connections", h.state("b:1"), h.tab.Ups())
			}
			tc.back(h, a)
			if got := strings.Join(h.took(), ", "); !strings.Contains(got, "b:1 up>draining, b:1 forgot") {
				t.Fatalf("transitions %s, want b:1 drained", got)
			}
			if _, ok := h.view("b:1"); ok {
				t.Fatal("b:1 still in the table once a:1 took connections again")
			}
			if got := strings.Join(h.picks(1), " "); got != "a:1" {
				t.Fatalf("picks %s, want a:1", got)
			}
		})
	}
}
