// Package recovery tests lbd while proxies are down and as they return or join: panic mode and
// its threshold, the retry budget with every proxy down, and slow start (warm-up) after
// scale-out and after an outage.
package recovery

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }
