package physical

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/lbd-go/lbd/internal/sqlclass"
)

// Statement tracing: the root's statement observer (lbd.WithStatementObserver) is told of each
// statement the application runs, with the node it ran on. In connection mode this package's
// wrappers tell it (the node's Hooks hand over the Trace); in statement mode internal/logical
// does, around its own routing, so that a statement's span covers its bind and its waits and
// names the node it ran on at last. With tracing off a statement pays one nil check.

// Op is the database/sql operation a traced statement is.
type Op uint8

const (
	OpExec     Op = iota // ExecContext, of a text or of a prepared statement
	OpQuery              // QueryContext, of a text or of a prepared statement: until its rows close
	OpPrepare            // PrepareContext
	OpBegin              // BeginTx
	OpCommit             // Tx.Commit
	OpRollback           // Tx.Rollback
	NumOps
)

// Statement is one traced statement as the Tracer sees it.
type Statement struct {
	Op   Op
	Text string // the statement's text; "" for OpBegin, OpCommit and OpRollback
	Verb string // sqlclass.Verb(Text)
	// Node is the node the statement ran on; nil at Start in statement mode (no node is
	// picked yet) and at End when none was reached. Named node groups, once nodes carry them,
	// are read from it as the role is.
	Node *Node
}

// Tracer is the statement observer as this package and internal/logical call it. Start is
// called before the statement is sent and returns the context End gets; End is called once
// for each Start, when the statement's answer was read (a query's: when its rows closed),
// with how long it took and its error: nil, driver.ErrSkip when go-sql-driver declined to send
// it (database/sql then prepares it, and the prepare and execution are traced on their own),
// or the error the caller gets. Start is called on the caller's goroutine; End on it too, or
// on the one that closes a query's rows.
type Tracer interface {
	Start(ctx context.Context, s Statement) context.Context
	End(ctx context.Context, s Statement, took time.Duration, err error)
}

// Trace is a Connector's statement tracing; a nil *Trace traces nothing.
type Trace struct {
	Tracer Tracer
	// Interpolate is go-sql-driver's interpolateParams. Without it, ExecContext and
	// QueryContext with arguments answer driver.ErrSkip having sent nothing (database/sql
	// prepares the statement instead), so such a call is not traced: the prepare and the
	// execution that follow are.
	Interpolate bool
}

// Declined reports whether go-sql-driver will answer a text with args arguments with
// driver.ErrSkip without sending it (see Interpolate).
func (tr *Trace) Declined(args int) bool { return args > 0 && !tr.Interpolate }

// Span is one traced statement from its Start to its End. The zero Span traces nothing.
type Span struct {
	trace *Trace
	ctx   context.Context // what Tracer.Start returned
	start time.Time
	st    Statement
	err   error // a query's first error met reading its rows, which End reports
}

// Start tells the Tracer of a statement op with text about to run on n (nil: not picked yet)
// and returns its Span; on a nil Trace it returns the zero Span.
func (tr *Trace) Start(ctx context.Context, op Op, text string, n *Node) Span {
	if tr == nil {
		return Span{}
	}
	st := Statement{Op: op, Text: text, Verb: sqlclass.Verb(text), Node: n}
	return Span{trace: tr, ctx: tr.Tracer.Start(ctx, st), start: time.Now(), st: st}
}

// StartQuery is Start for a query, whose span outlives the call that starts it (it ends when
// the rows close: AttachRows): nil on a nil Trace.
func (tr *Trace) StartQuery(ctx context.Context, text string, n *Node) *Span {
	if tr == nil {
		return nil
	}
	s := tr.Start(ctx, OpQuery, text, n)
	return &s
}

// SetNode records the node the statement ran on at last.
func (s *Span) SetNode(n *Node) {
	if s != nil {
		s.st.Node = n
	}
}

// End tells the Tracer the statement ended with err; the first call ends the span, later ones
// do nothing.
func (s *Span) End(err error) {
	if s == nil || s.trace == nil {
		return
	}
	tr := s.trace
	s.trace = nil
	tr.Tracer.End(s.ctx, s.st, time.Since(s.start), err)
}

// end is End for a deferred call, with the function's named error.
func (s *Span) end(errp *error) { s.End(*errp) }

// endQuery is, for a deferred call, End when the query failed with *errp, and AttachRows of
// *rowsp when it did not.
func (s *Span) endQuery(rowsp *driver.Rows, errp *error) {
	if *errp != nil {
		s.End(*errp)
		return
	}
	s.AttachRows(*rowsp)
}

// AttachRows makes the query's span s end when rows, a result this package returned, close;
// the node that answered is rows' own (a read run again elsewhere was answered there). When
// rows are not this package's (go-sql-driver's unwrapped, which never happens with its
// current types), the span ends now. A nil s attaches nothing.
func (s *Span) AttachRows(dr driver.Rows) {
	if s == nil || s.trace == nil {
		return
	}
	r, ok := dr.(*rows)
	if !ok {
		s.End(nil)
		return
	}
	s.st.Node = r.c.node
	r.span = s
}

// failRows records err, met reading a traced query's rows, for its span's End.
func (s *Span) failRows(err error) {
	if s.err == nil {
		s.err = err
	}
}

// endRows ends a traced query's span as its rows close with err: the first error its rows
// met, or err.
func (s *Span) endRows(err error) {
	if s.err != nil {
		err = s.err
	}
	s.End(err)
}

// tracing returns the Trace of a statement on c; nil when the node traces nothing (tracing
// off, or statement mode, whose statements internal/logical traces) or c was made by
// QueryOnce for a read run again, which the first run's span covers.
func (c *Conn) tracing() *Trace {
	if c.rerun {
		return nil
	}
	return c.node.trace
}
