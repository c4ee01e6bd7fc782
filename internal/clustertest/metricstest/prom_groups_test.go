package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
)

// TestCollectorShowsGroups: lbd_node_group_info carries one series per group of each node, none
// for a node of no group.
func TestCollectorShowsGroups(t *testing.T) {
	second, c := groupConnector(t, "isolatedGroups=analytics")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(lbdprom.NewCollector(c, lbdprom.Options{}))
	got := series(t, reg)["lbd_node_group_info"]
	if len(got) != 2 || got["group=analytics,node="+second] != 1 || got["group=reporting,node="+second] != 1 {
		t.Fatalf("lbd_node_group_info %v: want %s in analytics and reporting, one series each", got, second)
	}
}
