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

// grouped is node with groups.
func grouped(addr string, r nodes.Role, groups string) nodes.Node {
	return nodes.Node{Addr: addr, Role: r, Groups: groups}
}

// withGroups is a harness whose table has Config.Group group and Config.Isolated isolated,
// holding list.
func withGroups(t *testing.T, group string, isolated []string, list ...nodes.Node) *harness {
	t.Helper()
	h := newHarnessWith(t, func(c *Config[*payload]) { c.Group, c.Isolated = group, isolated })
	if err := h.tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	return h
}

// picksFor claims k in-use connections for target in group, giving each back at once, and
// returns the sorted addresses picked ("-" for none).
func (h *harness) picksFor(target role.Target, group string, k int) []string {
	got := map[string]bool{}
	for range k {
		n := h.tab.PickInUseForGroup(target, group, nil)
		if n == nil {
			got["-"] = true
			continue
		}
		got[n.Addr()] = true
		h.tab.Unclaim(n)
	}
	return slices.Sorted(maps.Keys(got))
}

// fleet is a primary and two replicas for everyday work, a replica set aside for analytics,
// and one that serves both analytics and reporting.
var fleet = []nodes.Node{
	grouped("p:1", nodes.RolePrimary, ""), grouped("r:1", nodes.RoleReplica, "oltp"), grouped("r:2", nodes.RoleReplica, ""),
	grouped("a:1", nodes.RoleReplica, "analytics"), grouped("b:1", nodes.RoleReplica, "reporting+analytics"),
}

func TestPicksKeepToTheirGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		group    string   // Config.Group
		isolated []string // Config.Isolated
		pick     string   // the group a pick names
		target   role.Target
		want     string
	}{
		{"no group: every node", "", nil, "", role.Any, "a:1 b:1 p:1 r:1 r:2"},
		{"isolated analytics out of the default picks", "", []string{"analytics"}, "", role.Any, "p:1 r:1 r:2"},
		{"isolating one of a node's groups isolates the node", "", []string{"reporting"}, "", role.Any, "a:1 p:1 r:1 r:2"},
		{"a pick naming an isolated group", "", []string{"analytics"}, "analytics", role.Any, "a:1 b:1"},
		{"a node in two groups serves both", "", nil, "reporting", role.Any, "b:1"},
		{"Config.Group: the default picks", "oltp", nil, "", role.Any, "r:1"},
		{"Config.Group: a pick naming another group", "oltp", nil, "analytics", role.Any, "a:1 b:1"},
		{"an unknown group has no node", "", nil, "nosuch", role.Any, "-"},
		{"reads of the split in the group", "", []string{"analytics"}, "analytics", role.PreferReplica, "a:1 b:1"},
		// The group has no primary: a write takes the cluster's.
		{"writes of a group without a primary", "", []string{"analytics"}, "analytics", role.PrimaryOnly, "p:1"},
		{"writes of the default picks", "oltp", nil, "", role.PrimaryOnly, "p:1"},
		{"prefer-primary: the group's replicas before another group's primary", "", nil, "analytics", role.PreferPrimary, "a:1 b:1"},
		{"replica-only: no fallback out of the group", "oltp", nil, "reporting", role.ReplicaOnly, "b:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := withGroups(t, tc.group, tc.isolated, fleet...)
			if got := strings.Join(h.picksFor(tc.target, tc.pick, 40), " "); got != tc.want {
				t.Errorf("picks for %s in group %q = %s, want %s", tc.target, tc.pick, got, tc.want)
			}
		})
	}
}

// A group's primary takes its writes; the cluster's primary only when the group has none up.
func TestGroupPrimaryFirst(t *testing.T) {
	h := withGroups(t, "", []string{"bi"}, grouped("p:1", nodes.RolePrimary, ""), grouped("p:2", nodes.RolePrimary, "bi"),
		grouped("r:1", nodes.RoleReplica, "bi"))
	if got := h.picksFor(role.PrimaryOnly, "bi", 10); !slices.Equal(got, []string{"p:2"}) {
		t.Fatalf("writes of bi = %v, want its own primary", got)
	}
	if got := h.picksFor(role.PrimaryOnly, "", 10); !slices.Equal(got, []string{"p:1"}) {
		t.Fatalf("default writes = %v, want the primary outside the isolated group", got)
	}
	p2 := h.node("p:2")
	h.tab.Probed(p2, h.now, errRefused, 0)
	if got := h.picksFor(role.PrimaryOnly, "bi", 10); !slices.Equal(got, []string{"p:1"}) {
		t.Fatalf("writes of bi with its primary down = %v, want the cluster's", got)
	}
	if got := h.picksFor(role.Any, "bi", 10); !slices.Equal(got, []string{"r:1"}) {
		t.Fatalf("reads of bi with its primary down = %v, want its replica alone", got)
	}
	h.tab.Probed(h.node("r:1"), h.now, errRefused, 0)
	if got := h.picksFor(role.Any, "bi", 10); !slices.Equal(got, []string{"-"}) {
		t.Fatalf("picks of bi with every node down = %v, want none (the caller waits)", got)
	}
	if got := h.tab.Pick(nil); got == nil || got.Addr() != "p:1" {
		t.Fatalf("default pick = %v, want p:1", got)
	}
}

// Connection mode's picks (Pick, PickInUse) are the Connector's default picks: Config.Group.
func TestPickKeepsToConfigGroup(t *testing.T) {
	h := withGroups(t, "analytics", nil, fleet...)
	got := h.pickSet(20)
	if len(got) != 2 || got["a:1"] != 10 || got["b:1"] != 10 {
		t.Fatalf("Pick = %v, want a:1 and b:1 in turn", got)
	}
	n := h.tab.PickInUse(nil)
	if n == nil || !strings.Contains("a:1 b:1", n.Addr()) {
		t.Fatalf("PickInUse = %v, want a node of analytics", n)
	}
}

func TestInGroup(t *testing.T) {
	h := withGroups(t, "", []string{"analytics"}, fleet...)
	for _, tc := range []struct {
		addr, group string
		in          bool
	}{
		{"p:1", "", true}, {"r:1", "", true}, {"a:1", "", false}, {"b:1", "", false},
		{"a:1", "analytics", true}, {"b:1", "reporting", true}, {"b:1", "analytics", true},
		{"p:1", "analytics", false}, {"r:1", "oltp", true}, {"r:1", "analytics", false},
	} {
		if got := h.tab.InGroup(h.node(tc.addr), tc.group); got != tc.in {
			t.Errorf("InGroup(%s, %q) = %v, want %v", tc.addr, tc.group, got, tc.in)
		}
	}
	g := withGroups(t, "oltp", nil, fleet...)
	if g.tab.InGroup(g.node("p:1"), "") || !g.tab.InGroup(g.node("r:1"), "") {
		t.Error("with Config.Group, the default picks' nodes are that group's")
	}
	if v, _ := g.view("b:1"); v.Groups != "analytics+reporting" {
		t.Errorf("View.Groups = %q, want the names in order", v.Groups)
	}
	if n, active := g.tab.Groups("analytics"); n != 2 || active != 2 {
		t.Errorf("Groups(analytics) = %d, %d; want 2, 2", n, active)
	}
	if n, active := g.tab.Groups(""); n != 1 || active != 1 {
		t.Errorf("Groups(\"\") = %d, %d; want 1, 1 (oltp)", n, active)
	}
}

// A node list moves nodes between groups, at once, with their counts.
func TestSetNodesMovesGroups(t *testing.T) {
	h := withGroups(t, "", []string{"analytics"}, grouped("a:1", nodes.RoleUnknown, ""), grouped("b:1", nodes.RoleUnknown, ""))
	a := h.node("a:1")
	for range 3 {
		h.tab.Pick([]*Node[*payload]{h.node("b:1")})
	}
	if _, err := h.tab.SetNodes([]nodes.Node{grouped("a:1", nodes.RoleUnknown, "analytics"), grouped("b:1", nodes.RoleUnknown, "")}, build); err != nil {
		t.Fatal(err)
	}
	if got := h.picksFor(role.Any, "", 5); !slices.Equal(got, []string{"b:1"}) {
		t.Fatalf("default picks after a:1 joined the isolated group = %v", got)
	}
	if got := h.picksFor(role.Any, "analytics", 5); !slices.Equal(got, []string{"a:1"}) {
		t.Fatalf("analytics picks = %v", got)
	}
	if v, _ := h.view("a:1"); v.Open != 3 {
		t.Fatalf("a:1 holds %d open connections after moving, want its 3", v.Open)
	}
	for range 3 {
		h.tab.Release(a)
	}
	// Back out of the group: the set is freed, and the default picks take a:1 again.
	if _, err := h.tab.SetNodes([]nodes.Node{grouped("a:1", nodes.RoleUnknown, ""), grouped("b:1", nodes.RoleUnknown, "")}, build); err != nil {
		t.Fatal(err)
	}
	if got := h.picksFor(role.Any, "", 10); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Fatalf("default picks after a:1 left the group = %v", got)
	}
	if got := h.picksFor(role.Any, "analytics", 5); !slices.Equal(got, []string{"-"}) {
		t.Fatalf("analytics picks with no node in it = %v", got)
	}
	if len(h.tab.groups.sets) != 2 || h.tab.groups.members[1] != 0 || h.tab.groups.all != 1 {
		t.Fatalf("sets %d, members %v, all %b: want the analytics set freed", len(h.tab.groups.sets), h.tab.groups.members, h.tab.groups.all)
	}
}

// A node that leaves the table leaves its set; sets are reused, never more than maxGroupSets.
func TestGroupSetsAreBounded(t *testing.T) {
	h := withGroups(t, "", nil, grouped("x:1", nodes.RoleUnknown, ""))
	for round := range 5 {
		list := []nodes.Node{grouped("x:1", nodes.RoleUnknown, "")}
		for i := range nodes.MaxGroupSets - 1 {
			list = append(list, grouped(fmt.Sprintf("n%d-%d:1", round, i), nodes.RoleUnknown, fmt.Sprintf("g%d-%d", round, i)))
		}
		if _, err := h.tab.SetNodes(list, build); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	// The nodes of earlier rounds had no connection: they left the table, and their sets with them.
	if got := len(h.tab.groups.sets); got > 2*nodes.MaxGroupSets {
		t.Fatalf("%d sets after five lists of %d, want the freed ones reused", got, nodes.MaxGroupSets)
	}
	// Nodes that keep connections keep their sets: a table runs out after maxGroupSets.
	g := withGroups(t, "", nil, grouped("x:1", nodes.RoleUnknown, ""))
	var err error
	for i := 0; err == nil && i < 2*maxGroupSets; i++ {
		_, err = g.tab.SetNodes([]nodes.Node{grouped("x:1", nodes.RoleUnknown, ""), grouped(fmt.Sprintf("n%d:1", i), nodes.RoleUnknown, fmt.Sprintf("g%d", i))}, build)
		for _, n := range g.tab.Nodes(nil) {
			if n.Addr() == fmt.Sprintf("n%d:1", i) {
				g.tab.Charge(n) // still draining when the next list comes
			}
		}
	}
	if !errors.Is(err, errTooManyGroupSets) {
		t.Fatalf("err = %v, want errTooManyGroupSets", err)
	}
}

// Panic mode (no node takes connections) dials only nodes of the pick's group.
func TestPanicPickKeepsToGroup(t *testing.T) {
	h := withGroups(t, "", []string{"analytics"}, fleet...)
	for _, n := range h.tab.Nodes(nil) {
		h.tab.Probed(n, h.now, errRefused, 0)
	}
	if n := h.tab.PanicPickInUseFor("analytics", nil, h.now); n == nil || !strings.Contains("a:1 b:1", n.Addr()) {
		t.Fatalf("panic pick for analytics = %v", n)
	}
	if n := h.tab.PanicPickInUseFor("reporting", nil, h.now.Add(time.Hour)); n == nil || n.Addr() != "b:1" {
		t.Fatalf("panic pick for reporting = %v", n)
	}
	if n := h.tab.PanicPick(nil, h.now.Add(2*time.Hour)); n == nil || strings.Contains("a:1 b:1", n.Addr()) {
		t.Fatalf("default panic pick = %v, want a node outside the isolated group", n)
	}
}

func TestGroupConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		group    string
		isolated []string
		want     string
	}{
		{"BI", nil, `group: nodes: group "BI" has an upper-case letter`},
		{"", []string{"ok", ""}, `isolatedGroups: nodes: group "" must be 1 to 32 characters`},
	} {
		_, err := New(Config[*payload]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: time.Second,
			Group: tc.group, Isolated: tc.isolated})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(group %q, isolated %q) = %v, want %q", tc.group, tc.isolated, err, tc.want)
		}
	}
}

// A pick in a group allocates nothing, as every pick.
func TestGroupPickAllocatesNothing(t *testing.T) {
	h := withGroups(t, "", []string{"analytics"}, fleet...)
	if a := testing.AllocsPerRun(100, func() {
		h.tab.Unclaim(h.tab.PickInUseForGroup(role.PreferReplica, "analytics", nil))
		h.tab.Unclaim(h.tab.PickInUseForGroup(role.PrimaryOnly, "analytics", nil))
		h.tab.Release(h.tab.Pick(nil))
	}); a != 0 {
		t.Fatalf("%v allocations per round of picks", a)
	}
}
