package lbd

import (
	"database/sql"
	"database/sql/driver"
	"errors"
)

// DriverName is the name lbd registers with database/sql: sql.Open("lbd", dsn).
const DriverName = "lbd"

func init() {
	sql.Register(DriverName, Driver{})
}

// Driver is lbd's database/sql driver. database/sql uses OpenConnector, so each sql.Open gets
// one Connector, closed by DB.Close.
type Driver struct{}

var _ driver.DriverContext = Driver{}

// OpenConnector implements driver.DriverContext: NewConnector(dsn).
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	return NewConnector(dsn)
}

// Open implements driver.Driver. database/sql never calls it for lbd (it prefers
// OpenConnector); a single connection without a Connector could not be balanced, so it fails.
func (Driver) Open(string) (driver.Conn, error) {
	return nil, errors.New(`lbd: Driver.Open is not supported: use sql.Open("lbd", dsn), lbd.Open or lbd.NewConnector`)
}
