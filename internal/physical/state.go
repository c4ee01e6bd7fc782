package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/lbd-go/lbd/internal/sqlclass"
)

// A connection's states as lbd sees them through database/sql's hooks: database/sql calls
// IsValid when a connection comes back to its pool and ResetSession when it hands it out again.
// This file holds every move between them; no other code reads or swaps Conn.state.
const (
	stateFresh  int32 = iota // dialed, no operation yet: handed to a caller, or parked idle by database/sql
	stateInUse               // checked out and used
	stateIdle                // in database/sql's free list, or parked on its node (statement mode)
	stateClosed              // closed by database/sql, or retired while idle or fresh
)

// enter marks the connection in use before any byte is sent. database/sql does not always call
// ResetSession before use (a connection opened in the background and parked idle is handed out
// without it), so every operation claims the connection itself. It fails, with nothing sent and
// driver.ErrBadConn telling database/sql to retry on another connection, when lbd already closed
// the idle or fresh connection, or when this is a checkout (not an operation of a connection
// already in use) and the node is not up, or went down or started draining since the
// connection was opened: from the moment the node table shows the node down or draining, none
// of its connections is handed out, whether or not the transition has been handled yet, nor,
// once it is up again, any connection opened before. That check is two atomic loads
// (nodetable's UpSince).
func (c *Conn) enter() error {
	if c.broken.Load() != nil {
		return driver.ErrBadConn
	}
	if c.state.Load() == stateInUse {
		return nil
	}
	if !c.nodeUp() {
		return driver.ErrBadConn
	}
	if c.state.CompareAndSwap(stateIdle, stateInUse) || c.state.CompareAndSwap(stateFresh, stateInUse) {
		return nil
	}
	return driver.ErrBadConn
}

// nodeUp reports whether the connection's node is up and has not gone down or started draining
// since the connection was opened; when it is not, the connection is marked retired under the
// reason the node's state gives (NodeDown for a node up again).
func (c *Conn) nodeUp() bool {
	n := c.node
	if n.table.UpSince(n.tn, c.epoch) {
		return true
	}
	c.MarkRetired(ReasonFor(n.table.StateNow(n.tn)))
	return false
}

// Claim moves an idle connection (parked on its node, or kept aside by a logical connection)
// to in use, and reports whether it did: false when lbd closed it meanwhile.
func (c *Conn) Claim() bool { return c.state.CompareAndSwap(stateIdle, stateInUse) }

// ClaimFresh moves a connection just dialed to in use, and reports whether it did: false when
// lbd closed it during the dial (its node went down or started draining).
func (c *Conn) ClaimFresh() bool { return c.state.CompareAndSwap(stateFresh, stateInUse) }

// takeIdleToClose moves an idle connection to closed without closing its socket, and reports
// whether it did: the caller (PopOldestFree, under the node's free-list lock) closes it with
// ClosePhysical once out of that lock. False when it was not idle (lbd closed it meanwhile).
func (c *Conn) takeIdleToClose() bool { return c.state.CompareAndSwap(stateIdle, stateClosed) }

// Park moves a connection just dialed and not retired to idle, for PushFree, and reports
// whether it did.
func (c *Conn) Park() bool {
	return !c.retired.Load() && c.state.CompareAndSwap(stateFresh, stateIdle)
}

// Retire marks the connection so the pool drops it; an idle one is closed at once. It reports
// whether the connection was closed at once.
func (c *Conn) Retire(why Reason) bool {
	c.MarkRetired(why)
	return c.RetireIfIdle(why)
}

// RetireIfIdle closes the connection at once if it is idle or fresh (never used: it may sit in
// the pool without database/sql ever having called IsValid), and reports whether it did.
// database/sql still holds the (now closed) connection; its next operation or checkout answers
// driver.ErrBadConn before any byte is sent, and database/sql moves on.
func (c *Conn) RetireIfIdle(why Reason) bool {
	if !c.state.CompareAndSwap(stateIdle, stateClosed) && !c.state.CompareAndSwap(stateFresh, stateClosed) {
		return false
	}
	c.MarkRetired(why)
	c.ClosePhysical()
	return true
}

// MarkRetired marks the connection retired and reports whether this call did it; only that
// call counts the connection, under its reason.
func (c *Conn) MarkRetired(why Reason) bool {
	if c.retired.CompareAndSwap(false, true) {
		c.node.retiredBy[why].Add(1)
		return true
	}
	return false
}

// enterText is enter for a statement with text. On a node that no longer serves the target its
// connection was picked for (a demoted primary under target=primary) the connection stays in
// use until its return, as for a drain, but only a text sqlclass.ReplicaSession accepts (a
// plain read, a user variable) still runs there; anything else is answered without being sent
// (roleGoneErr). The check is one atomic load while the node serves.
func (c *Conn) enterText(text string) error {
	if err := c.enter(); err != nil {
		return err
	}
	if c.node.table.Serves(c.node.tn) || sqlclass.ReplicaSession(text) {
		return nil
	}
	c.MarkRetired(Role)
	return c.roleGoneErr()
}

// roleGoneErr is what a connection in use answers, with nothing sent, once its node lost the
// role the Connector's target picked it for (a demoted primary): outside a transaction
// driver.ErrBadConn, so database/sql runs the statement on a new connection; inside one
// ErrPrimaryChanged, since the transaction cannot move. A server that keeps taking writes after
// its demotion (no read_only, a user with SUPER) never gets one this way.
func (c *Conn) roleGoneErr() error {
	if c.inTx.Load() {
		return fmt.Errorf("%w (%s no longer has the role the connection was picked for)", ErrPrimaryChanged, c.node.addr)
	}
	return driver.ErrBadConn
}

// ErrPrimaryChanged is returned (wrapped) when a statement inside a transaction cannot run
// because its node is no longer the primary; lbd.ErrPrimaryChanged documents it for users.
var ErrPrimaryChanged = errors.New("lbd: the primary changed during the transaction; start it again")

// Retired reports whether the connection was marked retired.
func (c *Conn) Retired() bool { return c.retired.Load() }

// isIdle reports a connection not in use: idle, or fresh.
func (c *Conn) isIdle() bool {
	s := c.state.Load()
	return s == stateIdle || s == stateFresh
}

// Close implements driver.Conn; database/sql calls it when it drops the connection.
func (c *Conn) Close() error {
	for {
		s := c.state.Load()
		if s == stateClosed {
			return nil
		}
		if c.state.CompareAndSwap(s, stateClosed) {
			return c.ClosePhysical()
		}
	}
}

// IsValid implements driver.Validator: database/sql calls it when the connection returns to the
// pool (and statement mode when it gives a connection back). A retired connection, or one whose
// node is not up or went down since it was opened (see nodeUp), answers false, so database/sql
// closes it.
func (c *Conn) IsValid() bool {
	if c.retired.Load() {
		return false
	}
	if !c.nodeUp() {
		return false
	}
	if !c.state.CompareAndSwap(stateInUse, stateIdle) && !c.state.CompareAndSwap(stateFresh, stateIdle) &&
		c.state.Load() != stateIdle {
		return false
	}
	if c.retired.Load() { // retired between the check and the swap, while still in use
		c.RetireIfIdle(Fatal) // counted already, under the reason that retired it
		return false
	}
	return c.dc.IsValid()
}

// ResetSession implements driver.SessionResetter: database/sql calls it when it hands a pooled
// connection out. A retired connection, or one whose node is not up or went down since it was
// opened (see enter), answers driver.ErrBadConn before anything is sent, and database/sql moves
// on to another connection.
func (c *Conn) ResetSession(ctx context.Context) error {
	if err := c.enter(); err != nil {
		return err
	}
	if c.retired.Load() {
		return driver.ErrBadConn
	}
	// Not shown to the sorter: go-sql-driver answers driver.ErrBadConn here for a connection that
	// died while idle (a proxy restart leaves a pool of them), which says nothing about the node
	// now. database/sql closes it and moves on without the application seeing an error. What
	// the server said as it closed it, if anything, goes to Farewell.
	return c.checkAlive(ctx)
}

// checkAlive runs go-sql-driver's liveness check and, when it finds the connection closed or
// written to while idle, hands the server's parting error to the hooks.
func (c *Conn) checkAlive(ctx context.Context) error {
	err := c.dc.ResetSession(ctx)
	if errors.Is(err, driver.ErrBadConn) {
		if me := c.sock.farewell(); me != nil {
			c.node.hooks.Farewell(c, me)
		}
	}
	return err
}

// Usable runs go-sql-driver's liveness check (the one database/sql runs at checkout in
// connection mode) on a connection just claimed from idle, and reports whether it may be
// handed out: not retired, its node up and not down since the connection was opened (see
// nodeUp), and alive.
func (c *Conn) Usable(ctx context.Context) bool {
	return !c.retired.Load() && c.node.table.UpSince(c.node.tn, c.epoch) && c.checkAlive(ctx) == nil
}

// stmtClaim claims an idle or fresh connection for a statement's Close (see stmt.Close); it
// returns the state to go back to, and false when lbd closed the connection.
func (c *Conn) stmtClaim() (from int32, ok bool) {
	from = c.state.Load()
	switch {
	case from == stateClosed:
		return from, false
	case from == stateIdle || from == stateFresh:
		if !c.state.CompareAndSwap(from, stateInUse) {
			return from, false
		}
	}
	return from, true
}

// stmtRelease ends stmtClaim: idle (or fresh) again, unless Close came meanwhile.
func (c *Conn) stmtRelease(from int32) {
	if from == stateIdle || from == stateFresh {
		c.state.CompareAndSwap(stateInUse, from)
	}
}
