package metricstest

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	lbdotel "github.com/lbd-go/lbd/metrics/otel"
)

// TestGroupGauge: lbd.node.group is 1 for each group of each node, and reports nothing for a
// node of no group.
func TestGroupGauge(t *testing.T) {
	second, c := groupConnector(t, "")
	reader := sdkmetric.NewManualReader()
	if _, err := lbdotel.Register(c, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), lbdotel.Options{}); err != nil {
		t.Fatal(err)
	}
	got, _ := points(t, reader)
	pool, port := second+"/"+c.Config().MySQL.DBName, portOf(t, second)
	for _, g := range []string{"analytics", "reporting"} {
		if v, ok := got["lbd.node.group"][key(pool, "127.0.0.1", port, lbdotel.NodeGroupKey.String(g))]; !ok || v != 1 {
			t.Errorf("%s lbd.node.group %s = %d (present %v), want 1", second, g, v, ok)
		}
	}
	if n := len(got["lbd.node.group"]); n != 2 {
		t.Errorf("%d lbd.node.group points, want 2", n)
	}
}
