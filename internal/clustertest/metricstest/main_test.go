// Package metricstest holds the tests of the exporters, OpenTelemetry (otel_*) and Prometheus
// (prom_*), over the in-process cluster: one test binary for both, so the cluster's engine
// starts once.
package metricstest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }
