// Package leastload tests the load policy (balancePolicy=least-load, the default) against
// least-connections: a slow proxy sheds statements without starving and loses pooled
// connections to the rebalancer, proxies of one speed share evenly, and many Connectors with
// estimates of their own do not herd onto the one that measured fastest.
package leastload

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }
