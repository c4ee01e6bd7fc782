package buntest

import (
	"context"
	"reflect"
	"testing"

	"github.com/uptrace/bun"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// The shared scenarios (CRUD, transactions, fatal and non-fatal errors, a failing proxy), in
// both balance modes, through bun's query builders.
func TestScenarios(t *testing.T) { adaptertest.RunScenarios(t, bunAdapter{}) }

// item is the row of the shared scenarios (adaptertest.Item), in the table its tag names.
type item struct {
	bun.BaseModel `bun:"table:lbd_bun_items,alias:item"`

	ID   int64  `bun:"id,pk,autoincrement"`
	Name string `bun:"name,notnull"`
	Qty  int    `bun:"qty,notnull"`
}

var ctx = context.Background()

// bunAdapter opens bun for the shared scenarios, on the table its model names.
type bunAdapter struct{}

func (bunAdapter) Open(t *testing.T, balance string, cfg adaptertest.Config) (*adaptertest.Env, adaptertest.Lib) {
	t.Helper()
	e := adaptertest.NewEnv(t, balance, "bun", cfg.Options...)
	db := openDB(t, e.Connector)
	e.DB = db.DB
	e.FixedTable(t, db.Table(reflect.TypeFor[item]()).Name)
	e.CreateTable(t, func(query string) error {
		_, err := db.NewRaw(query).Exec(ctx)
		return err
	})
	return e, bunLib{db}
}

// bunLib does the scenarios' operations with bun's query builders.
type bunLib struct{ db *bun.DB }

func (l bunLib) Insert(it adaptertest.Item) error { return insert(l.db, it) }

func (l bunLib) ByName(name string) (adaptertest.Item, error) {
	return one(l.db, func(q *bun.SelectQuery) *bun.SelectQuery { return q.Where("name = ?", name) })
}

func (l bunLib) ByNames(names ...string) ([]adaptertest.Item, error) {
	return all(l.db.NewSelect().Where("name IN (?)", bun.List(names)))
}

func (l bunLib) QtyAtLeast(qty int) ([]adaptertest.Item, error) {
	return all(l.db.NewSelect().Where("qty >= ?", qty))
}

func (l bunLib) All() ([]adaptertest.Item, error) { return all(l.db.NewSelect()) }

func (l bunLib) First() (adaptertest.Item, error) {
	return one(l.db, func(q *bun.SelectQuery) *bun.SelectQuery { return q })
}

func (l bunLib) AddQty(atLeast, add int) (int64, error) {
	return affected(l.db.NewUpdate().Model((*item)(nil)).Set("qty = qty + ?", add).Where("qty >= ?", atLeast).Exec(ctx))
}

// DeleteBelow names the table without its alias: bun's dialect writes DELETE FROM t AS alias for
// a server that says it is MySQL 8.0.16 or newer, as lbdtest's in-memory backend does (8.0.31),
// and that backend cannot parse the alias there.
func (l bunLib) DeleteBelow(qty int) (int64, error) {
	return affected(l.db.NewDelete().Model((*item)(nil)).ModelTableExpr("?TableName").Where("qty < ?", qty).Exec(ctx))
}

func (l bunLib) Count() (int64, error) { return l.CountQtyAtLeast(-1 << 31) }

func (l bunLib) CountQtyAtLeast(qty int) (int64, error) {
	n, err := l.db.NewSelect().Model((*item)(nil)).Where("qty >= ?", qty).Count(ctx)
	return int64(n), err
}

// Transaction is bun's RunInTx: it rolls back when body fails and returns body's error.
func (l bunLib) Transaction(body func(adaptertest.Tx) error) error {
	return l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return body(bunTx{tx}) })
}

// Logged: bun has no lbd integration that logs.
func (bunLib) Logged() ([]string, bool) { return nil, false }

// bunTx does the scenarios' operations in a bun transaction.
type bunTx struct{ tx bun.Tx }

func (x bunTx) Insert(it adaptertest.Item) error { return insert(x.tx, it) }

func (x bunTx) SetQty(id int64, qty int) error {
	_, err := x.tx.NewUpdate().Model(&item{ID: id, Qty: qty}).Column("qty").WherePK().Exec(ctx)
	return err
}

func (x bunTx) ByID(id int64) (adaptertest.Item, error) {
	return one(x.tx, func(q *bun.SelectQuery) *bun.SelectQuery { return q.Where("id = ?", id) })
}

// insert creates it; a zero ID is left to AUTO_INCREMENT.
func insert(db bun.IDB, it adaptertest.Item) error {
	_, err := db.NewInsert().Model(&item{ID: it.ID, Name: it.Name, Qty: it.Qty}).Exec(ctx)
	return err
}

// one returns the first row, by id, that where selects.
func one(db bun.IDB, where func(*bun.SelectQuery) *bun.SelectQuery) (adaptertest.Item, error) {
	var it item
	err := where(db.NewSelect().Model(&it)).Order("id").Limit(1).Scan(ctx)
	return adaptertest.Item{ID: it.ID, Name: it.Name, Qty: it.Qty}, err
}

// all returns the rows q selects, by id.
func all(q *bun.SelectQuery) ([]adaptertest.Item, error) {
	var its []item
	err := q.Model(&its).Order("id").Scan(ctx)
	out := make([]adaptertest.Item, len(its))
	for i, it := range its {
		out[i] = adaptertest.Item{ID: it.ID, Name: it.Name, Qty: it.Qty}
	}
	return out, err
}
