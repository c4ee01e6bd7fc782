package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// Connection states as lbd sees them through database/sql's hooks: database/sql calls IsValid
// when a connection comes back to its pool and ResetSession when it hands it out again.
const (
	connFresh  int32 = iota // dialed, no operation yet: handed to a caller, or parked idle by database/sql
	connInUse               // checked out and used
	connIdle                // in database/sql's free list
	connClosed              // closed by database/sql, or retired while idle or fresh
)

// fullConn is everything go-sql-driver's connection implements; lbd's wrapper keeps every one
// of these interfaces (database/sql changes behaviour when one is missing). database/sql's own
// wrapper of a connection is driverConn; this is the driver's side.
type fullConn interface {
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
	dc        fullConn
	tc        *trackedConn // the socket beneath dc
	node      *node
	connector *Connector
	state     atomic.Int32
	retired   atomic.Bool
	inTx      atomic.Bool           // between BeginTx and the end of Commit or Rollback
	epoch     uint64                // the node's Epoch when the connection was adopted (see retireBefore)
	broken    atomic.Pointer[error] // set once the proxy broke the protocol; dc is closed then

	// Statement mode: the queries prepared on this physical connection, and the prepared-set
	// death count at its last sweep. Only the logical connection that claimed it touches them.
	prepared map[*preparedQuery]fullStmt
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
// without it), so every operation claims the connection itself. It fails, with nothing sent and
// driver.ErrBadConn telling database/sql to retry on another connection, when lbd already closed
// the idle or fresh connection, or when this is a checkout (not an operation of a connection
// already in use) and the node is not up: from the moment the node table shows the node down
// or draining, none of its connections is handed out, whether or not the transition has been
// handled yet. That check is one atomic load.
func (c *conn) enter() error {
	if c.broken.Load() != nil {
		return driver.ErrBadConn
	}
	if c.state.Load() == connInUse {
		return nil
	}
	if !c.connector.table.IsUp(c.node.tn) {
		c.markRetired(retireReasonFor(NodeState(c.connector.table.StateNow(c.node.tn))))
		return driver.ErrBadConn
	}
	if c.state.CompareAndSwap(connIdle, connInUse) || c.state.CompareAndSwap(connFresh, connInUse) {
		return nil
	}
	return driver.ErrBadConn
}

// retire marks the connection so the pool drops it; an idle one is closed at once. It reports
// whether the connection was closed at once.
func (c *conn) retire(why RetireReason) bool {
	c.markRetired(why)
	return c.retireIfIdle(why)
}

// retireIfIdle closes the connection at once if it is idle in the pool or fresh (never used:
// it may sit in the pool without database/sql ever having called IsValid), and reports whether
// it did. database/sql still holds the (now closed) connection; its next operation or checkout
// answers driver.ErrBadConn before any byte is sent, and database/sql moves on.
func (c *conn) retireIfIdle(why RetireReason) bool {
	if !c.state.CompareAndSwap(connIdle, connClosed) && !c.state.CompareAndSwap(connFresh, connClosed) {
		return false
	}
	c.markRetired(why)
	c.closePhysical()
	return true
}

// markRetired marks the connection retired and reports whether this call did it; only that
// call counts the connection, under its reason.
func (c *conn) markRetired(why RetireReason) bool {
	if c.retired.CompareAndSwap(false, true) {
		c.node.retiredBy[why].Add(1)
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
	if c.broken.Load() != nil {
		closeQuietly(c.dc)
		return nil
	}
	// go-sql-driver says goodbye (COM_QUIT) first; a proxy that stopped reading must not hold
	// that write.
	c.tc.limit(time.Now().Add(quitTimeout))
	return c.dc.Close()
}

// quitTimeout bounds the goodbye sent when a connection closes.
const quitTimeout = time.Second

// observe passes err through unchanged after letting the exception sorter look at it: a fatal
// error retires the connection (it closes when database/sql returns it to the pool) and is
// counted against the node.
//
// When the guard beneath found the proxy breaking the protocol, go-sql-driver only saw a failed
// read and answers "invalid connection"; the guard's finding, naming the node, replaces that.
func (c *conn) observe(err error) error { return c.observeRun(err, "", false) }

// observeText is observe for a COM_QUERY text, which may hold several statements.
func (c *conn) observeText(err error, text string) error { return c.observeRun(err, text, false) }

// observeResult is observe for an error met while a result was read: the command had begun to
// answer, so some of it ran.
func (c *conn) observeResult(err error) error { return c.observeRun(err, "", true) }

// observeRun is observe for a command that ran text ("" for a command that runs one statement
// at most: a prepare, an execution, a ping, a BEGIN); afterResult says the error came after
// part of the answer was read.
func (c *conn) observeRun(err error, text string, afterResult bool) error {
	if err == nil || err == driver.ErrSkip {
		return err
	}
	if perr := c.tc.protocolErr(); perr != nil {
		return c.fail(perr)
	}
	if driverFoundViolation(err) {
		return c.fail(protocolError(c.node.addr, err))
	}
	if c.connector.roleAware() && exception.NotPrimary(err) {
		return c.connector.onNotPrimary(c, err, !afterResult && c.nothingRan(text))
	}
	c.connector.onStatementError(c, err)
	c.connector.onConnError(c, err)
	return err
}

// nothingRan reports whether a server error answering the latest command proves that the
// server ran none of it. Where the guard reads the packets, the error must have opened the
// answer: a server runs a multi-statement text in order and stops at the first failure, so an
// OK or a result before the error means an earlier statement ran. Where the guard cannot read
// them (TLS, compression), only a command that runs one statement at most qualifies: text is ""
// or holds a single statement.
func (c *conn) nothingRan(text string) bool {
	if !c.tc.guard.Opaque() {
		return !c.tc.guard.Answered()
	}
	return text == "" || sqlclass.SingleStatement(text)
}

// driverFoundViolation reports the errors go-sql-driver returns when it finds the server
// breaking the protocol itself (a packet out of sequence, a packet it cannot parse).
func driverFoundViolation(err error) bool {
	return errors.Is(err, mysql.ErrPktSync) || errors.Is(err, mysql.ErrPktSyncMul) || errors.Is(err, mysql.ErrMalformPkt)
}

// contain turns a panic of go-sql-driver's parser into an error; every method that lets
// go-sql-driver read from the proxy defers it. The guard beneath stops the malformed packets it
// knows, so a panic here means one it did not (a binary row, or a TLS or compressed connection
// the guard cannot see into).
func (c *conn) contain(err *error) {
	if r := recover(); r != nil {
		*err = c.fail(protocolError(c.node.addr, fmt.Errorf("go-sql-driver could not parse its answer: %v", r)))
	}
}

// fail marks the connection broken by the proxy: the socket and go-sql-driver's connection
// (and with it go-sql-driver's watcher goroutine) close now, the connection is never used again,
// and the error counts against the node as a fatal one. It returns the first such error.
func (c *conn) fail(err error) error {
	if !c.broken.CompareAndSwap(nil, &err) {
		return *c.broken.Load()
	}
	c.markRetired(RetireFatal)
	c.tc.Close()
	closeQuietly(c.dc)
	c.connector.onConnError(c, err)
	return err
}

// brokenErr returns the error that broke the connection, or nil.
func (c *conn) brokenErr() error {
	if p := c.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// closeQuietly closes a go-sql-driver connection whose state may be inconsistent after a
// failed parse; a panic there is swallowed, the socket beneath is closed already.
func closeQuietly(dc driver.Conn) {
	defer func() { _ = recover() }()
	dc.Close()
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
// pool. A retired connection, or one whose node is not up, answers false, so database/sql
// closes it.
func (c *conn) IsValid() bool {
	if c.retired.Load() {
		return false
	}
	if !c.connector.table.IsUp(c.node.tn) {
		c.markRetired(retireReasonFor(NodeState(c.connector.table.StateNow(c.node.tn))))
		return false
	}
	if !c.state.CompareAndSwap(connInUse, connIdle) && !c.state.CompareAndSwap(connFresh, connIdle) &&
		c.state.Load() != connIdle {
		return false
	}
	if c.retired.Load() { // retired between the check and the swap, while still in use
		c.retireIfIdle(RetireFatal) // counted already, under the reason that retired it
		return false
	}
	return c.dc.IsValid()
}

// ResetSession implements driver.SessionResetter: database/sql calls it when it hands a pooled
// connection out. A retired connection, or one whose node is not up (see enter), answers
// driver.ErrBadConn before anything is sent, and database/sql moves on to another connection.
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
func (c *conn) PrepareContext(ctx context.Context, query string) (_ driver.Stmt, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	c.node.flight.depart()
	defer c.node.flight.land(&err)
	defer c.contain(&err)
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
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	c.node.flight.depart()
	defer c.node.flight.land(&err)
	defer c.contain(&err)
	tx, err := c.dc.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.observe(err)
	}
	c.inTx.Store(true)
	return &txWrap{c: c, tx: tx, ctx: ctx}, nil
}

// ExecContext implements driver.ExecerContext. driver.ErrSkip from go-sql-driver (arguments
// without interpolateParams) passes through untouched so database/sql falls back to a prepared
// statement.
func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	c.node.flight.depart()
	defer c.node.flight.land(&err)
	defer c.contain(&err)
	res, err := c.dc.ExecContext(ctx, query, args)
	return res, c.observeText(err, query)
}

// QueryContext implements driver.QueryerContext.
func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Rows, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	c.node.flight.depart()
	defer c.node.flight.land(&err)
	defer c.contain(&err)
	rows, err := c.dc.QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.observeText(err, query)
	}
	return wrapRows(ctx, c, rows), nil
}

// Ping implements driver.Pinger.
func (c *conn) Ping(ctx context.Context) (err error) {
	if err := c.enter(); err != nil {
		return err
	}
	c.node.flight.depart()
	defer c.node.flight.land(&err)
	defer c.contain(&err)
	return c.observe(c.dc.Ping(ctx))
}

// CheckNamedValue implements driver.NamedValueChecker with go-sql-driver's own rules.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.dc.CheckNamedValue(nv)
}

// Raw returns go-sql-driver's own connection, for code that needs it through sql.Conn.Raw.
func (c *conn) Raw() driver.Conn { return c.dc }
