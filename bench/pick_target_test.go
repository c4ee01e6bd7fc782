package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

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
