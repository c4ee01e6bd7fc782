package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// The retry budget's defaults are Finagle's (RetryBudget: 20 % of requests, a reserve of 10
// retries a second, over a 10 s window). A healthy fleet never comes near them; they matter
// when everything fails at once, where retries without a bound multiply the load on the
// nodes still standing (field reports of unbounded retry loops in database wrappers: minutes
// of blocked callers).
const (
	DefaultRetryBudgetPercent   = 20
	DefaultRetryBudgetPerSecond = 10
)

// DefaultRetryReads is retryReads' default: on. Measured under 16 workers reading through three
// proxies, one of them killed: 2-6 reads failed without it (those in flight), none with it, at
// the same detection and return times; it costs nothing until a statement fails. What it runs
// again is proven a read and outside any transaction, so running it twice changes nothing.
const DefaultRetryReads = true

// ErrRetryBudget is wrapped by the error a Connect returns when it would have dialed a node
// marked down (panic mode), or waited for a node its target accepts (a switchover), and the
// retry budget (retryBudgetPercent, retryBudgetPerSecond) was spent: lbd already runs as many
// retries as the budget allows, so this one fails at once. A read that retryReads would have
// run again, and a statement a demoted primary refused, get their own error instead, with
// the budget's refusal counted in Stats.Retries. Back off, or raise the budget if the
// statements that failed this way could have been served.
var ErrRetryBudget = errors.New("lbd: retry budget spent")

// RetryStats counts what lbd ran again on its own, by kind, and what the retry budget refused.
type RetryStats struct {
	Reads      uint64 // reads run again after their node failed them (retryReads)
	PanicDials uint64 // dials to a node marked down: none was up (panic mode), or too few (panicThresholdPercent)
	Waits      uint64 // Connects that waited for a node their target accepts (a switchover)
	Refusals   uint64 // statements a demoted primary, or a server shutting down (1053), refused; handed back to run again
	Prepares   uint64 // prepares a node failed, handed back to database/sql to prepare again (retryReads)
	Refused    uint64 // retries the budget refused: each failed at once instead
}

// retryKind names what a retry is, for RetryStats.
type retryKind uint8

const (
	retryRead retryKind = iota
	retryPanicDial
	retryWait
	retryRefusal
	retryPrepare
	numRetryKinds
)

// retryCounts are a Connector's RetryStats counters.
type retryCounts struct {
	allowed [numRetryKinds]atomic.Uint64
	refused atomic.Uint64
}

// allowRetry takes one retry of kind k from the budget and reports whether there was one.
func (c *Connector) allowRetry(k retryKind) bool {
	if !c.retryBudget.Allow(c.cfg.clock.Now()) {
		c.retried.refused.Add(1)
		return false
	}
	c.retried.allowed[k].Add(1)
	return true
}

// refundRetry gives back a retry of kind k that allowRetry took and that did not happen.
func (c *Connector) refundRetry(k retryKind) {
	c.retryBudget.Refund(c.cfg.clock.Now())
	c.retried.allowed[k].Add(^uint64(0))
}

// retryStats reads the counters.
func (c *Connector) retryStats() RetryStats {
	a := &c.retried.allowed
	return RetryStats{Reads: a[retryRead].Load(), PanicDials: a[retryPanicDial].Load(), Waits: a[retryWait].Load(),
		Refusals: a[retryRefusal].Load(), Prepares: a[retryPrepare].Load(), Refused: c.retried.refused.Load()}
}

// retryRead reports whether a read with text query that failed with err, before any row
// reached the caller and outside any transaction (the caller checked that much), runs once
// more: retryReads is on, the text is proven a read (see WithRetryReads), the failure is the
// node's, and the budget has a retry left.
func (c *Connector) retryRead(query string, err error) bool {
	return c.cfg.RetryReads && c.nodeFailedRead(err) && sqlclass.ReplicaRead(query) && sqlclass.RetryableRead(query) &&
		c.allowRetry(retryRead)
}

// nodeFailedRead reports whether err says the node failed the statement, rather than the
// statement failing on its own merits: anything that is not the server's answer (a lost
// connection, a protocol violation, a timeout), or an answer the exception sorter judges fatal
// to the connection. An error every node would give, and driver.ErrBadConn (database/sql runs
// the statement again anyway), are not.
func (c *Connector) nodeFailedRead(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || exception.SameOnEveryNode(err) {
		return false
	}
	return !physical.IsServerAnswer(err) || c.cfg.Sorter.IsFatal(err)
}

// RetryPrepare implements physical.Hooks: with retryReads on, a prepare that p's node failed
// (the node's failure, as for a read) is handed back to database/sql, which prepares it again
// on another connection (its own retry of driver.ErrBadConn, in both balance modes; never
// inside a *sql.Tx or through a *sql.Conn, where it does not retry). A prepare runs nothing,
// whatever its text. Each is taken from the retry budget.
func (n *node) RetryPrepare(_ *physical.Conn, err error) bool {
	c := n.c
	return c.cfg.RetryReads && c.nodeFailedRead(err) && c.allowRetry(retryPrepare)
}

// RetryRead implements physical.Hooks: in connection mode a read that p's node failed runs
// once more on a connection made for it on another node, closed with its rows (the caller's
// pooled connection is retired). When no other node gives a connection, the caller gets the
// first failure. Statement mode runs its reads again itself (logical.Config.RetryRead).
func (n *node) RetryRead(ctx context.Context, _ *physical.Conn, query string, args []driver.NamedValue, err error) (driver.Rows, bool, error) {
	c := n.c
	if c.cfg.Balance != BalanceConnection || !c.retryRead(query, err) {
		return nil, false, nil
	}
	q, cerr := c.connectAvoiding(ctx, n.tn)
	if cerr != nil {
		return nil, false, nil
	}
	rows, qerr := q.QueryOnce(ctx, query, args)
	return rows, true, qerr
}
