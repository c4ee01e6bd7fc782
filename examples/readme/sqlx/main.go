// examples/readme/sqlx/main.go: sqlx with ? bind variables.
package main

import (
	"fmt"
	"log"

	"github.com/lbd-go/lbd/sqlxadapter"
)

type Order struct {
	ID    int64 `db:"id"`
	Total int   `db:"total"`
}

func main() {
	db, err := sqlxadapter.Open("app:secret@lb(10.0.0.1:2883,10.0.0.2:2883)/orders?balance=statement")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var orders []Order
	if err := db.Select(&orders, "SELECT id, total FROM orders WHERE total > ?", 10); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(orders), "orders")
}
