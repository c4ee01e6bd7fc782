// Command bun runs bun over lbd: bun's MySQL dialect on a database/sql pool whose Connector
// balances over the proxies, reads on the replica and writes on the primary.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"

	"github.com/lbd-go/lbd"
)

type Customer struct {
	ID     int64    `bun:"id,pk,autoincrement"`
	Name   string   `bun:"name,notnull"`
	Orders []*Order `bun:"rel:has-many,join:id=customer_id"`
}

type Order struct {
	ID         int64 `bun:"id,pk,autoincrement"`
	CustomerID int64 `bun:"customer_id,notnull"`
	Total      int   `bun:"total,notnull"`
}

func main() {
	connector, err := lbd.NewConnector("app:secret@lb(10.0.0.1:3306#primary,10.0.0.2:3306#replica)/shop" +
		"?parseTime=true&balance=statement&readWriteSplit=true")
	if err != nil {
		log.Fatal(err)
	}
	// bun's MySQL dialect asks the server's VERSION() here: on MariaDB 10.5 and newer bun's
	// inserts use INSERT ... RETURNING, sent through QueryContext; lbd runs them on the primary.
	db := bun.NewDB(sql.OpenDB(connector), mysqldialect.New())
	defer db.Close() // also closes the Connector

	ctx := context.Background()
	for _, model := range []any{(*Customer)(nil), (*Order)(nil)} {
		if _, err := db.NewCreateTable().Model(model).IfNotExists().Exec(ctx); err != nil {
			log.Fatal(err)
		}
	}
	if err := run(ctx, db, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run creates a customer and its orders in one transaction (on the primary), then loads the
// customers with their orders (reads: on the replica) and prints them to w.
func run(ctx context.Context, db *bun.DB, w io.Writer) error {
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		alice := &Customer{Name: "alice"}
		if _, err := tx.NewInsert().Model(alice).Exec(ctx); err != nil {
			return err
		}
		orders := []*Order{{CustomerID: alice.ID, Total: 30}, {CustomerID: alice.ID, Total: 12}}
		_, err := tx.NewInsert().Model(&orders).Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}

	var customers []Customer
	err = db.NewSelect().Model(&customers).
		Relation("Orders"). // eager loading: a second SELECT for every customer's orders
		Where("name = ?", "alice").
		Scan(ctx)
	if err != nil {
		return err
	}
	for _, c := range customers {
		total := 0
		for _, o := range c.Orders {
			total += o.Total
		}
		fmt.Fprintf(w, "%s: %d orders, %d in all\n", c.Name, len(c.Orders), total)
	}
	return nil
}
