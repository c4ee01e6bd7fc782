package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/causal"
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
	txRO    atomic.Bool           // that transaction was begun read-only
	epoch   uint64                // the node's Epoch when the connection was adopted (see RetireBefore)
	broken  atomic.Pointer[error] // set once the proxy broke the protocol; dc is closed then
	cut     atomic.Bool           // set once a caller's context ended during a command: its errors are the caller's (observeRun)
	rerun   bool                  // made by QueryOnce to run a read again: its own failure is not run again
	group   string                // the group the connection was picked for (SetGroup; "": the default picks)

	// Prepared and Swept belong to whoever claimed the connection (statement mode's logical
	// connection): the statements prepared on it, by the claimer's key, and the claimer's
	// sweep mark.
	Prepared map[any]FullStmt
	Swept    uint64
	// Applied belongs to the claimer too: the newest GTID position a wait for a replication
	// position on this connection proved its server has applied (statement mode's causal reads).
	// A connection's session stays on one server, so a later read needing no more than Applied
	// waits for nothing.
	Applied  causal.Position
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
// A node that went down (and is not served below the panic threshold) or started draining while
// the dial was in flight gets the connection retired at once: its first operation answers driver.ErrBadConn with nothing sent (enter), and
// database/sql dials again.
func (n *Node) Adopt(dc FullConn, sock *Socket) *Conn {
	c := &Conn{dc: dc, sock: sock, node: n, epoch: n.tn.Epoch()}
	if sock != nil {
		sock.adopted()
	}
	n.track(c)
	n.table.Dialed(n.tn, nil)
	if !n.table.InRotation(n.tn) {
		c.MarkRetired(ReasonFor(n.table.State(n.tn)))
	}
	return c
}

// Node returns the connection's node.
func (c *Conn) Node() *Node { return c.node }

// AnswerRead reports whether the whole answer to the connection's latest command has passed
// lbd's guard (Socket.AnswerRead): what the server reported with it, in its session state
// too, is known. False for a connection without lbd's socket, or whose packets the guard
// cannot see.
func (c *Conn) AnswerRead() bool { return c.sock.AnswerRead() }

// Session returns what the server reported of the connection's session through session
// tracking (see SessionState), nil for a connection without lbd's socket. Read it only while
// holding the connection.
func (c *Conn) Session() *SessionState {
	if c.sock == nil {
		return nil
	}
	return &c.sock.session
}

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
	err = BoundErr(err)
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
// them (no socket), only a command that runs one statement at most qualifies: text is "" or
// holds a single statement. Either way the first statement of text must run no other
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
	_, ok := errors.AsType[*mysql.MySQLError](err)
	return ok
}

// contain turns a panic of go-sql-driver's parser into an error; every method that lets
// go-sql-driver read from the proxy defers it. The guard beneath stops the malformed packets it
// knows, so a panic here means one it did not (a binary row's values, which it does not walk).
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
	if err := c.checkGroup(ctx); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	if tr := c.tracing(); tr != nil {
		sp := tr.Start(ctx, OpPrepare, query, c.node)
		defer sp.end(&err)
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	st, err := c.dc.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.prepareFailed(ctx, c.observe(ctx, err))
	}
	return newStmt(c, st, query), nil
}

// prepareFailed is what a prepare that failed with err (as StatementError returned it)
// answers: err, or, when the node's hooks say so (RetryPrepare), a RetriedPrepare telling
// database/sql to prepare again on another connection. A prepare runs nothing, so preparing
// again is safe for any text; it is offered only outside a transaction and while the caller
// still waits (MayRetryRead). The connection is retired.
func (c *Conn) prepareFailed(ctx context.Context, err error) error {
	if err == nil || !c.MayRetryRead(ctx) || !c.node.hooks.RetryPrepare(c, err) {
		return err
	}
	c.MarkRetired(Fatal)
	return &RetriedPrepare{Err: err}
}

// RetriedPrepare is a prepare that failed on its node and that database/sql is told to run
// again on another connection: it wraps the failure and driver.ErrBadConn. When database/sql's
// own retries end, the caller gets the last failure, still readable with errors.Is and
// errors.As.
type RetriedPrepare struct{ Err error }

// Error returns the failure's text.
func (e *RetriedPrepare) Error() string { return e.Err.Error() }

// Unwrap returns the failure and driver.ErrBadConn.
func (e *RetriedPrepare) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

// Begin implements driver.Conn.
//
// Deprecated: database/sql calls BeginTx.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	if err := c.checkGroup(ctx); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	if tr := c.tracing(); tr != nil {
		sp := tr.Start(ctx, OpBegin, "", c.node)
		defer sp.end(&err)
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	tx, err := c.dc.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.observe(ctx, err)
	}
	c.txRO.Store(opts.ReadOnly)
	c.inTx.Store(true)
	return &txWrap{c: c, tx: tx, ctx: ctx}, nil
}

// ExecContext implements driver.ExecerContext. driver.ErrSkip from go-sql-driver (arguments
// without interpolateParams) passes through untouched so database/sql falls back to a prepared
// statement.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if err := c.checkGroup(ctx); err != nil {
		return nil, err
	}
	if err := c.enterText(query); err != nil {
		return nil, err
	}
	if tr := c.tracing(); tr != nil && !tr.Declined(len(args)) {
		sp := tr.Start(ctx, OpExec, query, c.node)
		defer sp.end(&err)
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	res, err := c.dc.ExecContext(ctx, query, args)
	return res, c.observeText(ctx, err, query)
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.checkGroup(ctx); err != nil {
		return nil, err
	}
	return c.query(ctx, query, args, 0)
}

// WaitValue runs query, a wait for a replication position (MASTER_GTID_WAIT and its kin) that
// answers one value, and returns that value as OneValue does. The time it takes is the
// replica's catching up, not the node's speed: it is no latency sample of the node (rule 12),
// nor a statement the stall watch counts on the wire (the wait bounds itself).
func (c *Conn) WaitValue(ctx context.Context, query string) (string, error) {
	return OneValue(ctx, waitQueryer{c}, query)
}

// waitQueryer is a connection whose queries are waits (WaitValue).
type waitQueryer struct{ *Conn }

// QueryContext implements driver.QueryerContext for a wait.
func (w waitQueryer) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return w.query(ctx, query, args, queryWait)
}

// SessionValue runs query, a question about the session's own state that lbd asks right after a
// statement of the connection (the GTID position a write reached), and returns its one value as
// OneValue does. Unlike QueryContext it runs also when the node lost the role the connection was
// picked for in between (a Galera writer desynced just after the write): the answer belongs to
// the statement that already ran there, and the question changes nothing.
func (c *Conn) SessionValue(ctx context.Context, query string) (string, error) {
	return OneValue(ctx, sessionQueryer{c}, query)
}

// sessionQueryer is a connection whose queries skip the role check (SessionValue).
type sessionQueryer struct{ *Conn }

// QueryContext implements driver.QueryerContext without the role check.
func (s sessionQueryer) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return s.query(ctx, query, args, queryOwnSession)
}

// queryMode says how query runs a query.
type queryMode uint8

const (
	queryOwnSession queryMode = 1 << iota // skip the role check of enterText (SessionValue)
	queryWait                             // a wait: neither on the wire for the stall watch nor a latency sample (WaitValue)
)

// query runs query as mode says; only the application's queries (mode 0) are traced.
func (c *Conn) query(ctx context.Context, query string, args []driver.NamedValue, mode queryMode) (out driver.Rows, err error) {
	if mode&queryOwnSession != 0 {
		err = c.enter()
	} else {
		err = c.enterText(query)
	}
	if err != nil {
		return nil, err
	}
	if tr := c.tracing(); tr != nil && mode == 0 && !tr.Declined(len(args)) {
		sp := tr.StartQuery(ctx, query, c.node)
		defer sp.endQuery(&out, &err)
	}
	if mode&queryWait == 0 {
		defer c.node.land(&err, c.node.depart())
	}
	defer c.contain(&err)
	dr, err := c.dc.QueryContext(ctx, query, args)
	if err != nil {
		return c.readFailed(ctx, query, args, c.observeText(ctx, err, query))
	}
	return wrapRows(ctx, c, dr), nil
}

// CallerReadOnly reports whether the caller made the transaction of the connection's latest
// command read-only, so that a refusal 1792 (exception.ReadOnlyTransaction) is the caller's own
// and says nothing of the node's role: a transaction begun with BeginTx and ReadOnly; one the
// server's status flags before the command said was read-only (START TRANSACTION READ ONLY; a
// server whose transactions are read-only by default sets the flag too, and its demotion is
// then left to the probe's role check); or a session that set transaction_read_only (or
// tx_read_only) ON itself, as its session tracking reported. A server default set before the
// connection and a SET TRANSACTION READ ONLY for the next transaction are not seen.
func (c *Conn) CallerReadOnly() bool {
	if c.inTx.Load() && c.txRO.Load() {
		return true
	}
	if c.sock.ReadOnlyTx() {
		return true
	}
	v, ok := c.Session().Var(VarTransactionReadOnly)
	return ok && (v == "ON" || v == "1")
}

// OutsideTx reports whether the connection's latest command began outside any transaction:
// none begun with BeginTx, and the server's own status flags before the command said
// autocommit on and no transaction open (Socket.Autocommitted). False when the guard cannot
// see the packets (TLS, compression): nothing then proves it.
func (c *Conn) OutsideTx() bool { return !c.inTx.Load() && c.sock.Autocommitted() }

// MayRetryRead reports whether a read that just failed on the connection may run again
// elsewhere as far as the connection can tell: outside any transaction (OutsideTx), not cut
// by the caller's own context (the caller has given up on it), and not itself a read run
// again (QueryOnce): a read runs again once at most.
func (c *Conn) MayRetryRead(ctx context.Context) bool {
	return !c.rerun && !c.cut.Load() && ctx.Err() == nil && c.OutsideTx()
}

// readFailed is what a query whose command failed answers, given err as StatementError
// returned it: err, or, when the node's hooks run the read again elsewhere (RetryRead), what
// that run gave. Only a read that failed before any row reached the caller gets here (rows
// failing later are the caller's already), and only when MayRetryRead. A read run again
// leaves its connection retired: it is not used again.
func (c *Conn) readFailed(ctx context.Context, query string, args []driver.NamedValue, err error) (driver.Rows, error) {
	if err == nil || err == driver.ErrSkip || !c.MayRetryRead(ctx) {
		return nil, err
	}
	rows, ran, rerr := c.node.hooks.RetryRead(ctx, c, query, args, err)
	if !ran {
		return nil, err
	}
	c.MarkRetired(Fatal)
	return rows, rerr
}

// QueryOnce runs one query on c, a connection made for it alone, and returns its rows; closing
// them closes c. When the query fails, c is closed at once. A statement go-sql-driver will not
// interpolate (args without interpolateParams) is prepared, run and closed with the rows.
func (c *Conn) QueryOnce(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rerun = true
	r, err := c.QueryContext(ctx, query, args)
	if err == driver.ErrSkip {
		var st driver.Stmt
		if st, err = c.PrepareContext(ctx, query); err == nil {
			if r, err = st.(driver.StmtQueryContext).QueryContext(ctx, args); err != nil {
				st.Close()
			} else if w, ok := r.(*rows); ok {
				w.after = func() { st.Close(); c.Close() }
				return w, nil
			} else {
				st.Close()
				r.Close()
				err = fmt.Errorf("lbd: go-sql-driver returned unexpected rows %T", r)
			}
		}
	} else if w, ok := r.(*rows); ok && err == nil {
		w.after = func() { c.Close() }
		return w, nil
	} else if err == nil {
		r.Close()
		err = fmt.Errorf("lbd: go-sql-driver returned unexpected rows %T", r)
	}
	c.Close()
	return nil, err
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

// Reset brings the connection's session back to how lbd opened it, in one round trip:
// COM_RESET_CONNECTION (MySQL 5.7+, MariaDB 10.2+: it rolls back a transaction, drops user
// variables, temporary tables, locks, prepared statements, and sets every setting back to the
// server's default), then lbd's tracking request and go-sql-driver's connect-time statements
// (SET NAMES, the DSN's parameters) again, and a USE of the login's schema when the session
// changed it, all ahead of a COM_PING that carries them. The statements prepared on the
// connection (Prepared) are closed first. Call it only while holding the connection, with no
// result open.
//
// It returns ErrNoReset when the connection cannot be reset (no lbd socket, connect-time
// statements past what lbd keeps, a changed schema without a known base), a ResetError when
// the server refused the reset or a replayed statement (a server without COM_RESET_CONNECTION
// answers error 1047), or the ping's error. After any error the session's state is unknown:
// close the connection.
func (c *Conn) Reset(ctx context.Context) (err error) {
	s := c.sock
	if s == nil || c.OpenRows() > 0 || c.inTx.Load() {
		return ErrNoReset
	}
	if err := c.enter(); err != nil {
		return err
	}
	for _, st := range c.Prepared {
		st.Close()
	}
	c.Prepared = nil
	if !s.queueReset() {
		return ErrNoReset
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	if err := c.observe(ctx, c.dc.Ping(ctx)); err != nil {
		return err
	}
	if s.resetErr != 0 {
		return &ResetError{Addr: c.node.addr, Code: s.resetErr}
	}
	if s.replayErr != 0 {
		return &ResetError{Addr: c.node.addr, Code: s.replayErr, Replay: true}
	}
	s.session.takeBase()
	return nil
}

// Restore runs stmts, statements that set the session's settings (a SET, a USE) lbd wrote
// for a logical session, ahead of a COM_PING that carries them: one round trip. What they
// change is reported as any statement's (Session), and none of it becomes part of the base.
// It returns a ResetError (Replay) when the server refused one of them, or the ping's error.
func (c *Conn) Restore(ctx context.Context, stmts ...string) (err error) {
	s := c.sock
	if s == nil || !s.loggedIn {
		return ErrNoReset
	}
	if err := c.enter(); err != nil {
		return err
	}
	s.replayErr = 0
	for _, q := range stmts {
		s.queue(asideRestore, func(dst []byte) []byte { return commandPacket(dst, q) })
	}
	defer c.node.land(&err, c.node.depart())
	defer c.contain(&err)
	if err := c.observe(ctx, c.dc.Ping(ctx)); err != nil {
		return err
	}
	if s.replayErr != 0 {
		return &ResetError{Addr: c.node.addr, Code: s.replayErr, Replay: true}
	}
	return nil
}

// ErrNoReset: the connection cannot be brought back to how lbd opened it (Reset).
var ErrNoReset = errors.New("lbd: the connection's session cannot be reset")

// ResetError is a server's refusal of Reset: of COM_RESET_CONNECTION itself, or (Replay) of a
// connect-time statement replayed after it, or of a statement Restore ran.
type ResetError struct {
	Addr   string
	Code   uint16 // the server's error number
	Replay bool
}

func (e *ResetError) Error() string {
	if e.Replay {
		return fmt.Sprintf("lbd: proxy %s refused a session setting lbd sent on its own (error %d)", e.Addr, e.Code)
	}
	return fmt.Sprintf("lbd: proxy %s refused COM_RESET_CONNECTION (error %d)", e.Addr, e.Code)
}

// Raw returns go-sql-driver's own connection, for code that needs it through sql.Conn.Raw.
func (c *Conn) Raw() driver.Conn { return c.dc }
