package nodetable

import (
	"testing"

	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// zoned is a harness whose table is in zone az1 with a:1 and b:1 there and c:1 and d:1 in az2.
func zoned(t *testing.T, set func(*Config[*payload]), list ...nodes.Node) *harness {
	t.Helper()
	h := newHarnessWith(t, func(c *Config[*payload]) {
		c.LocalZone = "az1"
		if set != nil {
			set(c)
		}
	})
	if list == nil {
		list = []nodes.Node{{Addr: "a:1", AZ: "az1"}, {Addr: "b:1", AZ: "az1"}, {Addr: "c:1", AZ: "az2"}, {Addr: "d:1", AZ: "az2"}}
	}
	if err := h.tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	return h
}

// recoverByProbes brings addr up with RecoverCount good probes spaced a probe interval apart.
func (h *harness) recoverByProbes(addr string) {
	h.t.Helper()
	for range 2 {
		h.tab.Probed(h.node(addr), h.tick(), nil, 0)
	}
	if h.state(addr) != Up {
		h.t.Fatalf("%s is %v after two good probes, want up", addr, h.state(addr))
	}
}

func TestZonePicksStayLocalWhileItHasCapacity(t *testing.T) {
	h := zoned(t, nil)
	if live, active, local := h.tab.Zones(); live != 2 || active != 2 || !local {
		t.Fatalf("Zones() = %d, %d, %v; want 2 live, 2 active, local", live, active, local)
	}
	if got := h.counts(40); got["a:1"] != 20 || got["b:1"] != 20 {
		t.Fatalf("40 picks went %v, want 20 each on a:1 and b:1 (az1)", got)
	}
	// One of two local nodes down: half the zone takes connections, the default threshold.
	h.downByProbe("a:1")
	if got := h.counts(10); got["b:1"] != 10 {
		t.Fatalf("with a:1 down 10 picks went %v, want all on b:1 (az1 at 50%%)", got)
	}
	// The whole local zone down: the picks spill to every up node at once.
	h.downByProbe("b:1")
	if _, _, local := h.tab.Zones(); local {
		t.Fatal("with az1 down Zones() says the picks stay local")
	}
	if got := h.counts(20); got["c:1"]+got["d:1"] != 20 || got["c:1"] == 0 || got["d:1"] == 0 {
		t.Fatalf("with az1 down 20 picks went %v, want them over c:1 and d:1", got)
	}
	// b:1 back: az1 at 50% again, and the picks return to it.
	h.recoverByProbes("b:1")
	if got := h.counts(10); got["b:1"] != 10 {
		t.Fatalf("with b:1 back 10 picks went %v, want all on b:1", got)
	}
}

func TestZoneSpillsBelowTheThreshold(t *testing.T) {
	h := zoned(t, func(c *Config[*payload]) { c.ZoneMinUpPercent = 75 })
	h.downByProbe("a:1") // 1 of 2 = 50% < 75%
	got := h.counts(60)
	// Spilled: b:1, c:1 and d:1 share by least connections.
	if got["b:1"] != 20 || got["c:1"] != 20 || got["d:1"] != 20 {
		t.Fatalf("with az1 at 50%% under a 75%% threshold 60 picks went %v, want 20 each on b:1, c:1, d:1", got)
	}
}

func TestZoneFallsBackForARoleTheLocalZoneLacks(t *testing.T) {
	h := zoned(t, func(c *Config[*payload]) { c.Target = role.PrimaryOnly },
		nodes.Node{Addr: "a:1", AZ: "az1", Role: nodes.RoleReplica}, nodes.Node{Addr: "c:1", AZ: "az2", Role: nodes.RolePrimary})
	if got := h.counts(3); got["c:1"] != 3 {
		t.Fatalf("primary picks went %v, want the primary in az2 (az1 has none)", got)
	}
	// A read goes to the local replica.
	if n := h.tab.PickInUseFor(role.PreferReplica, nil); n == nil || n.Addr() != "a:1" {
		t.Fatalf("prefer-replica pick = %v, want a:1", n)
	}
}

func TestZoneOfAListedNodeMoves(t *testing.T) {
	h := zoned(t, nil)
	// c:1 moves to az1: three local nodes now.
	list := []nodes.Node{{Addr: "a:1", AZ: "az1"}, {Addr: "b:1", AZ: "az1"}, {Addr: "c:1", AZ: "az1"}, {Addr: "d:1", AZ: "az2"}}
	if _, err := h.tab.SetNodes(list, build); err != nil {
		t.Fatal(err)
	}
	if live, active, _ := h.tab.Zones(); live != 3 || active != 3 {
		t.Fatalf("Zones() = %d live, %d active; want 3 and 3", live, active)
	}
	if v, _ := h.view("c:1"); v.Zone != "az1" {
		t.Fatalf("c:1's zone %q, want az1", v.Zone)
	}
	if got := h.counts(30); got["a:1"] != 10 || got["b:1"] != 10 || got["c:1"] != 10 {
		t.Fatalf("30 picks went %v, want 10 each on a:1, b:1, c:1", got)
	}
	// A removed local node leaves the live count once it drains.
	if _, err := h.tab.SetNodes(list[1:], build); err != nil {
		t.Fatal(err)
	}
	if live, _, _ := h.tab.Zones(); live != 2 {
		t.Fatalf("after removing a:1 Zones() live = %d, want 2", live)
	}
}

func TestZonesOff(t *testing.T) {
	h := started(t, "a:1", "b:1")
	if live, active, local := h.tab.Zones(); live != 0 || active != 0 || local {
		t.Fatalf("without a local zone Zones() = %d, %d, %v", live, active, local)
	}
	if got := h.counts(10); got["a:1"] != 5 || got["b:1"] != 5 {
		t.Fatalf("10 picks went %v", got)
	}
}
