package enttest

import (
	"context"
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/internal/clustertest/enttest/ent"
	"github.com/lbd-go/lbd/internal/clustertest/enttest/ent/item"
)

type row = adaptertest.Item

// The shared scenarios (CRUD, transactions, fatal and non-fatal errors, a failing proxy), in
// both balance modes, through the generated ent client.
func TestScenarios(t *testing.T) { adaptertest.RunScenarios(t, entAdapter{}) }

// entAdapter opens the ent client for the shared scenarios, on the table its schema names.
type entAdapter struct{}

func (entAdapter) Open(t *testing.T, balance string, cfg adaptertest.Config) (*adaptertest.Env, adaptertest.Lib) {
	t.Helper()
	e := adaptertest.NewEnv(t, balance, "ent", cfg.Options...)
	client, db := openClient(t, e.Connector)
	e.DB = db
	e.FixedTable(t, item.Table)
	e.CreateTable(t, func(query string) error {
		_, err := client.ExecContext(context.Background(), query)
		return err
	})
	return e, entLib{client}
}

// entLib does the scenarios' operations with the generated client's builders.
type entLib struct{ c *ent.Client }

var ctx = context.Background()

func (l entLib) Insert(it row) error { return insert(l.c.Item, it) }

func (l entLib) ByName(name string) (row, error) {
	return one(l.c.Item.Query().Where(item.Name(name)).Order(ent.Asc(item.FieldID)).First(ctx))
}

func (l entLib) ByNames(names ...string) ([]row, error) {
	return all(l.c.Item.Query().Where(item.NameIn(names...)).Order(ent.Asc(item.FieldID)).All(ctx))
}

func (l entLib) QtyAtLeast(qty int) ([]row, error) {
	return all(l.c.Item.Query().Where(item.QtyGTE(qty)).Order(ent.Asc(item.FieldID)).All(ctx))
}

func (l entLib) All() ([]row, error) {
	return all(l.c.Item.Query().Order(ent.Asc(item.FieldID)).All(ctx))
}

func (l entLib) First() (row, error) {
	return one(l.c.Item.Query().Order(ent.Asc(item.FieldID)).First(ctx))
}

func (l entLib) AddQty(atLeast, add int) (int64, error) {
	n, err := l.c.Item.Update().Where(item.QtyGTE(atLeast)).AddQty(add).Save(ctx)
	return int64(n), err
}

func (l entLib) DeleteBelow(qty int) (int64, error) {
	n, err := l.c.Item.Delete().Where(item.QtyLT(qty)).Exec(ctx)
	return int64(n), err
}

func (l entLib) Count() (int64, error) {
	n, err := l.c.Item.Query().Count(ctx)
	return int64(n), err
}

func (l entLib) CountQtyAtLeast(qty int) (int64, error) {
	n, err := l.c.Item.Query().Where(item.QtyGTE(qty)).Count(ctx)
	return int64(n), err
}

// Transaction runs body in an ent transaction: Commit when it returns nil, Rollback otherwise.
func (l entLib) Transaction(body func(adaptertest.Tx) error) error {
	return withTx(ctx, l.c, func(tx *ent.Tx) error { return body(entTx{tx}) })
}

// Logged: ent has no lbd integration that logs.
func (entLib) Logged() ([]string, bool) { return nil, false }

// entTx does the scenarios' operations in an ent transaction.
type entTx struct{ tx *ent.Tx }

func (x entTx) Insert(it row) error { return insert(x.tx.Item, it) }

func (x entTx) SetQty(id int64, qty int) error {
	return x.tx.Item.UpdateOneID(id).SetQty(qty).Exec(ctx)
}

func (x entTx) ByID(id int64) (row, error) { return one(x.tx.Item.Get(ctx, id)) }

// insert creates it; a zero ID is left to AUTO_INCREMENT.
func insert(c *ent.ItemClient, it row) error {
	b := c.Create().SetName(it.Name).SetQty(it.Qty)
	if it.ID != 0 {
		b.SetID(it.ID)
	}
	return b.Exec(ctx)
}

func one(it *ent.Item, err error) (row, error) {
	if err != nil {
		return row{}, err
	}
	return row{ID: it.ID, Name: it.Name, Qty: it.Qty}, nil
}

func all(its []*ent.Item, err error) ([]row, error) {
	out := make([]row, 0, len(its))
	for _, it := range its {
		got, _ := one(it, nil)
		out = append(out, got)
	}
	return out, err
}
