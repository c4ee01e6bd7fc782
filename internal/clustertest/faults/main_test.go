// Package faults tests how lbd finds and reacts to proxies that fail: probes and their verdicts,
// stalls and passive ejection, fatal errors, hung, stopped and garbage-answering proxies,
// announced shutdowns and drains, and how soon each fault is seen.
package faults

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }
