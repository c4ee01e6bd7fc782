package nodetable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// pickSizes are the cluster sizes of the pick benchmark. Past about 20 000 providers an O(n)
// pick per call becomes a real CPU cost (Dubbo's lesson), so the 50 000-node figure should stay
// within a small factor of the 3-node one.
var pickSizes = []int{3, 100, 10_000, 50_000}

// newTable returns lbd's node table with nodes up nodes, each holding openPerNode connections
// (a warm cluster).
func newTable(b *testing.B, nodeCount, openPerNode int) *nodetable.Table[struct{}] {
	t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second, ProbeInterval: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]nodes.Node, nodeCount)
	for i := range list {
		list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
	}
	if err := t.Start(list, func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }); err != nil {
		b.Fatal(err)
	}
	for range nodeCount * openPerNode {
		t.Pick(nil)
	}
	return t
}

// pickAndRelease is the dial path's use of the table: pick the least-loaded node (charging it),
// then give the count back when the connection closes.
func pickAndRelease(t *nodetable.Table[struct{}]) {
	t.Release(t.Pick(nil))
}

func BenchmarkPick(b *testing.B) {
	for _, n := range pickSizes {
		b.Run(fmt.Sprintf("nodes=%d/serial", n), func(b *testing.B) {
			t := newTable(b, n, 4)
			b.ReportAllocs()
			for b.Loop() {
				pickAndRelease(t)
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/parallel", n), func(b *testing.B) {
			t := newTable(b, n, 4)
			b.ReportAllocs()
			b.ResetTimer() // the table's setup is not part of a pick
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pickAndRelease(t)
				}
			})
		})
	}
}

// weightedTable is newTable with weights 1 to 4 over the nodes, slow start over a minute, and,
// when warming, one node in a hundred (at least one) added at run time and warming up: a fleet
// in the middle of a scale-out. The table is then in its heap order; without weights it stays
// in its buckets.
func weightedTable(b *testing.B, nodeCount, openPerNode int, weighted, warming bool) *nodetable.Table[struct{}] {
	t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second,
		ProbeInterval: 5 * time.Second, Warmup: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]nodes.Node, nodeCount)
	for i := range list {
		list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
		if weighted {
			list[i].Weight = 1 + i%4
		}
	}
	newcomers := 0
	if warming {
		newcomers = max(nodeCount/100, 1)
	}
	build := func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }
	if err := t.Start(list[:nodeCount-newcomers], build); err != nil {
		b.Fatal(err)
	}
	if newcomers > 0 {
		added, err := t.SetNodes(list, build)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, n := range added {
			t.Probed(n, start, nil, 0)
		}
		t.Tick(start.Add(20 * time.Second)) // a third of the way
	}
	for range nodeCount * openPerNode {
		t.Pick(nil)
	}
	return t
}

// BenchmarkPickWeighted is pick + release with weights and slow start, next to the unweighted
// pick of the same table code in the same run: compare the variants of one size as ratios.
func BenchmarkPickWeighted(b *testing.B) {
	for _, n := range pickSizes {
		for _, v := range []struct {
			name              string
			weighted, warming bool
		}{
			{"unweighted", false, false},
			{"weighted", true, false},
			{"weighted+warming", true, true},
		} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, v.name), func(b *testing.B) {
				t := weightedTable(b, n, 4, v.weighted, v.warming)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					pickAndRelease(t)
				}
			})
		}
	}
}

// BenchmarkWarmupTick is one Tick of the warm-up loop with one node in a hundred warming: what
// the Connector pays every Warmup/20, off the pick path.
func BenchmarkWarmupTick(b *testing.B) {
	for _, n := range pickSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			t := weightedTable(b, n, 4, true, true)
			now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t.Tick(now)
			}
		})
	}
}

// newRoleTable is newTable with roles: every fourth node a primary, the rest replicas, and the
// table picking for target.
func newRoleTable(b *testing.B, nodeCount, openPerNode int, target role.Target) *nodetable.Table[struct{}] {
	t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second,
		ProbeInterval: 5 * time.Second, Target: target})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]nodes.Node, nodeCount)
	for i := range list {
		list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
		list[i].Role = nodes.RoleReplica
		if i%4 == 0 {
			list[i].Role = nodes.RolePrimary
		}
	}
	if err := t.Start(list, func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }); err != nil {
		b.Fatal(err)
	}
	for range nodeCount * openPerNode {
		t.Pick(nil)
	}
	return t
}

// BenchmarkPickTarget is pick + release filtered by role, next to the unfiltered pick of the
// same table: any looks at the unknown, primary and replica indexes, primary at one,
// prefer-replica at the replicas' first.
func BenchmarkPickTarget(b *testing.B) {
	for _, n := range []int{3, 50_000} {
		for _, target := range []role.Target{role.Any, role.PrimaryOnly, role.PreferReplica} {
			b.Run(fmt.Sprintf("nodes=%d/target=%v", n, target), func(b *testing.B) {
				t := newRoleTable(b, n, 4, target)
				b.ReportAllocs()
				for b.Loop() {
					pickAndRelease(t)
				}
			})
		}
	}
}

// loadTable is newTable picking by load (balancePolicy=least-load), its latency estimates fed
// and turned into speed factors: every node at 1 ms, or, with slow, one node in a hundred (at
// least one) at 3 ms, which puts the index in its heap order.
func loadTable(b *testing.B, nodeCount, openPerNode int, slow bool) (*nodetable.Table[struct{}], time.Time) {
	t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second,
		ProbeInterval: 5 * time.Second, LeastLoad: true})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]nodes.Node, nodeCount)
	for i := range list {
		list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
	}
	if err := t.Start(list, func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i, n := range t.Nodes(nil) {
		rtt := time.Millisecond
		if slow && i%100 == 0 {
			rtt = 3 * time.Millisecond
		}
		t.Observe(n, now.Add(-nodetable.LatencyWindow), rtt) // samples spanning a window: a settled estimate
		t.Observe(n, now, rtt)
	}
	for range nodetable.SlowAfterTicks { // a node over the limit is slowed once it lasts
		t.TickLoad(now)
	}
	for range nodeCount * openPerNode {
		t.Pick(nil)
	}
	return t, now
}

// BenchmarkPickLeastLoad is pick + release with balancePolicy=least-load, next to
// least-connections on the same table code in the same run: with every node within the
// tolerance band the pick is least-connections' own (O(1) buckets); with a slow node the heap
// (O(log n)). The latency estimates cost the pick nothing: TickLoad folds them into weights.
func BenchmarkPickLeastLoad(b *testing.B) {
	for _, n := range []int{3, 50_000} {
		b.Run(fmt.Sprintf("nodes=%d/least-connections", n), func(b *testing.B) {
			t := newTable(b, n, 4)
			b.ReportAllocs()
			for b.Loop() {
				pickAndRelease(t)
			}
		})
		for _, slow := range []bool{false, true} {
			name := "least-load/equal"
			if slow {
				name = "least-load/one-slow-in-100"
			}
			b.Run(fmt.Sprintf("nodes=%d/%s", n, name), func(b *testing.B) {
				t, _ := loadTable(b, n, 4, slow)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					pickAndRelease(t)
				}
			})
		}
	}
}

// BenchmarkObserve is one latency sample, what every answered statement pays.
func BenchmarkObserve(b *testing.B) {
	t, now := loadTable(b, 3, 0, false)
	n := t.Nodes(nil)[0]
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		t.Observe(n, now, time.Millisecond)
	}
}

// BenchmarkTickLoad is one TickLoad with one node in a hundred slow: what the load loop pays
// every LoadTick, off the pick path (O(n), mostly outside the table's mutex).
func BenchmarkTickLoad(b *testing.B) {
	for _, n := range []int{3, 50_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			t, now := loadTable(b, n, 4, true)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t.TickLoad(now)
			}
		})
	}
}

// BenchmarkPickLocalZone is pick + release with a local zone holding half the nodes, next to
// the same table without zones: while the zone keeps the traffic the pick looks at its indexes
// alone; spilled (the zone below its threshold) at both zones' indexes.
func BenchmarkPickLocalZone(b *testing.B) {
	for _, n := range []int{3, 50_000} {
		for _, zone := range []string{"", "az1"} {
			b.Run(fmt.Sprintf("nodes=%d/localZone=%q", n, zone), func(b *testing.B) {
				t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second,
					ProbeInterval: 5 * time.Second, LocalZone: zone, LeastLoad: true})
				if err != nil {
					b.Fatal(err)
				}
				list := make([]nodes.Node, n)
				for i := range list {
					list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
					list[i].AZ = []string{"az1", "az2"}[i%2]
				}
				if err := t.Start(list, func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }); err != nil {
					b.Fatal(err)
				}
				for range n * 4 {
					t.Pick(nil)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					pickAndRelease(t)
				}
			})
		}
	}
}
