package logical

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// Prepared statements in statement mode are re-prepared lazily: a logical statement runs on
// whichever physical connection its logical connection is bound to, and each physical
// connection prepares a query once and keeps it while any logical statement for that query is
// open. So a long-lived *sql.Stmt costs one extra prepare per physical connection, not one per
// execution, and never pins its logical connection (which would undo the balancing for
// applications that prepare at start-up).

// preparedQuery is one query text that some logical statement has open. A physical connection
// keeps its prepared copy while refs > 0; a new preparedQuery is made when the text is prepared
// again after that, so copies from before are recognised as stale.
type preparedQuery struct {
	query string
	refs  int         // guarded by preparedSet.mu
	dead  atomic.Bool // refs fell to 0: physical copies are closed at their next claim
}

// preparedSet is the Connector's open prepared queries, by text.
type preparedSet struct {
	mu     sync.Mutex
	open   map[string]*preparedQuery
	deaths atomic.Uint64 // bumped when a query dies, so claims sweep only when there is work
}

// ref takes a reference to the open query with this text, opening it when there is none.
func (s *preparedSet) ref(query string) *preparedQuery {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = make(map[string]*preparedQuery)
	}
	q := s.open[query]
	if q == nil {
		q = &preparedQuery{query: query}
		s.open[query] = q
	}
	q.refs++
	return q
}

// unref gives back a reference taken by ref; the last one closes the query (its physical
// copies close at their connection's next claim).
func (s *preparedSet) unref(q *preparedQuery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.refs--; q.refs == 0 {
		delete(s.open, q.query)
		q.dead.Store(true)
		s.deaths.Add(1)
	}
}

// statementOn returns q prepared on the claimed physical connection p, preparing it there on
// first use.
func (m *Mode) statementOn(ctx context.Context, p *physical.Conn, q *preparedQuery) (physical.FullStmt, error) {
	if st, ok := p.Prepared[q]; ok {
		return st, nil
	}
	st, err := p.PrepareContext(ctx, q.query)
	if err != nil {
		return nil, err
	}
	ds, ok := st.(physical.FullStmt)
	if !ok { // go-sql-driver's statements always are; never cache one that is not
		st.Close()
		return nil, errUnexpectedStmt(st)
	}
	if p.Prepared == nil {
		p.Prepared = make(map[any]physical.FullStmt)
	}
	p.Prepared[q] = ds
	return ds, nil
}

// sweepStatements closes the physical copies of queries no logical statement has open any
// more. It runs when a physical connection is claimed (only its claimer may send on it) and
// costs one atomic load when nothing died since its last sweep. While a result set is open on
// the connection nothing may be sent, so the sweep waits for a later claim.
func (m *Mode) sweepStatements(p *physical.Conn) {
	deaths := m.prepared.deaths.Load()
	if p.Swept == deaths || p.OpenRows() > 0 {
		return
	}
	p.Swept = deaths
	for q, st := range p.Prepared {
		if q.(*preparedQuery).dead.Load() {
			st.Close()
			delete(p.Prepared, q)
		}
	}
}

// logicalStmt is a prepared statement of a logical connection.
type logicalStmt struct {
	l        *logicalConn
	q        *preparedQuery
	eff      sqlclass.Effect
	numInput int
	proto    physical.FullStmt // the first physical copy, for go-sql-driver's connection-free conversions
	closed   bool
	query    string
}

var _ physical.FullStmt = (*logicalStmt)(nil)

// PrepareContext implements driver.ConnPrepareContext: the query is prepared on a physical
// connection now, so a syntax error surfaces here, and again wherever it later runs.
func (l *logicalConn) PrepareContext(ctx context.Context, query string) (_ driver.Stmt, err error) {
	if tr := l.m.cfg.Trace; tr != nil {
		sp := tr.Start(ctx, physical.OpPrepare, query, nil)
		defer func() { sp.SetNode(l.node()); sp.End(err) }()
	}
	eff := sqlclass.Classify(query)
	rt := l.m.route(ctx, query, eff)
	l.want, l.wantGroup = rt.target, rt.group
	// Preparing runs nothing, but a text that may not run where a pin holds the logical
	// connection is refused now rather than at its first execution.
	p, err := l.bind(ctx, eff|keepsResult, onReplica{text: query})
	if err != nil {
		return nil, err
	}
	q := l.m.prepared.ref(query)
	st, err := l.m.statementOn(ctx, p, q)
	if err != nil {
		l.m.prepared.unref(q)
		return nil, err
	}
	ls := &logicalStmt{l: l, q: q, eff: eff, numInput: st.NumInput(), proto: st, query: query}
	l.stmts = append(l.stmts, ls)
	l.stay = true // database/sql runs it next, most often: where it is prepared already
	return ls, nil
}

func (s *logicalStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (res driver.Result, err error) {
	if s.closed {
		return nil, driver.ErrBadConn
	}
	var sp *physical.Span
	if tr := s.l.m.cfg.Trace; tr != nil {
		t := tr.Start(ctx, physical.OpExec, s.query, nil)
		sp = &t
		defer func() { sp.End(err) }()
	}
	err = s.l.run(ctx, s.query, s.eff, nil, sp, func(p *physical.Conn) error {
		st, err := s.l.m.statementOn(ctx, p, s.q)
		if err == nil {
			res, err = st.ExecContext(ctx, args)
		}
		return err
	})
	return res, err
}

func (s *logicalStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (rows driver.Rows, err error) {
	if s.closed {
		return nil, driver.ErrBadConn
	}
	sp := s.l.m.cfg.Trace.StartQuery(ctx, s.query, nil)
	err = s.l.run(ctx, s.query, s.eff, &rows, sp, func(p *physical.Conn) error {
		st, err := s.l.m.statementOn(ctx, p, s.q)
		if err == nil {
			rows, err = st.QueryContext(ctx, args)
		}
		return err
	})
	endQuery(sp, rows, err)
	return rows, err
}

// Exec implements the deprecated driver.Stmt method through ExecContext.
func (s *logicalStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

// Query implements the deprecated driver.Stmt method through QueryContext.
func (s *logicalStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

// Close gives back the statement's reference to its query. When it was the last statement for its query, the copy on the
// physical connection the logical one holds closes now (database/sql closes statements under
// the connection's lock, so lbd may send on it); other copies close at their connection's next
// claim, or with the connection.
func (s *logicalStmt) Close() error {
	if s.closed {
		return nil
	}
	s.unref()
	l := s.l
	if i := slices.Index(l.stmts, s); i >= 0 {
		l.stmts = slices.Delete(l.stmts, i, i+1)
	}
	if l.claimed && l.phys != nil {
		l.m.sweepStatements(l.phys)
	}
	return nil
}

// unref gives back the statement's reference to its query, once.
func (s *logicalStmt) unref() {
	if !s.closed {
		s.closed = true
		s.l.m.prepared.unref(s.q)
	}
}

func (s *logicalStmt) NumInput() int { return s.numInput }

func (s *logicalStmt) CheckNamedValue(nv *driver.NamedValue) error {
	return s.proto.CheckNamedValue(nv)
}

func (s *logicalStmt) ColumnConverter(idx int) driver.ValueConverter {
	return s.proto.ColumnConverter(idx)
}

func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func errUnexpectedStmt(st driver.Stmt) error {
	return fmt.Errorf("lbd: go-sql-driver returned an unexpected statement type %T", st)
}
