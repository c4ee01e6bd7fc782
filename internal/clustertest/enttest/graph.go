// Package enttest runs ent, with the client generated from ./ent/schema, over lbd: in its tests
// the shared scenarios of adaptertest and the relation scenarios, in both balance modes and with
// the read/write split on lbdtest; GraphAdapter serves the relation scenarios over the real
// MariaDB pair, which run with clustertest's other pair tests.
package enttest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/internal/clustertest/enttest/ent"
	"github.com/lbd-go/lbd/internal/clustertest/enttest/ent/customer"
	"github.com/lbd-go/lbd/internal/clustertest/enttest/ent/order"
)

// openClient opens the generated client over c as an application does: database/sql's pool
// over the Connector, under ent's MySQL driver. Closing the client, at test end, closes both.
func openClient(t testing.TB, c *lbd.Connector) (*ent.Client, *sql.DB) {
	t.Helper()
	db := sql.OpenDB(c)
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.MySQL, db)))
	t.Cleanup(func() { client.Close() })
	return client, db
}

// withTx runs fn in a transaction of c's: it commits if fn returns nil, and otherwise rolls back
// and returns fn's error unchanged (or, if the rollback fails, an error that says so).
func withTx(ctx context.Context, c *ent.Client, fn func(tx *ent.Tx) error) error {
	tx, err := c.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("rollback after %v: %w", err, rerr)
		}
		return err
	}
	return tx.Commit()
}

// GraphAdapter opens the generated client for adaptertest's relation scenarios (RunGraphScenarios,
// RunGraphOnPair).
type GraphAdapter struct{}

// Prefix is the start of the schema's table names.
func (GraphAdapter) Prefix() string { return "lbd_ent_" }

// OpenGraph opens the client over c: see adaptertest.GraphAdapter.
func (GraphAdapter) OpenGraph(t *testing.T, c *lbd.Connector) (adaptertest.Graph, *sql.DB) {
	client, db := openClient(t, c)
	return entGraph{client}, db
}

// entGraph does the relation scenarios' operations with the generated client.
type entGraph struct{ c *ent.Client }

func (g entGraph) CreateCustomer(ctx context.Context, name string, totals ...int) (adaptertest.Customer, error) {
	var out adaptertest.Customer
	err := withTx(ctx, g.c, func(tx *ent.Tx) error {
		cu, err := tx.Customer.Create().SetName(name).Save(ctx)
		if err != nil {
			return err
		}
		orders := make([]*ent.OrderCreate, len(totals))
		for i, total := range totals {
			orders[i] = tx.Order.Create().SetCustomerID(cu.ID).SetTotal(total)
		}
		cu.Edges.Orders, err = tx.Order.CreateBulk(orders...).Save(ctx)
		out = customerOf(cu)
		return err
	})
	return out, err
}

func (g entGraph) Customers(ctx context.Context, prefix string) ([]adaptertest.Customer, error) {
	cus, err := g.c.Customer.Query().
		Where(customer.NameHasPrefix(prefix)).
		WithOrders(func(q *ent.OrderQuery) { q.Order(ent.Asc(order.FieldID)) }).
		Order(ent.Asc(customer.FieldID)).
		All(ctx)
	out := make([]adaptertest.Customer, len(cus))
	for i, cu := range cus {
		out[i] = customerOf(cu)
	}
	return out, err
}

func (g entGraph) AddToTotals(ctx context.Context, id int64, add int) (int64, error) {
	n, err := g.c.Order.Update().Where(order.CustomerID(id)).AddTotal(add).Save(ctx)
	return int64(n), err
}

func (g entGraph) Rename(ctx context.Context, id int64, name string) (adaptertest.Customer, error) {
	cu, err := g.c.Customer.UpdateOneID(id).SetName(name).Save(ctx)
	if err != nil {
		return adaptertest.Customer{}, err
	}
	return customerOf(cu), nil
}

func (g entGraph) Insert(ctx context.Context, name string) (adaptertest.Customer, error) {
	cu, err := g.c.Customer.Create().SetName(name).Save(ctx)
	if err != nil {
		return adaptertest.Customer{}, err
	}
	return customerOf(cu), nil
}

// QueryWrite sends query through the client's QueryContext (the sql/execquery feature).
func (g entGraph) QueryWrite(ctx context.Context, query string, args ...any) ([]adaptertest.Customer, error) {
	rows, err := g.c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []adaptertest.Customer
	for len(cols) > 0 && rows.Next() {
		var cu adaptertest.Customer
		if err := rows.Scan(&cu.ID, &cu.Name); err != nil {
			return nil, err
		}
		out = append(out, cu)
	}
	return out, rows.Err()
}

// DeleteReturning: ent's builders add RETURNING for PostgreSQL and SQLite, never for MySQL.
func (entGraph) DeleteReturning(context.Context, int64) (adaptertest.Customer, bool, error) {
	return adaptertest.Customer{}, false, nil
}

// customerOf converts a customer and the orders loaded with it.
func customerOf(cu *ent.Customer) adaptertest.Customer {
	out := adaptertest.Customer{ID: cu.ID, Name: cu.Name}
	for _, o := range cu.Edges.Orders {
		out.Orders = append(out.Orders, adaptertest.Order{ID: o.ID, CustomerID: o.CustomerID, Total: o.Total})
	}
	return out
}
