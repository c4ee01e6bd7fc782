package lbd

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/nodes"
)

// refusingAddrs returns n distinct loopback addresses that refuse connections at once: port 1
// (tcpmux, reserved, with nothing listening) of 127.1.x.y.
func refusingAddrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.1.%d.%d:1", i/250, i%250+1)
	}
	return out
}

// openFDs counts the process's open files; 0 where /proc does not list them.
func openFDs(t testing.TB) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(fds)
}

// heapInUse is the live heap after a full collection plus the goroutines' stacks, bytes: a
// goroutine per node would cost its stack, which the heap alone does not show.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// scaleFleet builds a Connector over one good proxy and sets a list of n nodes, the rest
// refusing, and returns it with the live heap and stacks it added per node (heapInUse), measured
// while the new nodes' first probes run: the least of five readings 100 ms apart from the
// moment SetNodes returns. What a node costs is what stays; the probes' dials and the
// transitions waiting for the loop come and go, and on a busy host the loops fall behind and
// a single reading caught up to a third more. The readings stop at the first of at most
// enough bytes a node: the least of them is then at most enough too, and on a busy host each
// reading (two full collections of a heap this size under -race) takes seconds.
func scaleFleet(t testing.TB, srv *mysqlfake.Server, n int, enough float64, opts ...Option) (c *Connector, perNode float64) {
	t.Helper()
	list := append(refusingAddrs(n-1), srv.Addr())
	before := heapInUse()
	c, err := NewConnector("u:p@lb("+srv.Addr()+")/db?timeout=2s",
		append([]Option{WithLogger(discardLogger()), WithCheckBalanceInterval(time.Hour)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetNodes(list); err != nil {
		t.Fatalf("SetNodes of %d nodes: %v", n, err)
	}
	perNodeOf := func(after uint64) float64 { return float64(after-before) / float64(n) }
	after := heapInUse()
	for range 4 {
		if perNodeOf(after) <= enough {
			break
		}
		time.Sleep(100 * time.Millisecond)
		after = min(after, heapInUse())
	}
	runtime.KeepAlive(list)
	return c, perNodeOf(after)
}

// TestScaleFiftyThousandNodes: a list of 50 000 nodes, one good and the rest refusing, is
// probed by a bounded set of goroutines (DefaultMaxProbes workers and the Connector's few
// loops, whatever the fleet) and costs at most 2 KiB of live heap and stacks per node.
func TestScaleFiftyThousandNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("50 000 nodes: not in -short")
	}
	srv := mysqlfake.Start(t, mysqlfake.Config{})
	base := runtime.NumGoroutine()
	const n = 50_000
	const perNodeLimit = 2048.0
	c, perNode := scaleFleet(t, srv, n, perNodeLimit)
	// Let probing run: every node is probed once at once (SetNodes asks for it), and down
	// nodes again on the recovery schedule.
	var peak, peakFDs int
	waitFor(t, 60*time.Second, "the good node up", func() bool {
		peak = max(peak, runtime.NumGoroutine())
		peakFDs = max(peakFDs, openFDs(t))
		st, ok := nodeState(c, srv.Addr())
		return ok && st == StateUp
	})
	extra := peak - base
	t.Logf("%d nodes: %.0f B of live heap and stacks per node, %d goroutines above the %d before, at most %d open files",
		n, perNode, extra, base, peakFDs)
	if limit := detect.DefaultMaxProbes + 64; peakFDs > limit {
		t.Errorf("%d files open at once with %d nodes, most refusing, want at most %d: a down node holds no socket", peakFDs, n, limit)
	}
	if perNode > perNodeLimit {
		t.Errorf("%.0f B of live heap and stacks per node, want at most %.0f", perNode, perNodeLimit)
	}
	if limit := detect.DefaultMaxProbes + 16; extra > limit {
		t.Errorf("%d goroutines above the start with %d nodes, want at most %d (the probe workers and the loops)", extra, n, limit)
	}
}

// TestNodeListBound: a DSN or a SetNodes list of more than nodes.MaxNodes is refused with an
// error that says the bound and what to do, and SetNodes keeps the current list.
func TestNodeListBound(t *testing.T) {
	srv := mysqlfake.Start(t, mysqlfake.Config{})
	long := append(refusingAddrs(nodes.MaxNodes), srv.Addr())
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, nodes.ErrTooManyNodes) || !strings.Contains(err.Error(), "50000") || !strings.Contains(err.Error(), "split") {
			t.Fatalf("%s of %d nodes: %v, want an error wrapping nodes.ErrTooManyNodes that says the bound and what to do", what, len(long), err)
		}
	}
	_, err := NewConnector("u:p@lb(" + strings.Join(long, ",") + ")/db")
	check("DSN", err)

	_, c := openFakeDB(t, []*mysqlfake.Server{srv}, "", quiet()...)
	check("SetNodes", c.SetNodes(long))
	if st := c.Stats(); len(st.Nodes) != 1 || st.Nodes[0].Addr != srv.Addr() {
		t.Fatalf("after a refused list the Connector has %d nodes, want its one", len(st.Nodes))
	}
}

// BenchmarkFleet: one op is a pick of the node for a new connection and its release, in a
// Connector holding nodes nodes, one good and the rest refusing, while they are probed.
// Reported beside the time: the live heap and stacks per node (heap-B/node) and the goroutines above the
// start (goroutines), which stay at the probe workers plus the Connector's loops whatever the
// fleet. Compare the sizes as ratios within one run.
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{3, 10_000, 50_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			srv := mysqlfake.Start(b, mysqlfake.Config{})
			base := runtime.NumGoroutine()
			c, perNode := scaleFleet(b, srv, n, 0) // every reading: the least is reported
			waitFor(b, 60*time.Second, "the good node up", func() bool {
				st, ok := nodeState(c, srv.Addr())
				return ok && st == StateUp
			})
			peak := runtime.NumGoroutine()
			b.ResetTimer()
			for b.Loop() {
				c.table.Release(c.table.Pick(nil))
			}
			b.StopTimer()
			peak = max(peak, runtime.NumGoroutine())
			b.ReportMetric(perNode, "heap-B/node")
			b.ReportMetric(float64(peak-base), "goroutines")
		})
	}
}
