// examples/readme/sql/main.go: database/sql over three proxies.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/lbd-go/lbd"
)

func main() {
	// The proxies in lb(...), lbd's parameters beside go-sql-driver's.
	db, err := lbd.Open("app:secret@lb(10.0.0.1:2883,10.0.0.2:2883,10.0.0.3:2883)/orders" +
		"?parseTime=true&timeout=2s&checkHealthIntervalSeconds=5")
	if err != nil {
		log.Fatal(err) // a bad DSN names the parameter; nothing is dialed yet
	}
	defer db.Close() // also stops lbd's probes and loops

	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		log.Fatal(err) // *lbd.ConnectError names every proxy and its cause
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders:", n)
}
