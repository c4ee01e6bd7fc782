package health

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// ErrRetryBudget is the root's ErrRetryBudget: a retry the budget (retryBudgetPercent,
// retryBudgetPerSecond) refused.
var ErrRetryBudget = errors.New("lbd: retry budget spent")

// RetryKind names what a retry is, for RetryStats.
type RetryKind uint8

const (
	ReadRetry    RetryKind = iota // a read run again after its node failed it (retryReads)
	PanicDial                     // a dial to a node marked down
	FailoverWait                  // a Connect waiting for a node its target accepts
	Refusal                       // a statement a demoted primary, or a server shutting down, refused
	PrepareRetry                  // a prepare a node failed, handed back to database/sql
	numRetryKinds
)

// RetryStats counts the retries allowed, by kind, and those the budget refused; the root's
// RetryStats has the same fields.
type RetryStats struct {
	Reads, PanicDials, Waits, Refusals, Prepares, Refused uint64
}

// retryCounts are a Monitor's RetryStats counters.
type retryCounts struct {
	allowed [numRetryKinds]atomic.Uint64
	refused atomic.Uint64
}

// AllowRetry takes one retry of kind k from the budget and reports whether there was one.
func (m *Monitor) AllowRetry(k RetryKind) bool {
	if !m.budget.Allow(m.cfg.Clock.Now()) {
		m.retried.refused.Add(1)
		return false
	}
	m.retried.allowed[k].Add(1)
	return true
}

// RefundRetry gives back a retry of kind k that AllowRetry took and that did not happen.
func (m *Monitor) RefundRetry(k RetryKind) {
	m.budget.Refund(m.cfg.Clock.Now())
	m.retried.allowed[k].Add(^uint64(0))
}

// RetryStats reads the counters.
func (m *Monitor) RetryStats() RetryStats {
	a := &m.retried.allowed
	return RetryStats{Reads: a[ReadRetry].Load(), PanicDials: a[PanicDial].Load(), Waits: a[FailoverWait].Load(),
		Refusals: a[Refusal].Load(), Prepares: a[PrepareRetry].Load(), Refused: m.retried.refused.Load()}
}

// RetryRead reports whether a read with text query that failed with err, before any row
// reached the caller and outside any transaction (the caller checked that much), runs once
// more: retryReads is on, the text is proven a read (see the root's WithRetryReads), the
// failure is the node's, and the budget has a retry left.
func (m *Monitor) RetryRead(query string, err error) bool {
	return m.cfg.RetryReads && m.nodeFailedRead(err) && sqlclass.ReplicaRead(query) && sqlclass.RetryableRead(query) &&
		m.AllowRetry(ReadRetry)
}

// nodeFailedRead reports whether err says the node failed the statement, rather than the
// statement failing on its own merits: anything that is not the server's answer (a lost
// connection, a protocol violation, a timeout), or an answer the exception sorter judges fatal
// to the connection. An error every node would give, and driver.ErrBadConn (database/sql runs
// the statement again anyway), are not.
func (m *Monitor) nodeFailedRead(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || exception.SameOnEveryNode(err) {
		return false
	}
	return !physical.IsServerAnswer(err) || m.cfg.Sorter.IsFatal(err)
}

// RetryPrepare implements physical.Hooks: with retryReads on, a prepare that p's node failed
// (the node's failure, as for a read) is handed back to database/sql, which prepares it again
// on another connection (its own retry of driver.ErrBadConn; never inside a *sql.Tx or through
// a *sql.Conn, where it does not retry). A prepare runs nothing, whatever its text. Each is
// taken from the retry budget.
func (n *Node) RetryPrepare(_ *physical.Conn, err error) bool {
	m := n.m
	return m.cfg.RetryReads && m.nodeFailedRead(err) && m.AllowRetry(PrepareRetry)
}

// RetryRead implements physical.Hooks: with Config.ReadElsewhere, a read that p's node failed
// runs once more on a connection made for it on another node, closed with its rows (the
// caller's pooled connection is retired). When no other node gives a connection, the caller
// gets the first failure.
func (n *Node) RetryRead(ctx context.Context, _ *physical.Conn, query string, args []driver.NamedValue, err error) (driver.Rows, bool, error) {
	m := n.m
	if m.cfg.ReadElsewhere == nil || !m.RetryRead(query, err) {
		return nil, false, nil
	}
	q, cerr := m.cfg.ReadElsewhere(ctx, n.tn)
	if cerr != nil {
		return nil, false, nil
	}
	rows, qerr := q.QueryOnce(ctx, query, args)
	return rows, true, qerr
}
