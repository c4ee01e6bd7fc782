// examples/readme/split/main.go: reads to the replicas, writes to the primary, roles checked.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/lbd-go/lbd"
)

func main() {
	// Statement mode binds a proxy per statement; roleCheck=mysql asks each server's
	// @@global.read_only on its probe, so a switchover is followed without a restart.
	db, err := lbd.Open("app:secret@lb(db1:3306,db2:3306,db3:3306)/orders" +
		"?balance=statement&readWriteSplit=true&roleCheck=mysql&readAfterWriteMillis=300")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// One request's scope: its reads after its own write go to the primary for 300 ms.
	ctx := lbd.ReadYourWrites(context.Background())
	if _, err := db.ExecContext(ctx, "UPDATE orders SET total = total + 1 WHERE id = ?", 7); err != nil {
		log.Fatal(err) // a write never runs on a replica
	}
	var total int
	if err := db.QueryRowContext(ctx, "SELECT total FROM orders WHERE id = ?", 7).Scan(&total); err != nil {
		log.Fatal(err)
	}
	fmt.Println("total:", total)
}
