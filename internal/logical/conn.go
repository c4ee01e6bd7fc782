package logical

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// logicalConn is the connection database/sql pools in statement mode. It holds no socket of its
// own: for each statement it binds a physical connection on the least busy node and gives it
// back after it (at the next statement, or when database/sql takes the logical connection
// back: IsValid), also while database/sql holds it (a *sql.Conn), unless something pins it:
//
//   - session state that lives on the physical connection and that lbd cannot set again (user
//     variables, temporary tables, LOCK TABLES, GET_LOCK, SQL-level PREPARE, CALL, Raw,
//     autocommit off; any SET or USE without session tracking; a change the server's
//     state-change flag reports and no text showed): pinned until database/sql hands the
//     logical connection out again (ResetSession) or closes it, when the physical connection
//     is reset and parked for any other (or closed when it cannot be reset). The tracked
//     settings a SET or USE changes are not state of this kind where the server tracks
//     sessions: they are kept here and set again where the next statement runs (settings.go);
//   - a transaction, from BeginTx or from SQL text (BEGIN, START TRANSACTION): until it ends;
//   - a statement whose result the next one may read (INSERT, UPDATE, DELETE, REPLACE, LOAD,
//     SELECT SQL_CALC_FOUND_ROWS): the physical connection is kept aside (unclaimed when
//     database/sql took the logical connection back), and a next statement calling
//     LAST_INSERT_ID(), ROW_COUNT() or FOUND_ROWS() runs on it; any other next statement
//     releases it and is balanced as usual;
//   - open rows of the physical connection, or a statement just prepared there: the next
//     statement runs there too.
//
// database/sql never calls one connection's methods concurrently, so the fields need no lock;
// the physical connection's own state is atomic because probes and the rebalancer retire it.
type logicalConn struct {
	m        *Mode
	phys     *physical.Conn // bound physical connection, nil when unbound
	claimed  bool           // phys is in use by this logical connection (counted on its node)
	session  bool           // session state lives on phys: bound for life
	sqlTx    bool           // a transaction begun by SQL text is open
	apiTx    bool           // a transaction begun by BeginTx is open
	produced bool           // the last statement's result may be read by the next one
	closed   bool
	want     role.Target // the target of the statement being bound (see route)
	// wantGroup is the group of the statement being bound (lbd.InGroup; "": the default picks).
	wantGroup string
	// boundForRead: phys was bound for a read (the split's read target), so it may be on a
	// replica from the start; otherwise it was bound on the primary (see strandedErr).
	boundForRead bool
	stmts        []*logicalStmt // open prepared statements, their references dropped at Close
	// avoid is the node a read failed on while it runs again (see retryRead); nil otherwise.
	avoid *physical.TableNode
	// settings are the tracked settings the logical connection changed, set again on each
	// physical connection it borrows (settings.go); mark is phys's session-state mark when
	// it was bound or its changes last recorded.
	settings settings
	mark     uint64
	// stay: the next statement runs on the claimed physical connection (the one a prepare
	// just ran on, for database/sql's prepare-then-execute).
	stay bool
}

var _ physical.FullConn = (*logicalConn)(nil)

// Proxy returns the proxy ("host:port") of the physical connection the logical connection dc
// holds now ("" when it holds none), and whether dc is a logical connection. database/sql's
// Conn.Raw hands dc over under the connection's lock, so no statement runs meanwhile.
func Proxy(dc any) (addr string, ok bool) {
	l, ok := dc.(*logicalConn)
	if !ok {
		return "", false
	}
	if l.phys == nil {
		return "", true
	}
	return l.phys.Node().Addr(), true
}

// pinned reports whether the logical connection must keep its physical connection.
func (l *logicalConn) pinned() bool { return l.session || l.sqlTx || l.apiTx }

// onReplica says whether a statement may run on a replica connection that holds the logical
// connection's session: always (a ping, a read-only BEGIN), or, for a text, when
// sqlclass.ReplicaSession accepts it. bind asks only when a pin holds a replica connection, so
// that no other statement pays for reading its text again.
type onReplica struct {
	always bool
	text   string
}

func (r onReplica) allowed() bool { return r.always || sqlclass.ReplicaSession(r.text) }

// bind returns the physical connection to run a statement with effects eff on, claiming one
// when needed. replica says whether the statement may run on a replica connection that holds
// this logical connection's session. Errors are those of Connect; ErrPinnedToReplica (nothing
// sent) when a pin holds a replica connection and replica does not allow the statement; or
// driver.ErrBadConn (nothing was sent, database/sql retries elsewhere) when the physical
// connection a pin holds has closed: the session state it carried is gone, as when a
// connection dies in the pool in connection mode.
func (l *logicalConn) bind(ctx context.Context, eff sqlclass.Effect, replica onReplica) (*physical.Conn, error) {
	if l.closed {
		return nil, driver.ErrBadConn
	}
	if l.pinned() {
		l.want = writeTarget // with the split, a pinned logical connection stays on the primary
	}
	stay := l.stay
	l.stay = false
	if l.phys != nil {
		if l.claimed && !l.pinned() && l.leftState(l.phys) {
			l.session = true // the server says the session changed in a way lbd cannot set again
		}
		if l.claimed && (l.pinned() || l.fits(l.phys) && l.keeps(eff, stay)) {
			if l.strandedOnReplica() && !replica.allowed() {
				return nil, l.strandedErr()
			}
			l.regroup()
			l.m.sweepStatements(l.phys) // statements closed during a long checkout (*sql.Conn, *sql.Tx)
			l.mark = l.phys.Session().Mark()
			return l.phys, nil
		}
		if l.claimed { // unpinned: the statement is balanced afresh, as a pool statement is
			p := l.phys
			l.phys, l.claimed, l.produced = nil, false, false
			l.m.GiveBack(p)
		} else if l.pinned() || (l.produced && eff.Has(sqlclass.ReadsResult)) {
			if l.reclaim(ctx) {
				if l.strandedOnReplica() && !replica.allowed() {
					return nil, l.strandedErr() // claimed: database/sql's IsValid gives it back
				}
				if l.pinned() || l.fits(l.phys) {
					if !l.pinned() { // kept aside across a checkout: the settings may be another user's
						if err := l.restore(ctx, l.phys); err != nil {
							p := l.phys
							l.phys, l.claimed, l.produced = nil, false, false
							l.m.GiveBack(p)
							return nil, err
						}
					}
					l.regroup()
					l.mark = l.phys.Session().Mark()
					return l.phys, nil
				}
				// Kept aside for its result on a node whose role no longer serves this
				// statement (a switchover since): the result goes with it, as when lbd
				// closed it meanwhile.
				p := l.phys
				l.phys, l.claimed, l.produced = nil, false, false
				l.m.GiveBack(p)
			} else if l.pinned() {
				return nil, driver.ErrBadConn
			}
		} else {
			p := l.phys
			l.phys, l.produced = nil, false // the result it holds is gone with it
			l.m.parkFree(p)
		}
	}
	p, err := l.m.borrow(ctx, l.want, l.wantGroup, l.avoid)
	if err != nil {
		return nil, err
	}
	if err := l.restore(ctx, p); err != nil {
		l.m.GiveBack(p)
		return nil, err
	}
	l.phys, l.claimed, l.boundForRead = p, true, l.want != writeTarget
	l.mark = p.Session().Mark()
	return p, nil
}

// keeps reports whether a statement with effects eff runs on the physical connection the
// unpinned logical connection has claimed since its last statement, rather than being
// balanced afresh: it reads the result the last one left (LAST_INSERT_ID() after an INSERT),
// it runs what a prepare just prepared there (stay), or a result of the connection is still
// open (nothing else may be sent on it meanwhile, and it must not be given back).
func (l *logicalConn) keeps(eff sqlclass.Effect, stay bool) bool {
	return stay || l.produced && eff.Has(sqlclass.ReadsResult) || l.phys.OpenRows() > 0
}

// leftState reports whether the server said p's session changed, since the logical
// connection bound it or recorded its settings, in a way that was not recorded: session
// state no statement's text showed (a stored function setting a user variable), which pins.
// One comparison; false without session tracking.
func (l *logicalConn) leftState(p *physical.Conn) bool {
	st := p.Session()
	return st.ChangedSince(l.mark) && st.Replayable()
}

// regroup marks the bound physical connection picked for the statement's group when its node
// is in that group: a connection held for the next statement stays right for it. One a pin
// holds on a node outside the group keeps its mark, and the statement fails there with
// physical.ErrOutsideGroup, nothing sent.
func (l *logicalConn) regroup() {
	if l.m.table.InGroup(l.phys.Node().TN(), l.wantGroup) {
		l.phys.SetGroup(l.wantGroup)
	}
}

// reclaim claims the physical connection kept aside, if lbd has not closed it meanwhile and it
// is still alive; otherwise it forgets it.
func (l *logicalConn) reclaim(ctx context.Context) bool {
	p := l.phys
	if !p.Claim() {
		l.phys = nil
		return false
	}
	l.m.table.Claim(p.Node().TN())
	if !p.Usable(ctx) {
		l.m.table.Unclaim(p.Node().TN())
		p.Close()
		l.phys = nil
		return false
	}
	l.m.sweepStatements(p)
	l.claimed = true
	return true
}

// after records what a statement did to the session. A transaction counts as ended only when
// COMMIT or ROLLBACK succeeded; a text with several statements that began one and failed
// before its end may have left it open.
func (l *logicalConn) after(query string, eff sqlclass.Effect, err error) {
	if eff.Has(sqlclass.Session) && !l.session && (l.phys == nil || !l.record(l.phys, query, err != nil)) {
		l.session = true
	}
	switch {
	case eff.Has(sqlclass.BeginsTx):
		l.sqlTx = true
	case eff.Has(sqlclass.EndsTx) && err == nil:
		l.sqlTx = false
	case err != nil && eff.Has(sqlclass.TxInside):
		l.sqlTx = true
	}
	l.produced = eff.Has(sqlclass.ProducesResult)
}

// IsValid implements driver.Validator: database/sql calls it when it takes the logical
// connection back. The physical connection is given back, kept aside or, when pinned, kept
// bound. A retired physical connection is closed and the application never sees it, unless a
// pin held session state on it: then the logical connection answers false and database/sql
// drops it, as connection mode drops a retired connection.
func (l *logicalConn) IsValid() bool {
	if l.closed {
		return false
	}
	p := l.phys
	if p == nil || !l.claimed {
		return true
	}
	l.claimed = false
	if !l.pinned() && l.leftState(p) {
		l.session = true // the server says the session changed in a way lbd cannot set again
	}
	if l.pinned() || l.produced {
		l.m.table.Unclaim(p.Node().TN())
		if !p.IsValid() { // retired or broken
			p.Close()
			l.phys = nil
			return !l.pinned()
		}
		// Session state on a replica: every later user of the pool could meet
		// ErrPinnedToReplica with its next write, so the logical connection leaves the pool.
		return !l.strandedOnReplica()
	}
	l.phys = nil
	l.m.GiveBack(p)
	return true
}

// ResetSession implements driver.SessionResetter: database/sql calls it when it hands the
// logical connection out again, to a new user. The settings the last user changed are
// forgotten (the next statement's physical connection gets its base back, see restore). A
// physical connection the last user pinned with session state is reset (physical.Conn.Reset:
// COM_RESET_CONNECTION, one round trip) and goes back to its node's idle list for any logical
// connection, so the new user starts clean and costs no dial; where the reset fails (a server
// without COM_RESET_CONNECTION answers an error) it is closed. The logical connection itself
// stays good: it binds at its first statement.
//
// A transaction begun by SQL text and still open spans checkouts, as in connection mode: the
// logical connection claims its physical connection now, settings and session state with it,
// and fails with driver.ErrBadConn (nothing sent; database/sql moves on) when it is gone.
func (l *logicalConn) ResetSession(ctx context.Context) error {
	if l.closed {
		return driver.ErrBadConn
	}
	p := l.phys
	if p != nil && !l.claimed && l.sqlTx {
		if !l.reclaim(ctx) {
			return driver.ErrBadConn
		}
		return nil
	}
	l.settings = settings{}
	if l.session && !l.claimed {
		l.session = false
		if p != nil {
			l.phys, l.produced = nil, false
			l.m.resetAndPark(ctx, p)
		}
	}
	return nil
}

// resetAndPark claims p, a physical connection kept bound by a pin and now unclaimed,
// resets its session and parks it on its node; one lbd closed meanwhile is forgotten, and one
// that is no longer usable or whose reset fails is closed. The reset is a wait on the proxy: it
// is bounded by resetTimeout as well as by ctx (database/sql's checkout may carry no deadline),
// and a proxy that does not answer in time costs the connection, not the caller.
func (m *Mode) resetAndPark(ctx context.Context, p *physical.Conn) {
	if !p.Claim() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, resetTimeout)
	defer cancel()
	tn := p.Node().TN()
	m.table.Claim(tn)
	if !p.Usable(ctx) || p.Reset(ctx) != nil {
		m.table.Unclaim(tn)
		p.Close()
		return
	}
	m.GiveBack(p)
}

// resetTimeout bounds the reset of a pinned physical connection (resetAndPark), whether
// database/sql hands its logical connection out again or closes it.
const resetTimeout = time.Second

// Close implements driver.Conn. A physical connection closed mid-use is closed with the logical
// connection; one kept bound by a pin is reset and goes back to its node (resetAndPark), or is
// closed when the Connector is closing; a clean one goes back to its node.
func (l *logicalConn) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	m := l.m
	m.logical.Add(-1)
	// database/sql may drop a connection without closing its statements (a close deferred to
	// a return that never comes): drop their references, or their queries would stay
	// prepared on physical connections for good.
	for _, s := range l.stmts {
		s.unref()
	}
	l.stmts = nil
	if p := l.phys; p != nil {
		l.phys = nil
		switch {
		case l.claimed:
			m.table.Unclaim(p.Node().TN())
			p.Close()
		case l.session && !l.sqlTx && !l.apiTx && !m.cfg.Closed():
			m.resetAndPark(context.Background(), p)
		case l.pinned():
			p.Close()
		default:
			m.parkFree(p)
		}
	}
	m.trim(time.Time{}) // database/sql holds one connection fewer: no grace for the surplus
	return nil
}

// Prepare implements driver.Conn.
func (l *logicalConn) Prepare(query string) (driver.Stmt, error) {
	return l.PrepareContext(context.Background(), query)
}

// Begin implements driver.Conn.
//
// Deprecated: database/sql calls BeginTx.
func (l *logicalConn) Begin() (driver.Tx, error) {
	return l.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx; the transaction pins the physical connection until it
// ends.
func (l *logicalConn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	if tr := l.m.cfg.Trace; tr != nil {
		sp := tr.Start(ctx, physical.OpBegin, "", nil)
		defer func() { sp.SetNode(l.node()); sp.End(err) }()
	}
	l.want = l.m.txTarget(ctx, opts)
	l.wantGroup, _ = physical.GroupOf(ctx)
	p, err := l.bind(ctx, 0, onReplica{always: opts.ReadOnly}) // balanced: LAST_INSERT_ID() is read right after the INSERT, not across a BEGIN
	if err != nil {
		return nil, err
	}
	tx, err := p.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	l.apiTx = true
	l.produced = false
	return &logicalTx{l: l, tx: tx, ctx: ctx, write: !opts.ReadOnly}, nil
}

// ExecContext implements driver.ExecerContext.
func (l *logicalConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (res driver.Result, err error) {
	if l.prepares(args) {
		return nil, driver.ErrSkip
	}
	var sp *physical.Span
	if tr := l.m.cfg.Trace; tr != nil {
		s := tr.Start(ctx, physical.OpExec, query, nil)
		sp = &s
		defer func() { sp.End(err) }()
	}
	err = l.run(ctx, query, sqlclass.Classify(query), nil, sp, func(p *physical.Conn) (err error) {
		res, err = p.ExecContext(ctx, query, args)
		return err
	})
	return res, err
}

// QueryContext implements driver.QueryerContext.
func (l *logicalConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (rows driver.Rows, err error) {
	if l.prepares(args) {
		return nil, driver.ErrSkip
	}
	sp := l.m.cfg.Trace.StartQuery(ctx, query, nil)
	err = l.run(ctx, query, sqlclass.Classify(query), &rows, sp, func(p *physical.Conn) (err error) {
		rows, err = p.QueryContext(ctx, query, args)
		return err
	})
	endQuery(sp, rows, err)
	return rows, err
}

// endQuery ends the span sp of a query (nil: not traced) that failed with err, or makes it end
// when its rows close.
func endQuery(sp *physical.Span, rows driver.Rows, err error) {
	if err != nil {
		sp.End(err)
		return
	}
	sp.AttachRows(rows)
}

// node returns the node of the physical connection the logical connection holds; nil when it
// holds none.
func (l *logicalConn) node() *physical.Node {
	if l.phys == nil {
		return nil
	}
	return l.phys.Node()
}

// prepares reports a statement with arguments that go-sql-driver will not interpolate: it
// answers driver.ErrSkip without sending anything, and database/sql prepares the statement and
// runs it as such. Saying so before binding saves a bind, a causal wait and a count for a
// statement that does not run here.
func (l *logicalConn) prepares(args []driver.NamedValue) bool {
	return len(args) > 0 && !l.m.cfg.InterpolateParams
}

// run runs one statement with text query and effects eff, by do, on the physical connection the
// split routes it to, and records what it did; sp (nil when not traced) is told each node it
// ran on. A read that a replica refused as not the primary (it did not run) runs once more, on
// the primary, and that replica takes no read until a good probe a probe interval later
// (nodetable's RefusedRead). rows is where do leaves the statement's rows, nil for a statement
// without (Exec).
func (l *logicalConn) run(ctx context.Context, query string, eff sqlclass.Effect, rows *driver.Rows, sp *physical.Span, do func(*physical.Conn) error) error {
	rt := l.m.route(ctx, query, eff)
	p, err := l.bindFor(ctx, rt, query, eff)
	if err != nil {
		return err
	}
	sp.SetNode(p.Node())
	err = do(p)
	if l.replicaRefused(rt, p, err) {
		rt = routing{target: writeTarget}
		if p, err = l.bindFor(ctx, rt, query, eff); err != nil {
			return err
		}
		sp.SetNode(p.Node())
		err = do(p)
	} else if l.mayRetryRead(ctx, p, query, err) {
		p, err = l.retryRead(ctx, rt, query, eff, p, err, do)
		sp.SetNode(p.Node())
	}
	var r driver.Rows
	if rows != nil {
		r = *rows
	}
	l.ran(ctx, p, query, rt, eff, r, err)
	return err
}

// mayRetryRead reports whether a statement that failed with err on p is a read to run once
// more on another node: no transaction or session state holds the logical connection, the
// server's flags show none open on p and the caller's context has not ended
// (physical.Conn.MayRetryRead), and Config.RetryRead accepts the text and the failure (and
// takes the retry from the budget).
func (l *logicalConn) mayRetryRead(ctx context.Context, p *physical.Conn, query string, err error) bool {
	return err != nil && l.m.cfg.RetryRead != nil && !l.pinned() && p.MayRetryRead(ctx) && l.m.cfg.RetryRead(query, err)
}

// retryRead runs, by do, a read that failed with err on p once more, on a physical connection
// of another node; p is retired. It returns the connection the read ran on last and its error:
// p and err when no other node could take it.
func (l *logicalConn) retryRead(ctx context.Context, rt routing, query string, eff sqlclass.Effect, p *physical.Conn, err error, do func(*physical.Conn) error) (*physical.Conn, error) {
	p.MarkRetired(physical.Fatal)
	l.phys, l.claimed, l.produced = nil, false, false
	l.m.GiveBack(p) // retired: closed
	l.avoid = p.Node().TN()
	q, berr := l.bindFor(ctx, rt, query, eff)
	l.avoid = nil
	if berr != nil {
		return p, err
	}
	return q, do(q)
}

// replicaRefused reports a read routed to a replica that its node refused as not the primary
// before running any of it, outside a pin (a transaction or session state cannot move), and
// takes that node out of the read picks.
func (l *logicalConn) replicaRefused(rt routing, p *physical.Conn, err error) bool {
	if err == nil || !l.m.split.on || !readRouted(rt.target) || l.pinned() || !l.m.cfg.Refused(err) {
		return false
	}
	l.m.table.RefusedRead(p.Node().TN(), l.m.cfg.Now())
	return true
}

// bindFor binds the physical connection a statement with text query, effects eff and routing
// rt runs on, after, for a causal read, its scope's position was reached there.
func (l *logicalConn) bindFor(ctx context.Context, rt routing, query string, eff sqlclass.Effect) (*physical.Conn, error) {
	l.want, l.wantGroup = rt.target, rt.group
	if readRouted(l.want) && l.m.primaryHinted(ctx) {
		l.want = writeTarget
	}
	p, err := l.bind(ctx, eff, onReplica{text: query})
	if err == nil {
		p, err = l.awaitPosition(ctx, p, func() (*physical.Conn, error) { return l.bind(ctx, eff, onReplica{text: query}) })
	}
	return p, err
}

// ran records what a statement that ran on p with effects eff and routing rt, answering rows
// (nil for none), did to the session and, for a write, to its scope's read-your-writes state,
// and counts it. driver.ErrSkip means it did not run (database/sql prepares it and runs it as
// such).
func (l *logicalConn) ran(ctx context.Context, p *physical.Conn, query string, rt routing, eff sqlclass.Effect, rows driver.Rows, err error) {
	if err == driver.ErrSkip {
		return
	}
	l.m.countRouted(p, rt)
	inTx := l.sqlTx || l.apiTx
	l.after(query, eff, err)
	// A write's position is read once it is final: after a statement that leaves no transaction
	// open (autocommit, or the COMMIT of one begun by text), or one that begins a transaction
	// while one was open (COMMIT AND CHAIN, an implicit commit by BEGIN). A ROLLBACK is asked
	// for too: the effects do not tell it from a COMMIT, and the answer only repeats an older
	// position.
	if err == nil && rt.write && (!l.sqlTx && !l.apiTx || inTx && eff.Has(sqlclass.BeginsTx)) {
		l.captureAfter(ctx, p, rows)
	}
	if rt.write {
		l.m.noteWrite(ctx)
	}
}

// keepsResult binds a call that changes nothing a following LAST_INSERT_ID(), ROW_COUNT() or
// FOUND_ROWS() reads and that the application does not see as a statement (Ping, Prepare): it
// runs where the last statement ran when that connection was kept aside, so the value
// survives for the statement after it.
const keepsResult = sqlclass.ReadsResult

// Ping implements driver.Pinger on a physical connection of the least busy node.
func (l *logicalConn) Ping(ctx context.Context) error {
	rt := l.m.route(ctx, "SELECT 1", 0) // a plain read: no effect
	l.want, l.wantGroup = rt.target, rt.group
	p, err := l.bind(ctx, keepsResult, onReplica{always: true})
	if err != nil {
		return err
	}
	return p.Ping(ctx)
}

// CheckNamedValue implements driver.NamedValueChecker with go-sql-driver's rules, which do not
// depend on the connection.
func (l *logicalConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := l.m.checker.Load().(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// Raw returns go-sql-driver's connection under the logical one. What the caller does with it
// is unknown to lbd, so the logical connection stays bound to it for life. It returns nil when
// no physical connection could be bound.
func (l *logicalConn) Raw() driver.Conn {
	l.want, l.wantGroup = l.m.route(context.Background(), "", 0).target, "" // what the caller does with it is unknown: the primary
	p, err := l.bind(context.Background(), 0, onReplica{})
	if err != nil {
		return nil
	}
	l.session = true
	return p.Raw()
}

// logicalTx ends the BeginTx pin when the transaction ends.
type logicalTx struct {
	l     *logicalConn
	tx    driver.Tx
	ctx   context.Context // BeginTx's: its read-your-writes scope
	write bool            // not read-only: its commit starts the scope's read-your-writes window
}

func (t *logicalTx) Commit() (err error) {
	if tr := t.l.m.cfg.Trace; tr != nil {
		sp := tr.Start(t.ctx, physical.OpCommit, "", t.l.node())
		defer func() { sp.End(err) }()
	}
	err = t.tx.Commit()
	if err == nil && t.write {
		t.l.m.noteWrite(t.ctx)
		if p := t.l.phys; p != nil && t.l.m.split.causal.on {
			t.l.m.capture(t.ctx, p)
		}
	}
	return t.end(err)
}

func (t *logicalTx) Rollback() (err error) {
	if tr := t.l.m.cfg.Trace; tr != nil {
		sp := tr.Start(t.ctx, physical.OpRollback, "", t.l.node())
		defer func() { sp.End(err) }()
	}
	return t.end(t.tx.Rollback())
}

// end lifts the pin. When COMMIT or ROLLBACK failed the transaction may still be open on the
// server, so the physical connection is retired: closing it rolls the transaction back, and no
// other logical connection ever runs inside it.
func (t *logicalTx) end(err error) error {
	t.l.apiTx = false
	if err != nil && t.l.phys != nil {
		t.l.phys.MarkRetired(physical.TxEnd)
	}
	return err
}
