package nodetable

import (
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// floorHarness is a table of a primary and three replicas with a lag floor of floor.
func floorHarness(t *testing.T, floor int) *harness {
	t.Helper()
	h := newHarnessWith(t, func(c *Config[*payload]) { c.MinServingReplicas = floor })
	if err := h.tab.Start([]nodes.Node{node("p:1", nodes.RolePrimary), node("r:1", nodes.RoleReplica),
		node("r:2", nodes.RoleReplica), node("r:3", nodes.RoleReplica)}, build); err != nil {
		t.Fatal(err)
	}
	return h
}

// replicaPicks returns the nodes replica-only picks reach, each pick given back at once.
func (h *harness) replicaPicks(k int) map[string]int {
	got := map[string]int{}
	for range k {
		n := h.tab.PickInUseFor(role.ReplicaOnly, nil)
		if n == nil {
			got["-"]++
			continue
		}
		got[n.Addr()]++
		h.tab.Unclaim(n)
	}
	return got
}

// TestLagFloorKeepsTheLeastLaggingReplica: with every replica lagging, the floor keeps the one
// of least known lag serving (a stopped replication never qualifies), follows the lags as they
// change, and steps back once enough replicas caught up.
func TestLagFloorKeepsTheLeastLaggingReplica(t *testing.T) {
	h := floorHarness(t, 1)
	lags := map[string]time.Duration{"r:1": 9 * time.Second, "r:2": 4 * time.Second}
	for a, l := range lags {
		h.tab.NoteLag(h.node(a), l, true)
		h.tab.SetLagging(h.node(a), true)
	}
	if got := h.replicaPicks(6); got["r:3"] != 6 {
		t.Fatalf("replica picks with r:3 not lagging: %v, want r:3 only (the floor is met)", got)
	}
	h.tab.NoteLag(h.node("r:3"), 0, false) // replication stopped
	h.tab.SetLagging(h.node("r:3"), true)
	if got := h.replicaPicks(6); got["r:2"] != 6 {
		t.Fatalf("replica picks with every replica lagging: %v, want r:2 (least known lag) only", got)
	}
	if v, _ := h.view("r:2"); !v.Lagging || !v.LagFloor {
		t.Fatalf("r:2 lagging %v floor %v, want both", v.Lagging, v.LagFloor)
	}
	if got := h.tab.FloorLag(); got != 4*time.Second {
		t.Fatalf("FloorLag = %v, want r:2's 4s", got)
	}
	// r:1 catches up to 2 s behind, still over the limit: it is the least lagging now.
	h.tab.NoteLag(h.node("r:1"), 2*time.Second, true)
	if got := h.replicaPicks(6); got["r:1"] != 6 {
		t.Fatalf("replica picks after r:1's lag fell below r:2's: %v, want r:1 only", got)
	}
	if v, _ := h.view("r:2"); v.LagFloor {
		t.Fatal("r:2 still kept by the floor")
	}
	// The kept replica goes down: the next least lagging takes its place.
	h.downByProbe("r:1")
	if got := h.replicaPicks(6); got["r:2"] != 6 {
		t.Fatalf("replica picks with r:1 down: %v, want r:2 only", got)
	}
	// r:3 catches up: the floor is met without a lagging replica.
	h.tab.SetLagging(h.node("r:3"), false)
	if got := h.replicaPicks(6); got["r:3"] != 6 || h.tab.FloorLag() != 0 {
		t.Fatalf("replica picks with r:3 caught up: %v (floor lag %v), want r:3 only and no floor", got, h.tab.FloorLag())
	}
}

// TestLagFloorOff: with MinServingReplicas 0, every lagging replica is out, as before.
func TestLagFloorOff(t *testing.T) {
	h := floorHarness(t, 0)
	for _, a := range []string{"r:1", "r:2", "r:3"} {
		h.tab.NoteLag(h.node(a), time.Second, true)
		h.tab.SetLagging(h.node(a), true)
	}
	if got := h.replicaPicks(3); got["-"] != 3 {
		t.Fatalf("replica picks with every replica lagging and no floor: %v, want none", got)
	}
}

// TestLagFloorOfTwo: a floor of two keeps the two least lagging.
func TestLagFloorOfTwo(t *testing.T) {
	h := floorHarness(t, 2)
	for a, l := range map[string]time.Duration{"r:1": 3 * time.Second, "r:2": 5 * time.Second, "r:3": 4 * time.Second} {
		h.tab.NoteLag(h.node(a), l, true)
		h.tab.SetLagging(h.node(a), true)
	}
	got := h.replicaPicks(8)
	if got["r:1"] != 4 || got["r:3"] != 4 {
		t.Fatalf("replica picks with a floor of two: %v, want r:1 and r:3 alike", got)
	}
}
