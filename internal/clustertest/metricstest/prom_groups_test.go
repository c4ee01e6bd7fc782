package metricstest

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
)

// TestCollectorShowsGroups: lbd_node_group_info carries one series per group of each node, none
// for a node of no group.
func TestCollectorShowsGroups(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	second := cl.Proxy(1).Addr()
	dsn := strings.Replace(cl.DSN("isolatedGroups=analytics"), second, second+"+reporting+analytics", 1)
	c, err := lbd.NewConnector(dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(lbdprom.NewCollector(c, lbdprom.Options{}))
	got := series(t, reg)["lbd_node_group_info"]
	if len(got) != 2 || got["group=analytics,node="+second] != 1 || got["group=reporting,node="+second] != 1 {
		t.Fatalf("lbd_node_group_info %v: want %s in analytics and reporting, one series each", got, second)
	}
}
