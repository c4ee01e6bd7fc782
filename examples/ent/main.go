// Command ent runs ent over lbd: the generated client on a database/sql pool whose Connector
// balances over the proxies, reads on the replica and writes on the primary.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/examples/ent/ent"
	"github.com/lbd-go/lbd/examples/ent/ent/customer"
)

func main() {
	connector, err := lbd.NewConnector("app:secret@lb(10.0.0.1:3306#primary,10.0.0.2:3306#replica)/shop" +
		"?parseTime=true&balance=statement&readWriteSplit=true")
	if err != nil {
		log.Fatal(err)
	}
	// ent's MySQL driver over the pool lbd balances; closing the client closes both.
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.MySQL, sql.OpenDB(connector))))
	defer client.Close()

	ctx := context.Background()
	if err := client.Schema.Create(ctx); err != nil { // the migration runs on the primary
		log.Fatal(err)
	}
	if err := run(ctx, client, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run creates a customer and its orders in one transaction (on the primary: ent's inserts are
// writes, and a transaction stays on one node), then loads the customers with their orders
// (reads: on the replica) and prints them to w.
func run(ctx context.Context, client *ent.Client, w io.Writer) error {
	tx, err := client.Tx(ctx)
	if err != nil {
		return err
	}
	alice, err := tx.Customer.Create().SetName("alice").Save(ctx)
	if err == nil {
		_, err = tx.Order.CreateBulk(
			tx.Order.Create().SetCustomer(alice).SetTotal(30),
			tx.Order.Create().SetCustomer(alice).SetTotal(12),
		).Save(ctx)
	}
	if err != nil {
		return fmt.Errorf("%w (rollback: %v)", err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	customers, err := client.Customer.Query().
		Where(customer.Name("alice")).
		WithOrders(). // eager loading: a second SELECT for every customer's orders
		All(ctx)
	if err != nil {
		return err
	}
	for _, c := range customers {
		total := 0
		for _, o := range c.Edges.Orders {
			total += o.Total
		}
		fmt.Fprintf(w, "%s: %d orders, %d in all\n", c.Name, len(c.Edges.Orders), total)
	}
	return nil
}
