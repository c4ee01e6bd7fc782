package oteltest

import (
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	lbdotel "github.com/lbd-go/lbd/metrics/otel"
)

// TestGroupGauge: lbd.node.group is 1 for each group of each node, and reports nothing for a
// node of no group.
func TestGroupGauge(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	second := cl.Proxy(1).Addr()
	c, err := lbd.NewConnector(strings.Replace(cl.DSN(""), second, second+"+reporting+analytics", 1), lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(t.Context())
	m, err := lbdotel.Register(c, mp, lbdotel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, _ := points(t, reader)
	db := c.Config().MySQL.DBName
	for _, g := range []string{"analytics", "reporting"} {
		if v, ok := got["lbd.node.group"][key(second+"/"+db, "127.0.0.1", portOf(t, second), lbdotel.NodeGroupKey.String(g))]; !ok || v != 1 {
			t.Errorf("%s lbd.node.group %s = %d (present %v), want 1", second, g, v, ok)
		}
	}
	if n := len(got["lbd.node.group"]); n != 2 {
		t.Errorf("%d lbd.node.group points, want 2", n)
	}
}
