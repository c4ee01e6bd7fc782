package lbd

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"
)

// The wrappers below exist only so that errors from prepared statements, transactions and row
// iteration reach the exception sorter. Each keeps every optional interface of the
// go-sql-driver value it wraps.

type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.NamedValueChecker
	//lint:ignore SA1019 go-sql-driver still offers it; dropping it would change database/sql's conversions
	driver.ColumnConverter
}

type stmt struct {
	c  *conn
	st driverStmt
}

var (
	_ driverStmt  = (*stmt)(nil)
	_ driverRows  = (*rows)(nil)
	_ driver.Tx   = (*txWrap)(nil)
	_ driver.Stmt = (*stmt)(nil)
	_ driver.Rows = (*rows)(nil)
)

// newStmt wraps a go-sql-driver statement; one that lacks the expected interfaces is returned
// unwrapped rather than losing any of them.
func newStmt(c *conn, st driver.Stmt) driver.Stmt {
	ds, ok := st.(driverStmt)
	if !ok {
		return st
	}
	return &stmt{c: c, st: ds}
}

func (s *stmt) Close() error  { return s.c.observe(s.st.Close()) }
func (s *stmt) NumInput() int { return s.st.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	res, err := s.st.Exec(args) // deprecated driver.Stmt method, kept for callers of the old interface
	return res, s.c.observe(err)
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	r, err := s.st.Query(args) // deprecated driver.Stmt method, kept for callers of the old interface
	if err != nil {
		return nil, s.c.observe(err)
	}
	return wrapRows(s.c, r), nil
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.enter(); err != nil {
		return nil, err
	}
	res, err := s.st.ExecContext(ctx, args)
	return res, s.c.observe(err)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.enter(); err != nil {
		return nil, err
	}
	r, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, s.c.observe(err)
	}
	return wrapRows(s.c, r), nil
}

func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error { return s.st.CheckNamedValue(nv) }

func (s *stmt) ColumnConverter(idx int) driver.ValueConverter { return s.st.ColumnConverter(idx) }

type txWrap struct {
	c  *conn
	tx driver.Tx
}

func (t *txWrap) Commit() error   { return t.c.observe(t.tx.Commit()) }
func (t *txWrap) Rollback() error { return t.c.observe(t.tx.Rollback()) }

type driverRows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

type rows struct {
	c      *conn
	r      driverRows
	closed bool
}

func wrapRows(c *conn, r driver.Rows) driver.Rows {
	dr, ok := r.(driverRows)
	if !ok {
		return r
	}
	c.openRows.Add(1)
	return &rows{c: c, r: dr}
}

func (r *rows) Columns() []string { return r.r.Columns() }

func (r *rows) Close() error {
	if !r.closed {
		r.closed = true
		r.c.openRows.Add(-1)
	}
	return r.c.observe(r.r.Close())
}

// Next passes io.EOF (the normal end of rows) through without asking the sorter.
func (r *rows) Next(dest []driver.Value) error {
	err := r.r.Next(dest)
	if err == nil || isEndOfRows(err) {
		return err
	}
	return r.c.observe(err)
}

func (r *rows) HasNextResultSet() bool { return r.r.HasNextResultSet() }

func (r *rows) NextResultSet() error {
	err := r.r.NextResultSet()
	if err == nil || isEndOfRows(err) {
		return err
	}
	return r.c.observe(err)
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string { return r.r.ColumnTypeDatabaseTypeName(i) }
func (r *rows) ColumnTypeNullable(i int) (bool, bool)   { return r.r.ColumnTypeNullable(i) }
func (r *rows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return r.r.ColumnTypePrecisionScale(i)
}
func (r *rows) ColumnTypeScanType(i int) reflect.Type { return r.r.ColumnTypeScanType(i) }

// isEndOfRows reports the driver's normal end-of-data signal, which is not an error.
func isEndOfRows(err error) bool { return err == io.EOF }
