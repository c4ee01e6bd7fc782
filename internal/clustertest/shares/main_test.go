// Package shares tests how lbd shares statements and connections among its proxies at the
// defaults: weights give their shares at every concurrency, in statement and connection mode,
// equal proxies an even spread, and many one-worker clients a third each, judged beside CPU load
// it starts itself.
package shares

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }
