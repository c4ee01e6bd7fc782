package routing_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// Open a *sql.DB over three proxies and watch the connections spread.
func Example() {
	cluster, err := lbdtest.Start(3) // three MySQL-protocol proxies on loopback
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	// In production: "app:secret@lb(10.0.0.1:2883,10.0.0.2:2883,10.0.0.3:2883)/orders?parseTime=true"
	db, err := lbd.Open(cluster.DSN("parseTime=true&checkHealthIntervalSeconds=5"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Hold six connections at once: lbd puts two on each proxy, so each serves statements.
	ctx := context.Background()
	var conns []*sql.Conn
	for range 6 {
		c, err := db.Conn(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
			log.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	served := 0
	for _, p := range cluster.Proxies() {
		if p.Statements() > 0 {
			served++
		}
	}
	fmt.Println("proxies that served statements:", served)
	// Output:
	// proxies that served statements: 3
}

// A Connector gives options a DSN cannot carry, and Stats shows each node.
func ExampleNewConnector() {
	cluster, err := lbdtest.Start(2)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	connector, err := lbd.NewConnector(cluster.DSN(""),
		lbd.WithCheckHealthInterval(500*time.Millisecond),
		lbd.WithCheckBalanceInterval(2*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close() // also closes the connector and stops its probes

	if _, err := db.Exec("SELECT 1"); err != nil {
		log.Fatal(err)
	}
	for _, n := range connector.Stats().Nodes {
		fmt.Println(n.State, n.Dials <= 1)
	}
	// Output:
	// up true
	// up true
}

// sql.Open works too: lbd registers itself as the "lbd" driver.
func ExampleDriver() {
	db, err := sql.Open("lbd", "app:secret@lb(10.0.0.1:2883,10.0.0.2:2883)/orders?checkHealthIntervalSeconds=2")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fmt.Println("opened; no connection is made until the first statement")

	_, err = sql.Open("lbd", "app:secret@lb(10.0.0.1:2883)/orders?checkHealthIntervalSeconds=soon")
	fmt.Println(err)
	// Output:
	// opened; no connection is made until the first statement
	// lbd: invalid DSN parameter checkHealthIntervalSeconds="soon": must be a whole number of seconds from 1 to 31622400
}
