// examples/readme/monitoring/main.go: Prometheus metrics and the status page.
package main

import (
	"database/sql"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lbd-go/lbd"
	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
	"github.com/lbd-go/lbd/status"
)

func main() {
	connector, err := lbd.NewConnector("app:secret@lb(10.0.0.1:2883,10.0.0.2:2883)/orders")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	// Per-node series (lbd_node_up, lbd_node_open_connections, ...) next to database/sql's own.
	reg := prometheus.NewRegistry()
	col := lbdprom.NewCollector(connector, lbdprom.Options{})
	defer col.Close()
	reg.MustRegister(col, collectors.NewDBStatsCollector(db, "orders"))

	// The status page: node table, recent transitions, a chart; ?format=json for the same data.
	page, err := status.New(connector, status.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer page.Close()

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/lbd/", page) // mount it behind your own authentication
	log.Fatal(http.ListenAndServe("127.0.0.1:9090", mux))
}
