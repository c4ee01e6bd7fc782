package lbd

import (
	"github.com/lbd-go/lbd/internal/testkit"

	"testing"
)

// TestMain fails the package when any goroutine outlives the tests: every Connector, probe,
// rebalancer and stats loop must stop on Close.
func TestMain(m *testing.M) {
	testkit.VerifyTestMain(m)
}
