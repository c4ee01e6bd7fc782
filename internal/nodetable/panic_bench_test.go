package nodetable

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// BenchmarkCheckoutState compares the checks a checkout makes (IsUp, one atomic load; UpSince,
// two) with reading the state under the table's mutex, from every CPU at once.
func BenchmarkCheckoutState(b *testing.B) {
	tab, err := New(Config[int]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := tab.Start(nodes.StaticAddrs("a:1"), func(*Node[int]) (int, error) { return 0, nil }); err != nil {
		b.Fatal(err)
	}
	n := tab.Nodes(nil)[0]
	b.Run("IsUp", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !tab.IsUp(n) {
					b.Fatal("down")
				}
			}
		})
	})
	b.Run("UpSince", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !tab.UpSince(n, 0) {
					b.Fatal("down")
				}
			}
		})
	})
	b.Run("State", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if tab.State(n) != Up {
					b.Fatal("down")
				}
			}
		})
	})
}

// BenchmarkPanicPick measures one panic-mode pick and its end with every node down: O(number
// of down nodes), paid only in panic mode.
func BenchmarkPanicPick(b *testing.B) {
	for _, size := range []int{3, 100, 10_000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			tab, err := New(Config[int]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			addrs := make([]string, size)
			for i := range addrs {
				addrs[i] = fmt.Sprintf("10.0.%d.%d:3306", i/256, i%256)
			}
			if err := tab.Start(nodes.StaticAddrs(addrs...), func(*Node[int]) (int, error) { return 0, nil }); err != nil {
				b.Fatal(err)
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for _, n := range tab.Nodes(nil) {
				tab.Probed(n, now, errRefused, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				n := tab.PanicPick(nil, now)
				if n == nil {
					b.Fatal("no pick")
				}
				tab.Dialed(n, errRefused) // it failed: the next pick takes another node
				tab.PanicDialed(n, errRefused)
				tab.Release(n)
			}
		})
	}
}
