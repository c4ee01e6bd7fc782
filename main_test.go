package lbd

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the package when any goroutine outlives the tests: every Connector, probe,
// rebalancer and stats loop must stop on Close.
//
// The hostile suite's parallel cases wait on deadlines and probes rather than the CPU, so
// unless -test.parallel is given, up to hostileParallel of them run at once.
func TestMain(m *testing.M) {
	testkit.DefaultParallel(hostileParallel)
	testkit.VerifyTestMain(m)
}

// hostileParallel is how many hostile cases run at once by default.
const hostileParallel = 6
