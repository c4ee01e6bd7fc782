// Package sqlxadapter opens github.com/jmoiron/sqlx over an lbd Connector, so that an sqlx
// application talks to a cluster of MySQL-protocol proxies directly:
//
//	db, err := sqlxadapter.Open("user:pass@lb(10.0.0.1:2883,10.0.0.2:2883)/app?parseTime=true")
//	if err != nil { ... }
//	defer db.Close() // also stops the connector's probes and rebalancer
//
// The *sqlx.DB is registered with sqlx under the driver name "mysql", so its bind variables
// are "?" and Rebind, In, Named and NamedExec behave as with go-sql-driver/mysql alone.
//
// Nothing sqlx-specific is needed beyond that: balancing, probing and the handling of fatal
// errors all happen in the Connector, below database/sql. A fatal error (OceanBase 8000–8999,
// SQLSTATE class 08, a broken connection, ...) is returned unchanged, its connection is never
// reused, and repeated fatal errors take the proxy out of rotation.
package sqlxadapter

import (
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd"
)

// DriverName is the driver name the *sqlx.DB carries. sqlx derives the bind variable style
// from it (QUESTION for "mysql").
const DriverName = "mysql"

// Open builds a Connector for dsn (see lbd.ParseDSN) with opts and returns NewDb of it. Like
// sqlx.Open it makes no connection; use PingContext to check the cluster. Close the DB to close
// the Connector.
func Open(dsn string, opts ...lbd.Option) (*sqlx.DB, error) {
	c, err := lbd.NewConnector(dsn, opts...)
	if err != nil {
		return nil, err
	}
	return NewDb(c), nil
}

// NewDb returns sqlx.NewDb(sql.OpenDB(c), DriverName): an *sqlx.DB over c with "?" bind
// variables. Closing it closes c (database/sql calls the Connector's Close from DB.Close).
func NewDb(c *lbd.Connector) *sqlx.DB {
	return sqlx.NewDb(sql.OpenDB(c), DriverName)
}
