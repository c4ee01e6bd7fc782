package physical

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"reflect"
)

// The wrappers below exist only so that errors from prepared statements, transactions and row
// iteration reach the exception sorter. Each keeps every optional interface of the
// go-sql-driver value it wraps.

// FullStmt is everything go-sql-driver's prepared statement implements; lbd's wrappers keep
// every one of these interfaces. (database/sql's own statement wrapper is driverStmt; this is
// the driver's side.)
type FullStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.NamedValueChecker
	//lint:ignore SA1019 go-sql-driver still offers it; dropping it would change database/sql's conversions
	driver.ColumnConverter
}

type stmt struct {
	c     *Conn
	st    FullStmt
	query string // the text prepared: what a refusal of an execution proves depends on it
}

var (
	_ FullStmt    = (*stmt)(nil)
	_ driverRows  = (*rows)(nil)
	_ driver.Tx   = (*txWrap)(nil)
	_ driver.Stmt = (*stmt)(nil)
	_ driver.Rows = (*rows)(nil)
)

// newStmt wraps a go-sql-driver statement; one that lacks the expected interfaces is returned
// unwrapped rather than losing any of them.
func newStmt(c *Conn, st driver.Stmt, query string) driver.Stmt {
	ds, ok := st.(FullStmt)
	if !ok {
		return st
	}
	return &stmt{c: c, st: ds, query: query}
}

// Close closes the statement on the server. database/sql also closes statements of a connection
// that sits idle in its pool (Stmt.Close, and the connection's own final close after a failed
// checkout), while lbd may be closing that idle connection from another goroutine (a node went
// down, a rebalance): the statement claims the connection for the write, as a checkout would,
// and when lbd has closed it already, the statement is gone with it and nothing is written.
func (s *stmt) Close() (err error) {
	if err := s.c.brokenErr(); err != nil {
		return nil // closed with its connection
	}
	c := s.c
	from, ok := c.stmtClaim()
	if !ok {
		return nil // lbd closed the connection, and the statement with it
	}
	defer c.stmtRelease(from) // idle again, unless Close came meanwhile
	defer c.contain(&err)
	return c.observe(context.Background(), s.st.Close())
}

func (s *stmt) NumInput() int { return s.st.NumInput() }

func (s *stmt) Exec(args []driver.Value) (_ driver.Result, err error) {
	if err := s.c.enterText(s.query); err != nil {
		return nil, err
	}
	if tr := s.c.tracing(); tr != nil {
		sp := tr.Start(context.Background(), OpExec, s.query, s.c.node)
		defer sp.end(&err)
	}
	defer s.c.node.land(&err, s.c.node.depart())
	defer s.c.contain(&err)
	res, err := s.st.Exec(args) // deprecated driver.Stmt method, kept for callers of the old interface
	return res, s.c.observeText(context.Background(), err, s.query)
}

func (s *stmt) Query(args []driver.Value) (out driver.Rows, err error) {
	if err := s.c.enterText(s.query); err != nil {
		return nil, err
	}
	if tr := s.c.tracing(); tr != nil {
		sp := tr.StartQuery(context.Background(), s.query, s.c.node)
		defer sp.endQuery(&out, &err)
	}
	defer s.c.node.land(&err, s.c.node.depart())
	defer s.c.contain(&err)
	r, err := s.st.Query(args) // deprecated driver.Stmt method, kept for callers of the old interface
	if err != nil {
		return s.c.readFailed(context.Background(), s.query, namedValues(args), s.c.observeText(context.Background(), err, s.query))
	}
	return wrapRows(context.Background(), s.c, r), nil
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := s.c.checkGroup(ctx); err != nil {
		return nil, err
	}
	if err := s.c.enterText(s.query); err != nil {
		return nil, err
	}
	if tr := s.c.tracing(); tr != nil {
		sp := tr.Start(ctx, OpExec, s.query, s.c.node)
		defer sp.end(&err)
	}
	defer s.c.node.land(&err, s.c.node.depart())
	defer s.c.contain(&err)
	res, err := s.st.ExecContext(ctx, args)
	return res, s.c.observeText(ctx, err, s.query)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (out driver.Rows, err error) {
	if err := s.c.checkGroup(ctx); err != nil {
		return nil, err
	}
	if err := s.c.enterText(s.query); err != nil {
		return nil, err
	}
	if tr := s.c.tracing(); tr != nil {
		sp := tr.StartQuery(ctx, s.query, s.c.node)
		defer sp.endQuery(&out, &err)
	}
	defer s.c.node.land(&err, s.c.node.depart())
	defer s.c.contain(&err)
	r, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return s.c.readFailed(ctx, s.query, args, s.c.observeText(ctx, err, s.query))
	}
	return wrapRows(ctx, s.c, r), nil
}

func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error { return s.st.CheckNamedValue(nv) }

func (s *stmt) ColumnConverter(idx int) driver.ValueConverter { return s.st.ColumnConverter(idx) }

// txWrap is a transaction. go-sql-driver's COMMIT and ROLLBACK watch no context, so lbd bounds
// them by the transaction's own (BeginTx's) context: when it ends, the proxy's answer is no
// longer awaited.
type txWrap struct {
	c   *Conn
	tx  driver.Tx
	ctx context.Context
}

func (t *txWrap) Commit() error   { return t.end(OpCommit, t.tx.Commit) }
func (t *txWrap) Rollback() error { return t.end(OpRollback, t.tx.Rollback) }

func (t *txWrap) end(op Op, do func() error) (err error) {
	if err := t.c.brokenErr(); err != nil {
		return err
	}
	if tr := t.c.tracing(); tr != nil {
		sp := tr.Start(t.ctx, op, "", t.c.node)
		defer sp.end(&err)
	}
	defer t.c.node.land(&err, t.c.node.depart())
	defer t.c.contain(&err)
	defer t.c.inTx.Store(false)
	bound := t.c.sock.LimitTo(t.ctx)
	err = do()
	if bound.Lift() && err != nil {
		err = fmt.Errorf("lbd: %w while waiting for the proxy to end the transaction: %w", context.Cause(t.ctx), err)
	}
	return t.c.observe(t.ctx, err)
}

type driverRows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// rows is a result set. go-sql-driver stops watching the query's context before it reads the
// rest of the result at Close, so lbd bounds that read by the context itself, unless the rest
// is already in go-sql-driver's buffer (a point select's row and its end come in one read):
// then Close reads nothing from the proxy, and a context that ended meanwhile costs nothing.
type rows struct {
	c      *Conn
	r      driverRows
	ctx    context.Context // the query's
	closed bool
	ended  bool   // the last result set was read to its end: Close has nothing left to read
	after  func() // run once the rows closed (QueryOnce: closes a connection made for them)
	span   *Span  // the query's, ended when the rows close; nil when not traced
}

func wrapRows(ctx context.Context, c *Conn, r driver.Rows) driver.Rows {
	dr, ok := r.(driverRows)
	if !ok {
		return r
	}
	c.openRows.Add(1)
	return &rows{c: c, r: dr, ctx: ctx}
}

// AfterClose arranges for fn to run once r, rows a Conn or one of its statements returned, is
// closed, after the rest of its result was read and before what closing it runs already (a
// connection made for one query closes after fn). It reports false, and fn never runs, when r
// is not lbd's or is closed.
func AfterClose(r driver.Rows, fn func()) bool {
	w, ok := r.(*rows)
	if !ok || w.closed {
		return false
	}
	if then := w.after; then != nil {
		w.after = func() { fn(); then() }
	} else {
		w.after = fn
	}
	return true
}

func (r *rows) Columns() []string { return r.r.Columns() }

func (r *rows) Close() (err error) {
	if sp := r.span; sp != nil {
		r.span = nil
		defer func() { sp.endRows(err) }()
	}
	if !r.closed {
		r.closed = true
		r.c.openRows.Add(-1)
		if r.after != nil {
			defer r.after()
		}
	}
	if err := r.c.brokenErr(); err != nil {
		return err
	}
	defer r.c.contain(&err)
	if r.ended || r.c.sock.AnswerRead() {
		return r.c.observeResult(r.ctx, r.r.Close())
	}
	bound := r.c.sock.LimitTo(r.ctx)
	err = r.r.Close()
	if bound.Lift() && err != nil {
		err = fmt.Errorf("lbd: %w while reading the rest of the result: %w", context.Cause(r.ctx), err)
	}
	return r.c.observeResult(r.ctx, err)
}

// Next passes io.EOF (the normal end of rows) through without asking the sorter.
func (r *rows) Next(dest []driver.Value) (err error) {
	if err := r.c.brokenErr(); err != nil {
		return err
	}
	defer r.c.contain(&err)
	err = r.r.Next(dest)
	if err == nil {
		return nil
	}
	if isEndOfRows(err) {
		r.ended = !r.r.HasNextResultSet()
		return err
	}
	return r.failed(r.c.observeResult(r.ctx, err))
}

// failed returns err, an error met reading the rows, after recording it for the query's span.
func (r *rows) failed(err error) error {
	if r.span != nil {
		r.span.failRows(err)
	}
	return err
}

func (r *rows) HasNextResultSet() bool { return r.c.brokenErr() == nil && r.r.HasNextResultSet() }

func (r *rows) NextResultSet() (err error) {
	if err := r.c.brokenErr(); err != nil {
		return err
	}
	defer r.c.contain(&err)
	err = r.r.NextResultSet()
	if err == nil || isEndOfRows(err) {
		return err
	}
	return r.failed(r.c.observeResult(r.ctx, err))
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string { return r.r.ColumnTypeDatabaseTypeName(i) }
func (r *rows) ColumnTypeNullable(i int) (bool, bool)   { return r.r.ColumnTypeNullable(i) }
func (r *rows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return r.r.ColumnTypePrecisionScale(i)
}
func (r *rows) ColumnTypeScanType(i int) reflect.Type { return r.r.ColumnTypeScanType(i) }

// isEndOfRows reports the driver's normal end-of-data signal, which is not an error.
func isEndOfRows(err error) bool { return err == io.EOF }

// namedValues turns the deprecated Stmt.Query's arguments into QueryContext's, by position.
func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
