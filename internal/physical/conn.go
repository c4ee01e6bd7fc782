package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// FullConn is everything go-sql-driver's connection implements; lbd's wrapper keeps every one
// of these interfaces (database/sql changes behaviour when one is missing). database/sql's own
// wrapper of a connection is driverConn; this is the driver's side.
type FullConn interface {
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

// Conn is one physical connection handed to database/sql (or to a logical connection in
// statement mode). It knows its node, reports errors to the node's Hooks, and can be retired:
// dropped at its next return or checkout, or closed at once when it sits idle. lbd never closes
// a connection that is in use, so a statement or transaction is never cut.
type Conn struct {
	dc      FullConn
	sock    *Socket // the socket beneath dc
	node    *Node
	state   atomic.Int32 // see state.go: only its moves touch it
	retired atomic.Bool
	inTx    atomic.Bool           // between BeginTx and the end of Commit or Rollback
	epoch   uint64                // the node's Epoch when the connection was adopted (see RetireBefore)
	broken  atomic.Pointer[error] // set once the proxy broke the protocol; dc is closed then
	cut     atomic.Bool           // set once a caller's context ended during a command: its errors are the caller's (observeRun)

	// Prepared and Swept belong to whoever claimed the connection (statement mode's logical
	// connection): the statements prepared on it, by the claimer's key, and the claimer's
	// sweep mark.
	Prepared map[any]FullStmt
	Swept    uint64
	openRows atomic.Int32 // result sets not yet closed: no other command may be sent meanwhile
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
)

// Adopt wraps a new physical connection of n, dialed with a counted ticket, and registers it.
// sock is the socket beneath dc; a connection adopted without one (nil: statement mode's tests
// over fake connections) has no deadline caps and no guard, and dc's Close gives the count back.
// A node that went down or started draining while the dial was in flight gets the connection
// retired at once: its first operation answers driver.ErrBadConn with nothing sent (enter), and
// database/sql dials again.
func (n *Node) Adopt(dc FullConn, sock *Socket) *Conn {
	c := &Conn{dc: dc, sock: sock, node: n, epoch: n.tn.Epoch()}
	n.track(c)
	n.table.Dialed(n.tn, nil)
	if s := n.table.State(n.tn); s != nodetable.Up {
		c.MarkRetired(ReasonFor(s))
	}
	return c
}

// Node returns the connection's node.
func (c *Conn) Node() *Node { return c.node }

// InTx reports whether a transaction begun with BeginTx is open on the connection.
func (c *Conn) InTx() bool { return c.inTx.Load() }

// OpenRows reports how many result sets of the connection are not closed yet.
func (c *Conn) OpenRows() int { return int(c.openRows.Load()) }

// Driver returns go-sql-driver's connection beneath, for its argument rules.
func (c *Conn) Driver() FullConn { return c.dc }

// ClosePhysical closes the socket and go-sql-driver's connection; the state is the caller's
// (Close, RetireIfIdle, or PopOldestFree's closed state).
func (c *Conn) ClosePhysical() error {
	c.node.untrack(c)
	if c.broken.Load() != nil {
		CloseQuietly(c.dc)
		return nil
	}
	// go-sql-driver says goodbye (COM_QUIT) first; a proxy that stopped reading must not hold
	// that write.
	c.sock.Limit(time.Now().Add(QuitTimeout))
	return c.dc.Close()
}

// QuitTimeout bounds the goodbye sent when a connection closes.
const QuitTimeout = time.Second

// observe passes err through the node's hooks after checking for a protocol violation.
//
// When the guard beneath found the proxy breaking the protocol, go-sql-driver only saw a failed
// read and answers "invalid connection"; the guard's finding, naming the node, replaces that.
func (c *Conn) observe(ctx context.Context, err error) error {
	return c.observeRun(ctx, err, "", false)
}

// observeText is observe for a COM_QUERY text, which may hold several statements, or for an
// execution of a prepared statement, whose text is the one prepared.
func (c *Conn) observeText(ctx context.Context, err error, text string) error {
	return c.observeRun(ctx, err, text, false)
}

// observeResult is observe for an error met while a result was read: the command had begun to
// answer, so some of it ran.
func (c *Conn) observeResult(ctx context.Context, err error) error {
	return c.observeRun(ctx, err, "", true)
}

// observeRun is observe for a command that ran text ("" for a command that runs one statement
// at most: a prepare, a ping, a BEGIN) under ctx; afterResult says the error came after part of
// the answer was read.
//
// An error that is not the server's answer, met once the caller's context has ended, is the
// caller's: go-sql-driver cuts the connection when the context of a command in progress ends,
// and every later use of it fails. The hooks hear of it once, as CallerEnded, and never as a
// statement error, so it counts as no fatal error against the node: a storm of cancellations or
// of short deadlines on healthy proxies took them down.
func (c *Conn) observeRun(ctx context.Context, err error, text string, afterResult bool) error {
	if err == nil || err == driver.ErrSkip {
		return err
	}
	if perr := c.sock.ProtocolErr(); perr != nil {
		return c.fail(perr)
	}
	if driverFoundViolation(err) {
		return c.fail(ProtocolError(c.node.addr, err))
	}
	if c.cut.Load() {
		return err
	}
	if cause := ctx.Err(); cause != nil && !IsServerAnswer(err) {
		if c.cut.CompareAndSwap(false, true) {
			c.node.hooks.CallerEnded(c, cause)
		}
		return err
	}
	return c.node.hooks.StatementError(c, err, !afterResult && c.nothingRan(text))
}

// nothingRan reports whether a server error answering the latest command proves that the
// server ran none of it. Where the guard reads the packets, the error must have opened the
// answer: a server runs a multi-statement text in order and stops at the first failure, so an
// OK or a result before the error means an earlier statement ran. Where the guard cannot read
// them (TLS, compression), only a command that runs one statement at most qualifies: text is ""
// or holds a single statement. Either way the first statement of text must run no other
// (sqlclass.OneCommand): the server answers a CALL, or a compound statement, with one error
// for its whole body, some of which may have run before the statement refused.
func (c *Conn) nothingRan(text string) bool {
	if text != "" && !sqlclass.OneCommand(text) {
		return false
	}
	if answered, known := c.sock.Answered(); known {
		return !answered
	}
	return text == "" || sqlclass.SingleStatement(text)
}

// driverFoundViolation reports the errors go-sql-driver returns when it finds the server
// breaking the protocol itself (a packet out of sequence, a packet it cannot parse).
func driverFoundViolation(err error) bool {
	return errors.Is(err, mysql.ErrPktSync) || errors.Is(err, mysql.ErrPktSyncMul) || errors.Is(err, mysql.ErrMalformPkt)
}

// IsServerAnswer reports an error the server (or proxy) sent as a MySQL ERR packet.
func IsServerAnswer(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}

// contain turns a panic of go-sql-driver's parser into an error; every method that lets
// go-sql-driver read from the proxy defers it. The guard beneath stops the malformed packets it
// knows, so a panic here means one it did not (a binary row, or a TLS or compressed connection
// the guard cannot see into).
func (c *Conn) contain(err *error) {
	if r := recover(); r != nil {
		*err = c.fail(ProtocolError(c.node.addr, fmt.Errorf("go-sql-driver could not parse its answer: %v", r)))
	}
}

// fail marks the connection broken by the proxy: the socket and go-sql-driver's connection
// (and with it go-sql-driver's watcher goroutine) close now, the connection is never used again,
// and the node's hooks are told. It returns the first such error.
func (c *Conn) fail(err error) error {
	if !c.broken.CompareAndSwap(nil, &err) {
		return *c.broken.Load()
	}
	c.MarkRetired(Fatal)
	c.sock.Close()
	CloseQuietly(c.dc)
	c.node.hooks.Broken(c, err)
	return err
}

// brokenErr returns the error that broke the connection, or nil.
func (c *Conn) brokenErr() error {
	if p := c.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// CloseQuietly closes a go-sql-driver connection whose state may be inconsistent after a
// failed parse; a panic there is swallowed, the socket beneath is closed already.
func CloseQuietly(dc driver.Conn) {
	defer func() { _ = recover() }()
	dc.Close()
}

// Prepare implements driver.Conn.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext.
func (c *Conn) PrepareContext(ctx context.Context, query string) (_ driver.Stmt, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	st, err := c.dc.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.observe(ctx, err)
	}
	return newStmt(c, st, query), nil
}

// Begin implements driver.Conn.
//
// Deprecated: database/sql calls BeginTx.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	tx, err := c.dc.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.observe(ctx, err)
	}
	c.inTx.Store(true)
	return &txWrap{c: c, tx: tx, ctx: ctx}, nil
}

// ExecContext implements driver.ExecerContext. driver.ErrSkip from go-sql-driver (arguments
// without interpolateParams) passes through untouched so database/sql falls back to a prepared
// statement.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := c.enterText(query); err != nil {
		return nil, err
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	res, err := c.dc.ExecContext(ctx, query, args)
	return res, c.observeText(ctx, err, query)
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Rows, err error) {
	if err := c.enterText(query); err != nil {
		return nil, err
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	rows, err := c.dc.QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.observeText(ctx, err, query)
	}
	return wrapRows(ctx, c, rows), nil
}

// Ping implements driver.Pinger.
func (c *Conn) Ping(ctx context.Context) (err error) {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	return c.observe(ctx, c.dc.Ping(ctx))
}

// CheckNamedValue implements driver.NamedValueChecker with go-sql-driver's own rules.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.dc.CheckNamedValue(nv)
}

// Raw returns go-sql-driver's own connection, for code that needs it through sql.Conn.Raw.
func (c *Conn) Raw() driver.Conn { return c.dc }
