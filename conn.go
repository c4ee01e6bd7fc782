package lbd

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
)

// Connection states as lbd sees them through database/sql's hooks: database/sql calls IsValid
// when a connection comes back to its pool and ResetSession when it hands it out again.
const (
	connFresh  int32 = iota // dialed, no operation yet: handed to a caller, or parked idle by database/sql
	connInUse               // checked out and used
	connIdle                // in database/sql's free list
	connClosed              // closed by database/sql, or retired while idle or fresh
)

// driverConn is everything go-sql-driver's connection implements; lbd's wrapper keeps every one
// of these interfaces (database/sql changes behaviour when one is missing).
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// conn is one physical connection handed to database/sql. It knows its node, reports errors to
// the exception sorter, and can be retired: dropped by database/sql at its next return or
// checkout, or closed at once when it sits idle. lbd never closes a connection that is in use,
// so a statement or transaction is never cut.
type conn struct {
	dc        driverConn
	node      *node
	connector *Connector
	state     atomic.Int32
	retired   atomic.Bool

	// Statement mode: the queries prepared on this physical connection, and the prepared-set
	// death count at its last sweep. Only the logical connection that claimed it touches them.
	prepared map[*preparedQuery]driverStmt
	swept    uint64
	openRows atomic.Int32 // result sets not yet closed: no other command may be sent meanwhile
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// enter marks the connection in use before any byte is sent. database/sql does not always call
// ResetSession before use (a connection opened in the background and parked idle is handed out
// without it), so every operation claims the connection itself. It fails only when lbd already
// closed the idle or fresh connection, in which case nothing was sent and driver.ErrBadConn
// tells database/sql to retry on another connection.
func (c *conn) enter() error {
	if c.state.Load() == connInUse || c.state.CompareAndSwap(connIdle, connInUse) ||
		c.state.CompareAndSwap(connFresh, connInUse) {
		return nil
	}
	return driver.ErrBadConn
}

// retire marks the connection so the pool drops it; an idle one is closed at once. It reports
// whether the connection was closed at once.
func (c *conn) retire() bool {
	c.markRetired()
	return c.retireIfIdle()
}

// retireIfIdle closes the connection at once if it is idle in the pool or fresh (never used:
// it may sit in the pool without database/sql ever having called IsValid), and reports whether
// it did. database/sql still holds the (now closed) connection; its next operation or checkout
// answers driver.ErrBadConn before any byte is sent, and database/sql moves on.
func (c *conn) retireIfIdle() bool {
	if !c.state.CompareAndSwap(connIdle, connClosed) && !c.state.CompareAndSwap(connFresh, connClosed) {
		return false
	}
	c.markRetired()
	c.closePhysical()
	return true
}

// markRetired marks the connection retired and reports whether this call did it.
func (c *conn) markRetired() bool {
	if c.retired.CompareAndSwap(false, true) {
		c.node.retired.Add(1)
		return true
	}
	return false
}

// isIdle reports a connection not in use: idle in the pool, or fresh.
func (c *conn) isIdle() bool {
	s := c.state.Load()
	return s == connIdle || s == connFresh
}

func (c *conn) closePhysical() error {
	c.node.untrack(c)
	return c.dc.Close()
}

// observe passes err through unchanged after letting the exception sorter look at it: a fatal
// error retires the connection (it closes when database/sql returns it to the pool) and is
// counted against the node.
func (c *conn) observe(err error) error {
	if err != nil && err != driver.ErrSkip {
		c.connector.onConnError(c, err)
	}
	return err
}

// Close implements driver.Conn; database/sql calls it when it drops the connection.
func (c *conn) Close() error {
	for {
		s := c.state.Load()
		if s == connClosed {
			return nil
		}
		if c.state.CompareAndSwap(s, connClosed) {
			return c.closePhysical()
		}
	}
}

// IsValid implements driver.Validator: database/sql calls it when the connection returns to the
// pool. A retired connection answers false, so database/sql closes it.
func (c *conn) IsValid() bool {
	if c.retired.Load() {
		return false
	}
	if !c.state.CompareAndSwap(connInUse, connIdle) && !c.state.CompareAndSwap(connFresh, connIdle) &&
		c.state.Load() != connIdle {
		return false
	}
	if c.retired.Load() { // retired between the check and the swap, while still in use
		c.retireIfIdle()
		return false
	}
	return c.dc.IsValid()
}

// ResetSession implements driver.SessionResetter: database/sql calls it when it hands a pooled
// connection out. A retired connection answers driver.ErrBadConn before anything is sent, and
// database/sql moves on to another connection.
func (c *conn) ResetSession(ctx context.Context) error {
	if err := c.enter(); err != nil {
		return err
	}
	if c.retired.Load() {
		return driver.ErrBadConn
	}
	// Not shown to the sorter: go-sql-driver answers driver.ErrBadConn here for a connection that
	// died while idle (a proxy restart leaves a pool of them), which says nothing about the node
	// now. database/sql closes it and moves on without the application seeing an error.
	return c.dc.ResetSession(ctx)
}

// Prepare implements driver.Conn.
func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	st, err := c.dc.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.observe(err)
	}
	return newStmt(c, st), nil
}

// Begin implements driver.Conn.
//
// Deprecated: database/sql calls BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	tx, err := c.dc.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.observe(err)
	}
	return &txWrap{c: c, tx: tx}, nil
}

// ExecContext implements driver.ExecerContext. driver.ErrSkip from go-sql-driver (arguments
// without interpolateParams) passes through untouched so database/sql falls back to a prepared
// statement.
func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	res, err := c.dc.ExecContext(ctx, query, args)
	return res, c.observe(err)
}

// QueryContext implements driver.QueryerContext.
func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	rows, err := c.dc.QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.observe(err)
	}
	return wrapRows(c, rows), nil
}

// Ping implements driver.Pinger.
func (c *conn) Ping(ctx context.Context) error {
	if err := c.enter(); err != nil {
		return err
	}
	return c.observe(c.dc.Ping(ctx))
}

// CheckNamedValue implements driver.NamedValueChecker with go-sql-driver's own rules.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.dc.CheckNamedValue(nv)
}

// Raw returns go-sql-driver's own connection, for code that needs it through sql.Conn.Raw.
func (c *conn) Raw() driver.Conn { return c.dc }
