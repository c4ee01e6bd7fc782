package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
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
