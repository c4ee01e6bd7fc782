package e2e

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the package when a goroutine outlives the tests: every Connector, source,
// config-server, HTTP server, proxy cluster and etcd member started here must be stopped by the
// test that started it. No goroutine is ignored.
func TestMain(m *testing.M) {
	testkit.VerifyTestMain(m)
}
