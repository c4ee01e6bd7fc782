package sqlxtest

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// The shared scenarios (CRUD, transactions, fatal and non-fatal errors, a failing proxy), in
// both balance modes, through sqlx's own calls.
func TestScenarios(t *testing.T) { adaptertest.RunScenarios(t, sqlxAdapter{}) }

// sqlxLib does the scenarios' operations with sqlx's own calls (NamedExec, Get, Select, In,
// Rebind, Beginx) on the test's table.
type sqlxLib struct {
	db    *sqlx.DB
	table string
}

func (l sqlxLib) q(query string) string { return q(l.table, query) }

func (l sqlxLib) Insert(it item) error { return insert(l.db, l.table, it) }

func (l sqlxLib) ByName(name string) (item, error) {
	var got item
	err := l.db.Get(&got, l.q("SELECT * FROM {t} WHERE name = ?"), name)
	return got, err
}

func (l sqlxLib) ByNames(names ...string) ([]item, error) {
	query, args, err := sqlx.In(l.q("SELECT * FROM {t} WHERE name IN (?) ORDER BY id"), names)
	if err != nil {
		return nil, err
	}
	var got []item
	err = l.db.Select(&got, l.db.Rebind(query), args...)
	return got, err
}

func (l sqlxLib) QtyAtLeast(qty int) ([]item, error) {
	var got []item
	err := l.db.Select(&got, l.q("SELECT * FROM {t} WHERE qty >= ? ORDER BY id"), qty)
	return got, err
}

func (l sqlxLib) All() ([]item, error) {
	var got []item
	err := l.db.Select(&got, l.q("SELECT * FROM {t} ORDER BY id"))
	return got, err
}

func (l sqlxLib) First() (item, error) {
	var got item
	err := l.db.Get(&got, l.q("SELECT * FROM {t} ORDER BY id LIMIT 1"))
	return got, err
}

func (l sqlxLib) AddQty(atLeast, add int) (int64, error) {
	return rowsAffected(l.db.Exec(l.q("UPDATE {t} SET qty = qty + ? WHERE qty >= ?"), add, atLeast))
}

func (l sqlxLib) DeleteBelow(qty int) (int64, error) {
	return rowsAffected(l.db.Exec(l.q("DELETE FROM {t} WHERE qty < ?"), qty))
}

func (l sqlxLib) Count() (int64, error) {
	var n int64
	err := l.db.Get(&n, l.q("SELECT COUNT(*) FROM {t}"))
	return n, err
}

func (l sqlxLib) CountQtyAtLeast(qty int) (int64, error) {
	var n int64
	err := l.db.Get(&n, l.q("SELECT COUNT(*) FROM {t} WHERE qty >= ?"), qty)
	return n, err
}

// Transaction begins with Beginx and commits, or rolls back when body fails.
func (l sqlxLib) Transaction(body func(adaptertest.Tx) error) error {
	tx, err := l.db.Beginx()
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := body(sqlxTx{tx, l.table}); err != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("rollback after %v: %v", err, rerr) // not body's error, nor wrapping it
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Logged reports that sqlx's integration logs nothing.
func (sqlxLib) Logged() ([]string, bool) { return nil, false }

// sqlxTx does the scenarios' operations in an sqlx transaction.
type sqlxTx struct {
	tx    *sqlx.Tx
	table string
}

func (x sqlxTx) Insert(it item) error { return insert(x.tx, x.table, it) }

func (x sqlxTx) SetQty(id int64, qty int) error {
	_, err := x.tx.Exec(q(x.table, "UPDATE {t} SET qty = ? WHERE id = ?"), qty, id)
	return err
}

func (x sqlxTx) ByID(id int64) (item, error) {
	var got item
	err := x.tx.Get(&got, q(x.table, "SELECT * FROM {t} WHERE id = ?"), id)
	return got, err
}

// insert adds it to table with NamedExec of the DB or a transaction, naming the id only when
// it has one (so that a zero ID is left to AUTO_INCREMENT).
func insert(db interface {
	NamedExec(query string, arg interface{}) (sql.Result, error)
}, table string, it item) error {
	query := "INSERT INTO {t} (id, name, qty) VALUES (:id, :name, :qty)"
	if it.ID == 0 {
		query = "INSERT INTO {t} (name, qty) VALUES (:name, :qty)"
	}
	_, err := db.NamedExec(q(table, query), it)
	return err
}

// rowsAffected returns the rows an Exec affected, or its error.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
