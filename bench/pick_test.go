package bench

import (
	"fmt"
	"sync"
	"testing"

	"github.com/lbd-go/lbd/internal/pick"
)

// pickSizes are the cluster sizes of the pick benchmark. Past about 20 000 providers an O(n)
// pick per call becomes a real CPU cost (Dubbo's lesson), so the 50 000-node figure should stay
// within a small factor of the 3-node one.
var pickSizes = []int{3, 100, 10_000, 50_000}

// table mirrors what lbd's balancer does on the dial path: under one mutex, take the
// least-loaded node and charge it; when the connection closes, give the count back.
type table struct {
	mu  sync.Mutex
	idx pick.Index[int]
}

func newTable(nodes, openPerNode int) *table {
	t := &table{}
	for i := range nodes {
		t.idx.Insert(&pick.Entry[int]{Value: i})
	}
	for range nodes * openPerNode { // a warm cluster: every node holds some connections
		t.idx.Adjust(t.idx.First(), +1)
	}
	return t
}

func (t *table) pickAndRelease() {
	t.mu.Lock()
	e := t.idx.First()
	t.idx.Adjust(e, +1)
	t.mu.Unlock()
	t.mu.Lock()
	t.idx.Adjust(e, -1)
	t.mu.Unlock()
}

func BenchmarkPick(b *testing.B) {
	for _, n := range pickSizes {
		b.Run(fmt.Sprintf("nodes=%d/serial", n), func(b *testing.B) {
			t := newTable(n, 4)
			b.ReportAllocs()
			for b.Loop() {
				t.pickAndRelease()
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/parallel", n), func(b *testing.B) {
			t := newTable(n, 4)
			b.ReportAllocs()
			b.ResetTimer() // the table's setup is not part of a pick
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					t.pickAndRelease()
				}
			})
		})
	}
}
