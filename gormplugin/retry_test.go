package gormplugin

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd"
)

// nullDriver is a database/sql driver whose connections answer nothing but transactions: enough
// for *sql.DB, *sql.Tx and *sql.Conn values to hand to canRetry, which judges a statement by the
// pool it runs on, without a server.
type nullDriver struct{}

type nullConn struct{}

func (nullDriver) Open(string) (driver.Conn, error) { return nullConn{}, nil }
func (nullConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("nullDriver runs no statement")
}
func (nullConn) Close() error              { return nil }
func (nullConn) Begin() (driver.Tx, error) { return nullConn{}, nil }
func (nullConn) Commit() error             { return nil }
func (nullConn) Rollback() error           { return nil }

func init() { sql.Register("gormplugin-null", nullDriver{}) }

func TestCanRetry(t *testing.T) {
	sqlDB, err := sql.Open("gormplugin-null", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	tx, err := sqlDB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	conn, err := sqlDB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel()

	h := &hooks{retryReads: true}
	cases := []struct {
		name string
		pool gorm.ConnPool
		ctx  context.Context
		sql  string
		err  error
		want bool
	}{
		{"pool", sqlDB, context.Background(), "SELECT 1", nil, true},
		{"prepared statements over the pool", &gorm.PreparedStmtDB{ConnPool: sqlDB}, context.Background(), "SELECT 1", nil, true},
		{"transaction", tx, context.Background(), "SELECT 1", nil, false},
		{"prepared statements in a transaction", &gorm.PreparedStmtTX{Tx: tx}, context.Background(), "SELECT 1", nil, false},
		{"dedicated connection", conn, context.Background(), "SELECT 1", nil, false},
		{"context done", sqlDB, done, "SELECT 1", nil, false},
		{"not a read", sqlDB, context.Background(), "CALL p()", nil, false},
		{"a read and a write", sqlDB, context.Background(), "SELECT 1; DELETE FROM t", nil, false},
		{"a read of the session", sqlDB, context.Background(), "SELECT FOUND_ROWS()", nil, false},
		{"the Connector gave up already", sqlDB, context.Background(), "SELECT 1",
			fmt.Errorf("x: %w", &lbd.ConnectError{NoTarget: true, Target: lbd.TargetPrimary}), false},
	}
	for _, c := range cases {
		db := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{ConnPool: c.pool, Context: c.ctx}}
		db.Statement.SQL.WriteString(c.sql)
		if got := h.canRetry(db, c.err); got != c.want {
			t.Errorf("%s: canRetry = %v, want %v", c.name, got, c.want)
		}
	}
	off := &hooks{}
	db := &gorm.DB{Config: &gorm.Config{}, Statement: &gorm.Statement{ConnPool: sqlDB, Context: context.Background()}}
	db.Statement.SQL.WriteString("SELECT 1")
	if off.canRetry(db, nil) {
		t.Error("canRetry without RetryReads")
	}
	var _ *sql.Tx = tx
}
