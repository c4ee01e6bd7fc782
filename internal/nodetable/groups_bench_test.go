package nodetable_test

import (
	"fmt"
	"testing"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// groupedTable is newTable with one node in ten moved into group "analytics" and one in ten
// into "reporting" by a node list: three sets of groups for the default pick to look at.
func groupedTable(b *testing.B, nodeCount, openPerNode int) *nodetable.Table[struct{}] {
	t := newTable(b, nodeCount, openPerNode)
	list := make([]nodes.Node, nodeCount)
	for i, n := range t.Nodes(nil) {
		list[i] = nodes.Node{Addr: n.Addr(), Groups: []string{"", "analytics", "reporting"}[min(i%10, 2)]}
	}
	if _, err := t.SetNodes(list, func(*nodetable.Node[struct{}]) (struct{}, error) { return struct{}{}, nil }); err != nil {
		b.Fatal(err)
	}
	for range nodeCount * openPerNode { // the new sets' indexes grow to their size here
		t.Unclaim(t.PickInUseForGroup(role.Any, "analytics", nil))
		pickAndRelease(t)
	}
	return t
}

// BenchmarkPickGroups is BenchmarkPick's serial case over a fleet with groups: the default
// pick (over the three sets of groups), and a pick in one group (statement mode's, by in-use
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
