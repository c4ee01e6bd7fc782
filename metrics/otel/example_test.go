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
