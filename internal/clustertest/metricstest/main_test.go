// Package metricstest holds the tests of the exporters, OpenTelemetry (otel_*) and Prometheus
// (prom_*), over the in-process cluster: one test binary for both, so the cluster's engine
// starts once.
package metricstest

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// roleConnector is a Connector over two proxies with the role check on (roleCheck=mysql) and
// probes every 20 ms, for the exporters' role series.
func roleConnector(t *testing.T) (*lbdtest.Cluster, *lbd.Connector) {
	t.Helper()
	cl := lbdtest.NewCluster(t, 2)
	c, err := lbd.NewConnector(cl.DSN("roleCheck=mysql"), lbd.WithLogger(slog.New(slog.DiscardHandler)),
		lbd.WithCheckHealthInterval(20*time.Millisecond), lbd.WithCheckHealthTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return cl, c
}

// groupConnector is a Connector over two proxies, the second in the groups reporting and
// analytics; params go into the DSN.
func groupConnector(t *testing.T, params string) (second string, c *lbd.Connector) {
	t.Helper()
	cl := lbdtest.NewCluster(t, 2)
	second = cl.Proxy(1).Addr()
	dsn := strings.Replace(cl.DSN(params), second, second+"+reporting+analytics", 1)
	c, err := lbd.NewConnector(dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return second, c
}
