package lbd

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/nodes"
)

// StatementOp is the database/sql driver operation a StatementInfo reports.
type StatementOp uint8

const (
	// OpExec: an ExecContext, of a text or of a prepared statement.
	OpExec = StatementOp(physical.OpExec)
	// OpQuery: a QueryContext, of a text or of a prepared statement, until its rows close.
	OpQuery = StatementOp(physical.OpQuery)
	// OpPrepare: a PrepareContext.
	OpPrepare = StatementOp(physical.OpPrepare)
	// OpBegin: a BeginTx.
	OpBegin = StatementOp(physical.OpBegin)
	// OpCommit: a transaction's Commit.
	OpCommit = StatementOp(physical.OpCommit)
	// OpRollback: a transaction's Rollback.
	OpRollback = StatementOp(physical.OpRollback)
)

// String returns "exec", "query", "prepare", "begin", "commit" or "rollback" ("unknown" for any
// other value).
func (o StatementOp) String() string {
	switch o {
	case OpExec:
		return "exec"
	case OpQuery:
		return "query"
	case OpPrepare:
		return "prepare"
	case OpBegin:
		return "begin"
	case OpCommit:
		return "commit"
	case OpRollback:
		return "rollback"
	}
	return "unknown"
}

// StatementInfo describes one statement to a StatementObserver. New fields may be added.
type StatementInfo struct {
	Op StatementOp
	// Text is the statement's text as the application passed it (for a prepared statement's
	// execution, the text prepared); "" for OpBegin, OpCommit and OpRollback. It may hold
	// literal values: an observer that records it should let the application opt in.
	Text string
	// Verb is Text's first keyword in upper case ("SELECT", "INSERT", "UPDATE", "WITH",
	// "CALL", ...), one of a fixed set of statement keywords, when Text holds exactly one
	// statement; "" otherwise (several statements, or a first word that is no statement
	// keyword). It is cheap to read, and low in cardinality, for a metric's attributes.
	Verb string
	// Addr is the node the statement ran on, "host:port", with Host and Port its parts (Port
	// 0 when the address has none). In statement mode (balance=statement) StatementStart gets
	// them empty: the node is picked after it. StatementEnd gets them empty when no node was
	// reached (no node up, a dial failed).
	Addr string
	Host string
	Port int
	// Role is the node's role (nodes.Role) when the statement was reported: from the node
	// source, the DSN or the role check; RoleUnknown when none is known or no node was reached.
	Role nodes.Role
	// Groups are the named groups of the node (nil when it has none); see lbd.InGroup.
	Groups []string
}

// StatementObserver is told of every statement the application runs through a Connector,
// with the node that ran it (WithStatementObserver): the hook for per-statement telemetry,
// such as an OpenTelemetry client span and a db.client.operation.duration measurement per
// statement (package lbdotel's WithStatementTelemetry).
//
// StatementStart is called before the statement is sent, with the caller's context, and
// returns the context StatementEnd gets: the caller's own, or one carrying what the observer
// keeps for the statement (a span). The statement itself runs under the caller's context,
// whatever StatementStart returns. StatementEnd is called exactly once for each
// StatementStart, with how long the statement took (from StatementStart to the end of its
// answer; a query's until its rows close, so that errors met reading them count) and its
// error: nil, the error the caller gets, or driver.ErrSkip when go-sql-driver declined to
// send the text (database/sql then prepares it, and that prepare and the execution are
// reported on their own).
//
// One call reports one database/sql driver call as its caller sees it: a read lbd ran again
// on another node after its node failed it (WithRetryReads), or a read a replica refused and
// the primary ran, is one statement, reported with the node that ran it at last. In statement
// mode the duration includes what lbd did before sending it: picking the node, a dial when no
// idle connection waited there, a causal read's wait for its position. Not reported: pings,
// lbd's probes and its own session queries, and calls database/sql never made because the
// connection was retired at checkout.
//
// Both methods are called synchronously: StatementStart on the goroutine running the
// statement, StatementEnd on that goroutine or, for a query, on the one that closes its rows
// (database/sql closes them on a goroutine of its own when the query's context ends). They
// must be fast, must not block, must not panic, and must be safe for concurrent use. With no
// observer set, a statement costs nothing more than a nil check.
type StatementObserver interface {
	StatementStart(ctx context.Context, s StatementInfo) context.Context
	StatementEnd(ctx context.Context, s StatementInfo, took time.Duration, err error)
}

// WithStatementObserver sets the observer told of every statement (see StatementObserver), in
// both balance modes. A Connector has one: a later WithStatementObserver replaces an earlier
// one. A nil observer is an error. A DSN cannot carry it.
func WithStatementObserver(o StatementObserver) Option {
	return func(c *Config) error {
		if o == nil {
			return errors.New("lbd: WithStatementObserver: nil observer")
		}
		c.statements = o
		return nil
	}
}

// statementTrace builds the Connector's statement tracing from its Config; nil without an
// observer.
func statementTrace(cfg *Config, table *nodeTable) *physical.Trace {
	if cfg.statements == nil {
		return nil
	}
	return &physical.Trace{
		Tracer:      &statementTracer{obs: cfg.statements, table: table},
		Interpolate: cfg.MySQL.InterpolateParams,
	}
}

// statementTracer turns the layers' physical.Statement into the observer's StatementInfo.
type statementTracer struct {
	obs   StatementObserver
	table *nodeTable
}

func (t *statementTracer) Start(ctx context.Context, s physical.Statement) context.Context {
	return t.obs.StatementStart(ctx, t.info(s))
}

func (t *statementTracer) End(ctx context.Context, s physical.Statement, took time.Duration, err error) {
	t.obs.StatementEnd(ctx, t.info(s), took, err)
}

func (t *statementTracer) info(s physical.Statement) StatementInfo {
	info := StatementInfo{Op: StatementOp(s.Op), Text: s.Text, Verb: s.Verb}
	if n := s.Node; n != nil {
		info.Addr = n.Addr()
		info.Host, info.Port = splitAddr(info.Addr)
		info.Role = t.table.Role(n.TN())
		if g := t.table.GroupsOf(n.TN()); g != "" {
			info.Groups = nodes.SplitGroups(g)
		}
	}
	return info
}

// splitAddr splits a node's "host:port" without allocating; a port that is not a number is 0.
func splitAddr(addr string) (host string, port int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ = strconv.Atoi(p)
	return host, port
}
