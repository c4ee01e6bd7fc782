// Package buntest runs bun, with its MySQL dialect, over lbd: in its tests the shared scenarios
// of adaptertest and the relation scenarios, in both balance modes and with the read/write split
// on lbdtest; GraphAdapter serves the relation scenarios over the real MariaDB pair, which run
// with clustertest's other pair tests.
package buntest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/feature"
	"github.com/uptrace/bun/dialect/mysqldialect"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// openDB opens bun over c as an application does: database/sql's pool over the Connector, under
// bun's MySQL dialect (which asks the server's VERSION() to choose its features: on MariaDB
// 10.5 and newer, INSERT and DELETE ... RETURNING). Closing it, at test end, closes both.
func openDB(t testing.TB, c *lbd.Connector) *bun.DB {
	t.Helper()
	db := bun.NewDB(sql.OpenDB(c), mysqldialect.New())
	t.Cleanup(func() { db.Close() })
	return db
}

// customer and order are the relation scenarios' rows, in the tables their tags name.
type customer struct {
	bun.BaseModel `bun:"table:lbd_bun_customers,alias:customer"`

	ID     int64    `bun:"id,pk,autoincrement"`
	Name   string   `bun:"name,notnull"`
	Orders []*order `bun:"rel:has-many,join:id=customer_id"`
}

type order struct {
	bun.BaseModel `bun:"table:lbd_bun_orders,alias:ord"`

	ID         int64 `bun:"id,pk,autoincrement"`
	CustomerID int64 `bun:"customer_id,notnull"`
	Total      int   `bun:"total,notnull"`
}

// GraphAdapter opens bun for adaptertest's relation scenarios (RunGraphScenarios,
// RunGraphOnPair).
type GraphAdapter struct{}

// Prefix is the start of the models' table names.
func (GraphAdapter) Prefix() string { return "lbd_bun_" }

// OpenGraph opens bun over c: see adaptertest.GraphAdapter.
func (GraphAdapter) OpenGraph(t *testing.T, c *lbd.Connector) (adaptertest.Graph, *sql.DB) {
	db := openDB(t, c)
	return bunGraph{db}, db.DB
}

// bunGraph does the relation scenarios' operations with bun's query builders.
type bunGraph struct{ db *bun.DB }

func (g bunGraph) CreateCustomer(ctx context.Context, name string, totals ...int) (adaptertest.Customer, error) {
	cu := customer{Name: name}
	err := g.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&cu).Exec(ctx); err != nil {
			return err
		}
		for _, total := range totals {
			cu.Orders = append(cu.Orders, &order{CustomerID: cu.ID, Total: total})
		}
		_, err := tx.NewInsert().Model(&cu.Orders).Exec(ctx)
		return err
	})
	return customerOf(cu), err
}

func (g bunGraph) Customers(ctx context.Context, prefix string) ([]adaptertest.Customer, error) {
	var cus []customer
	err := g.db.NewSelect().Model(&cus).
		Relation("Orders", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Order("ord.id") }).
		Where("customer.name LIKE ?", prefix+"%").
		Order("customer.id").
		Scan(ctx)
	out := make([]adaptertest.Customer, len(cus))
	for i, cu := range cus {
		out[i] = customerOf(cu)
	}
	return out, err
}

func (g bunGraph) AddToTotals(ctx context.Context, id int64, add int) (int64, error) {
	return affected(g.db.NewUpdate().Model((*order)(nil)).Set("total = total + ?", add).Where("customer_id = ?", id).Exec(ctx))
}

// Rename updates the one column of the entity by its primary key, then reads it back.
func (g bunGraph) Rename(ctx context.Context, id int64, name string) (adaptertest.Customer, error) {
	cu := customer{ID: id, Name: name}
	if _, err := g.db.NewUpdate().Model(&cu).Column("name").WherePK().Exec(ctx); err != nil {
		return adaptertest.Customer{}, err
	}
	cu = customer{ID: id}
	err := g.db.NewSelect().Model(&cu).WherePK().Scan(ctx)
	return customerOf(cu), err
}

func (g bunGraph) Insert(ctx context.Context, name string) (adaptertest.Customer, error) {
	cu := customer{Name: name}
	_, err := g.db.NewInsert().Model(&cu).Exec(ctx)
	return customerOf(cu), err
}

// QueryWrite sends query with NewRaw and scans its rows into customers: bun's Scan runs
// QueryContext.
func (g bunGraph) QueryWrite(ctx context.Context, query string, args ...any) ([]adaptertest.Customer, error) {
	var cus []customer
	err := g.db.NewRaw(query, args...).Scan(ctx, &cus)
	var out []adaptertest.Customer
	for _, cu := range cus {
		out = append(out, customerOf(cu))
	}
	return out, err
}

// DeleteReturning uses bun's delete with Returning, which its MySQL dialect allows on MariaDB
// only.
func (g bunGraph) DeleteReturning(ctx context.Context, id int64) (adaptertest.Customer, bool, error) {
	if !g.db.HasFeature(feature.DeleteReturning) {
		return adaptertest.Customer{}, false, nil
	}
	cu := customer{ID: id}
	_, err := g.db.NewDelete().Model(&cu).WherePK().Returning("id, name").Exec(ctx)
	return customerOf(cu), true, err
}

// customerOf converts a customer and the orders loaded with it.
func customerOf(cu customer) adaptertest.Customer {
	out := adaptertest.Customer{ID: cu.ID, Name: cu.Name}
	for _, o := range cu.Orders {
		out.Orders = append(out.Orders, adaptertest.Order{ID: o.ID, CustomerID: o.CustomerID, Total: o.Total})
	}
	return out
}

// affected returns the rows a statement affected, or its error.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
