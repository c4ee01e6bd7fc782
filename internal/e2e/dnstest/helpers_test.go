package dnstest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// TestMain fails the run when any goroutine outlives the tests. The fault cases of
// TestConnectorThroughDNSFaults (three) and TestFaultsKeepTheList (one per fault of the
// catalogue) run in parallel, each waiting on its fault and lookup rounds: unless
// -test.parallel is given, all of a test's cases at once.
func TestMain(m *testing.M) {
	testkit.DefaultParallel(len(faults))
	goleak.VerifyTestMain(m)
}

// sourceGoroutines counts goroutines running this package's code, right now: Close must have
// waited for all of them.
func sourceGoroutines() int { return testkit.GoroutinesIn("github.com/lbd-go/lbd/nodes/dns") }

// Shared helpers, under the names these tests use.
type (
	logs    = testkit.Logs
	updates = nodestest.Updates
)

var waitFor = testkit.WaitFor
