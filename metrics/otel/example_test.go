package lbdotel_test

import (
	"log"

	"go.opentelemetry.io/otel"

	"github.com/lbd-go/lbd"
	lbdotel "github.com/lbd-go/lbd/metrics/otel"
)

// Registering a Connector with the application's global MeterProvider.
func ExampleRegister() {
	connector, err := lbd.NewConnector("app:secret@lb(127.0.0.1:2883,127.0.0.1:2884)/orders")
	if err != nil {
		log.Fatal(err)
	}
	defer connector.Close()
	metrics, err := lbdotel.Register(connector, otel.GetMeterProvider(), lbdotel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer metrics.Close()
}

// Giving every statement a client span and a db.client.operation.duration measurement, with
// the application's global TracerProvider and MeterProvider, and the proxy that ran it in
// network.peer.address and network.peer.port.
func ExampleWithStatementTelemetry() {
	db, err := lbd.Open("app:secret@lb(127.0.0.1:2883,127.0.0.1:2884)/orders",
		lbdotel.WithStatementTelemetry(lbdotel.StatementOptions{
			TracerProvider: otel.GetTracerProvider(),
			MeterProvider:  otel.GetMeterProvider(),
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
}
