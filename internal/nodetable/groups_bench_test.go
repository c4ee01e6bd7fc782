package nodetable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// groupedTable is newTable with one node in ten in group "analytics", kept out of the default
// picks, and one in ten in "reporting": three sets of groups to look at per default pick.
func groupedTable(b *testing.B, nodeCount, openPerNode int) *nodetable.Table[struct{}] {
	t, err := nodetable.New(nodetable.Config[struct{}]{RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second,
		ProbeInterval: 5 * time.Second, Isolated: []string{"analytics"}})
	if err != nil {
		b.Fatal(err)
	}
	list := make([]nodes.Node, nodeCount)
	for i := range list {
		list[i].Addr = fmt.Sprintf("10.0.%d.%d:2883", i/256, i%256)
		switch i % 10 {
		case 1:
			list[i].Groups = "analytics"
		case 2:
			list[i].Groups = "reporting"
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

// BenchmarkPickGroups is BenchmarkPick's serial case over a fleet with groups: the default
// pick (two sets of groups of three), and a pick in one group (statement mode's, by in-use
// count).
func BenchmarkPickGroups(b *testing.B) {
	for _, n := range pickSizes {
		b.Run(fmt.Sprintf("nodes=%d/default", n), func(b *testing.B) {
			t := groupedTable(b, n, 4)
			b.ReportAllocs()
			for b.Loop() {
				pickAndRelease(t)
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/analytics", n), func(b *testing.B) {
			t := groupedTable(b, n, 4)
			b.ReportAllocs()
			for b.Loop() {
				t.Unclaim(t.PickInUseForGroup(role.Any, "analytics", nil))
			}
		})
	}
}
