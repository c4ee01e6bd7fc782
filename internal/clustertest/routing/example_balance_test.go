package routing_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// In statement mode one worker's statements spread over every proxy, while a transaction stays
// on one.
func ExampleWithBalance() {
	cluster, err := lbdtest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	// The same as the DSN parameter balance=statement.
	c, err := lbd.NewConnector(cluster.DSN(""), lbd.WithBalance(lbd.BalanceStatement))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()

	ctx := context.Background()
	for range 30 {
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			log.Fatal(err)
		}
	}
	served := 0
	for _, p := range cluster.Proxies() {
		if p.Statements() >= 10 {
			served++
		}
	}
	fmt.Println("proxies that served at least 10 of 30 statements:", served)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	var first, second int64
	tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&first)
	tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&second)
	tx.Commit()
	fmt.Println("one connection for the whole transaction:", first == second)
	fmt.Println("mode:", c.Stats().Balance)
	// Output:
	// proxies that served at least 10 of 30 statements: 3
	// one connection for the whole transaction: true
	// mode: statement
}
