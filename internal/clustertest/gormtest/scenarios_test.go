package gormtest

import (
	"testing"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// The shared scenarios (CRUD, transactions, fatal and non-fatal errors, a failing proxy), in
// both balance modes, through GORM's own calls and the Plugin.
func TestScenarios(t *testing.T) { adaptertest.RunScenarios(t, gormAdapter{}) }

// gormAdapter opens GORM for the shared scenarios: setup, with the Plugin retrying reads when
// the scenario asks.
type gormAdapter struct{}

func (gormAdapter) Open(t *testing.T, balance string, cfg adaptertest.Config) (*adaptertest.Env, adaptertest.Lib) {
	t.Helper()
	e := setup(t, balance, gormplugin.Plugin{RetryReads: cfg.RetryReads}, cfg.Options...)
	return e.shared, gormLib{e}
}

// gormLib does the scenarios' operations with GORM's chain API on the test's table.
type gormLib struct{ e *env }

func (l gormLib) Insert(it item) error { return insert(l.e.tbl(), it) }

func (l gormLib) ByName(name string) (item, error) {
	var got item
	err := l.e.tbl().Where("name = ?", name).First(&got).Error
	return got, err
}

func (l gormLib) ByNames(names ...string) ([]item, error) {
	var got []item
	err := l.e.tbl().Where("name IN ?", names).Order("id").Find(&got).Error
	return got, err
}

func (l gormLib) QtyAtLeast(qty int) ([]item, error) {
	var got []item
	err := l.e.tbl().Where("qty >= ?", qty).Order("id").Find(&got).Error
	return got, err
}

func (l gormLib) All() ([]item, error) {
	var got []item
	err := l.e.tbl().Order("id").Find(&got).Error
	return got, err
}

func (l gormLib) First() (item, error) {
	var got item
	err := l.e.tbl().First(&got).Error
	return got, err
}

func (l gormLib) AddQty(atLeast, add int) (int64, error) {
	res := l.e.tbl().Where("qty >= ?", atLeast).Update("qty", gorm.Expr("qty + ?", add))
	return res.RowsAffected, res.Error
}

func (l gormLib) DeleteBelow(qty int) (int64, error) {
	res := l.e.tbl().Where("qty < ?", qty).Delete(&item{})
	return res.RowsAffected, res.Error
}

func (l gormLib) Count() (int64, error) {
	var n int64
	err := l.e.tbl().Count(&n).Error
	return n, err
}

func (l gormLib) CountQtyAtLeast(qty int) (int64, error) {
	var n int64
	err := l.e.tbl().Where("qty >= ?", qty).Count(&n).Error
	return n, err
}

// Transaction is GORM's: it rolls back when body fails and returns body's error.
func (l gormLib) Transaction(body func(adaptertest.Tx) error) error {
	return l.e.db.Transaction(func(tx *gorm.DB) error { return body(gormTx{tx, l.e.table}) })
}

// Logged returns the Plugin's lines.
func (l gormLib) Logged() ([]string, bool) { return l.e.log.lbdErrors(), true }

// gormTx does the scenarios' operations in a GORM transaction.
type gormTx struct {
	tx    *gorm.DB
	table string
}

func (x gormTx) Insert(it item) error { return insert(x.tx.Table(x.table), it) }

func (x gormTx) SetQty(id int64, qty int) error {
	return x.tx.Table(x.table).Where("id = ?", id).Update("qty", qty).Error
}

func (x gormTx) ByID(id int64) (item, error) {
	var got item
	err := x.tx.Table(x.table).Where("id = ?", id).First(&got).Error
	return got, err
}

// insert creates it in the table db is on; GORM leaves a zero ID to AUTO_INCREMENT.
func insert(db *gorm.DB, it item) error { return db.Create(&it).Error }
