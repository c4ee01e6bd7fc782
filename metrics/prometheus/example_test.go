package lbdprom_test

import (
	"database/sql"
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/lbd-go/lbd"
	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
)

// A Collector registered next to database/sql's own pool collector, and the series it exports
// for two nodes before any connection: the latency histograms appear with the first probe or
// dial, and are left out here.
func ExampleNewCollector() {
	connector, err := lbd.NewConnector("app:secret@lb(127.0.0.1:2883,127.0.0.1:2884)/orders")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	col := lbdprom.NewCollector(connector, lbdprom.Options{ConstLabels: prometheus.Labels{"db_name": "orders"}})
	defer col.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(col, collectors.NewDBStatsCollector(db, "orders"))

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "lbd_") && f.GetType() != dto.MetricType_HISTOGRAM {
			fmt.Println(f.GetName(), len(f.GetMetric()))
		}
	}
	// Output:
	// lbd_logical_connections 1
	// lbd_node_dial_failures_total 2
	// lbd_node_dials_total 2
	// lbd_node_effective_weight 2
	// lbd_node_fatal_errors_total 2
	// lbd_node_idle_connections 2
	// lbd_node_in_use_connections 2
	// lbd_node_info 2
	// lbd_node_latency_seconds 2
	// lbd_node_open_connections 2
	// lbd_node_passive_signals_total 2
	// lbd_node_probe_failures_total 2
	// lbd_node_probes_total 2
	// lbd_node_retired_connections_total 12
	// lbd_node_speed_ratio 2
	// lbd_node_standby 2
	// lbd_node_state 6
	// lbd_node_transitions_total 16
	// lbd_node_up 2
	// lbd_node_warmup_ratio 2
	// lbd_node_weight 2
}
