package clusterkit

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// Parallel is how many functional tests of a cluster suite run at once by default.
const Parallel = 4

// Main is the TestMain of every cluster suite. It fails the package when any goroutine outlives
// the tests: every Connector, probe, rebalancer and stats loop must stop on Close.
//
// The tests that call t.Parallel wait on sleeps, outages and deadlines rather than the CPU, or
// take milliseconds, and judge no time tightly, so unless -test.parallel is given, up to
// Parallel of them run at once. Go runs the other tests first, one at a time and alone: those
// that judge shares, latencies or how soon a fault is seen (probes at intervals of 50-500 ms
// whose timeouts a busy process misses), those that keep the CPU busy on their own (thousands
// of statements or dials: beside each other they stretched from 3 s to 25 s and ran out of
// their waits), those that count the process's goroutines, and those that change process-wide
// state (registrations, the environment).
func Main(m *testing.M) {
	testkit.DefaultParallel(Parallel)
	testkit.VerifyTestMain(m)
}
