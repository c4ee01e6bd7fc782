package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/logical"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// Target says which nodes new connections may go to, by role (DSN parameter target, option
// WithTarget), after libpq's target_session_attrs. A standby is never a target.
type Target uint8

const (
	// TargetAny (the default): every node that is not a standby.
	TargetAny = Target(role.Any)
	// TargetPrimary: primaries only. With none up, Connect waits up to FailoverTimeout for one.
	TargetPrimary = Target(role.PrimaryOnly)
	// TargetPreferPrimary: primaries; with none up, replicas and nodes of unknown role.
	TargetPreferPrimary = Target(role.PreferPrimary)
	// TargetReplica: replicas only. With none up, Connect waits up to FailoverTimeout for one.
	TargetReplica = Target(role.ReplicaOnly)
	// TargetPreferReplica: replicas; with none up, primaries and nodes of unknown role.
	TargetPreferReplica = Target(role.PreferReplica)
)

// String returns the target as the DSN writes it: "any", "primary", "prefer-primary",
// "replica" or "prefer-replica".
func (t Target) String() string { return role.Target(t).String() }

// DefaultFailoverTimeout is how long a Connect, or a statement refused by a demoted primary,
// waits for a node its target accepts (failoverTimeoutMillis). A planned OceanBase switchover or
// a MySQL/MariaDB failover tool promotes a new primary within seconds; five leave room for that
// and stay below the request deadlines applications commonly set. The caller's context cuts it
// shorter.
const DefaultFailoverTimeout = 5 * time.Second

// DefaultMaxFailoverWaiters bounds how many Connects of one Connector wait for a node their
// target accepts at once (maxFailoverWaiters): vtgate's failover buffer holds at most 1000
// requests by default for the same reason. Without a bound, a switchover under load queues
// every statement the application starts until the timeout, and they all land at once.
const DefaultMaxFailoverWaiters = 1000

// ErrFailoverWaitersFull is returned (wrapped, naming the target and the bound) by a Connect
// that found no node its target accepts while maxFailoverWaiters other Connects already wait
// for one: it fails at once instead of queuing. Retry later, raise maxFailoverWaiters, or shed
// load until the switchover ends.
var ErrFailoverWaitersFull = errors.New("lbd: too many callers already wait for a node of the target")

// ErrPrimaryChanged is returned (wrapped, with the server's error) when a statement inside a
// transaction was refused because its node is no longer the primary (exception.NotPrimary):
// the transaction is lost and must be started again, on the new primary; the connection is
// retired. Outside a transaction lbd hides the change: the refused statement did not run, so
// database/sql runs it again on a new connection, which waits up to FailoverTimeout for the new
// primary.
var ErrPrimaryChanged = physical.ErrPrimaryChanged

// ErrPartialRun is returned (wrapped, with the server's error) when a server refused a statement
// of a multi-statement text (multiStatements=true) after earlier statements of the same text
// had run: the text is not run again, since running it again would repeat what ran. The caller
// must find out what ran and finish the work itself; the connection is retired.
var ErrPartialRun = errors.New("lbd: part of the statement text ran before the server refused the rest; it was not run again")

// RefusedError is a statement a server refused before running any of it, because the node is
// not the primary (exception.NotPrimary: MySQL/MariaDB 1290 and 1836, OceanBase 4782). It
// wraps the server's error (errors.As finds the *mysql.MySQLError with its number, SQLSTATE
// and message) and driver.ErrBadConn, which tells database/sql that the statement may run again
// on another connection. database/sql does so a few times; when it gives up, the caller gets
// this error.
type RefusedError struct {
	Addr string // the node that refused, "host:port"
	Err  error  // the server's error
}

// Error names the node and quotes the server's error.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("lbd: %s refused the statement as not the primary; none of it ran: %v", e.Addr, e.Err)
}

// Unwrap returns the server's error and driver.ErrBadConn.
func (e *RefusedError) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

// ShutdownError is a statement a server refused before running any of it because it is
// shutting down (ER_SERVER_SHUTDOWN, 1053; exception.ServerShutdown). It wraps the server's
// error and driver.ErrBadConn, so database/sql runs the statement again on another connection,
// which goes to another node: the one that refused is drained from that moment. When
// database/sql's retries end, the caller gets this error.
type ShutdownError struct {
	Addr string // the node that refused, "host:port"
	Err  error  // the server's error
}

// Error names the node and quotes the server's error.
func (e *ShutdownError) Error() string {
	return fmt.Sprintf("lbd: %s refused the statement while shutting down; none of it ran: %v", e.Addr, e.Err)
}

// Unwrap returns the server's error and driver.ErrBadConn.
func (e *ShutdownError) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

// isRefusal reports a RefusedError in err's tree. It is a function of its own so that the
// target errors.As needs is allocated only for an error.
func isRefusal(err error) bool {
	var refused *RefusedError
	return errors.As(err, &refused)
}

// ErrPinnedToReplica is returned, before anything is sent, when a statement the read/write split
// cannot prove replica-safe (a write, a locking read, a named lock, anything
// sqlclass.ReplicaSession does not accept) meets a logical connection pinned to a replica: by a
// read-only transaction (BeginTx with ReadOnly), or by session state (SET @v, ...) set in one;
// or pinned by a transaction or session state to a primary that the role check has since
// found a replica (a switchover). Running it there could write on a replica; moving it to the primary would lose the session
// state, so it runs nowhere. Fix: run the transaction read-write (a read-write transaction and
// the state it leaves live on the primary), or give its context OnPrimary. database/sql does
// not hand such a logical connection out again once it returns to the pool.
var ErrPinnedToReplica = logical.ErrPinnedToReplica

// roleSettings are the parsed forms of Config.RoleCheck and Config.Target.
type roleSettings struct {
	check  role.Check
	target role.Target
}

// parseRoleSettings checks RoleCheck and Target.
func (c *Config) parseRoleSettings() (roleSettings, error) {
	check, err := role.ParseCheck(c.RoleCheck)
	if err != nil {
		return roleSettings{}, fmt.Errorf("lbd: invalid DSN parameter %w", err)
	}
	if c.Target > TargetPreferReplica {
		return roleSettings{}, fmt.Errorf("lbd: invalid Target %d: use one of the Target constants", c.Target)
	}
	return roleSettings{check: check, target: role.Target(c.Target)}, nil
}

// seedRoles gives every node of list the role a check fixes without asking (TiDB: all
// primaries); other checks and none leave the sources' roles.
func (s roleSettings) seedRoles(list []nodes.Node) []nodes.Node {
	if s.check.Fixed() == nodes.RoleUnknown {
		return list
	}
	out := make([]nodes.Node, len(list))
	for i, n := range list {
		n.Role = s.check.Fixed()
		out[i] = n
	}
	return out
}

// topologySignal tells the Connects waiting for a node their target accepts that the table
// changed (a node came up, or a role changed): each change closes the current channel and
// makes a new one, so a waiter needs no lock while it waits.
type topologySignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newTopologySignal() *topologySignal { return &topologySignal{ch: make(chan struct{})} }

// wait returns a channel closed at the next change.
func (s *topologySignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// changed wakes every waiter.
func (s *topologySignal) changed() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// onRoleChange reacts to a node's role change: it is logged once; when the target no longer
// accepts the node's role, its connections are retired as for a drain (idle ones close now,
// in-use ones at their return, never mid-statement); waiting Connects look again. Transitions
// arrive after the table made them: a node whose role the target accepts again by then (a role
// that changed back, as singleWriter's choice may while the first checks come in) keeps its
// connections, those opened since included.
func (c *Connector) onRoleChange(n *node, t nodetable.Transition[*physical.Node]) {
	c.cfg.Logger.Info("lbd: node role changed", "node", n.addr, "from", t.RoleFrom.String(), "to", t.RoleTo.String(), "reason", t.Reason)
	if !c.roles.target.Accepts(t.RoleTo) && !c.table.Serves(n.tn) {
		n.phys.RetireAll(physical.Role)
	}
	c.topo.changed()
}

// awaitTarget waits until a node the target accepts may have come up (changed is closed: a node
// came up or a role changed), the deadline passes, ctx ends or the Connector closes; it reports whether picking
// again is worth it.
// startWaiting counts one more Connect waiting for a node its target accepts and reports
// whether it may wait: no more than MaxFailoverWaiters do at once. One refused is counted.
func (c *Connector) startWaiting() bool {
	if c.waiting.Add(1) > int64(c.cfg.MaxFailoverWaiters) {
		c.waiting.Add(-1)
		c.waitRefused.Add(1)
		return false
	}
	return true
}

func (c *Connector) awaitTarget(ctx context.Context, deadline time.Time, changed <-chan struct{}) bool {
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// While a Connect waits, roles are checked again every recheckSpacing (a switchover may
	// leave a gap with no primary; the scheduled probes may be seconds apart).
	tick := time.NewTicker(recheckSpacing)
	defer tick.Stop()
	for {
		select {
		case <-changed:
			return true
		case <-tick.C:
			if c.roleAware() {
				c.recheckRoles()
			}
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-c.stop:
			return false
		}
	}
}

// recheckSpacing is how often roles are checked again while a Connect waits for a node its
// target accepts, and the least time between two such rounds of one Connector.
const recheckSpacing = 250 * time.Millisecond

// roleAware reports whether the Connector routes by role: a role check or a target other than
// any is configured. Without either, a write refused by a read-only server stays what it was
// in lb-driver, a fatal error of the connection counted against the node.
func (c *Connector) roleAware() bool {
	return c.roles.check.Query() != "" || c.roles.target != role.Any || c.cfg.ReadWriteSplit
}

// onNotPrimary handles a statement that p's node refused as not primary (exception.NotPrimary):
// the node takes the role the refusal names at once, every node's role is checked again now
// (the new primary may be any of them), and p is retired. What the caller gets depends on what
// the refusal proves (nothingRan, see physical's Conn.nothingRan):
//
//   - inside a transaction, whose earlier statements are lost with the session:
//     ErrPrimaryChanged wrapping the server's error;
//   - when the server surely ran none of the command: a *RefusedError wrapping the server's
//     error and driver.ErrBadConn, so database/sql runs the statement again on another
//     connection (whose Connect waits up to FailoverTimeout for a primary), and when its retries
//     end the caller sees the server's own number and message, not a bare "bad connection";
//   - when part of a multi-statement text may have run: ErrPartialRun wrapping the server's
//     error; nothing is run again.
func (c *Connector) onNotPrimary(p *physical.Conn, err error, nothingRan bool) error {
	now := nodes.RoleReplica
	if exception.StandbyTenant(err) {
		now = nodes.RoleStandby
	}
	p.MarkRetired(physical.Role)
	c.table.RefusedWrite(p.Node().TN(), now)
	c.recheckRoles()
	switch {
	case p.InTx():
		return fmt.Errorf("%w (%s refused a statement: %w)", ErrPrimaryChanged, p.Node().Addr(), err)
	case !nothingRan:
		return fmt.Errorf("%w: %s refused a later statement of the text as not the primary: %w", ErrPartialRun, p.Node().Addr(), err)
	case !c.allowRetry(retryRefusal):
		return fmt.Errorf("lbd: %s refused the statement as not the primary; none of it ran, and running it again would exceed the retry budget (%w): %w", p.Node().Addr(), ErrRetryBudget, err)
	}
	return &RefusedError{Addr: p.Node().Addr(), Err: err}
}

// onShutdown handles a statement that p's node answered with ER_SERVER_SHUTDOWN: the node is
// drained at once (nodetable's Shutdown) and p is retired. Outside a transaction, when the
// server surely ran none of the command, the caller gets a *ShutdownError, which database/sql
// runs again on another connection (a retry from the budget, counted as a refusal); otherwise,
// or with the budget spent, the server's error as it is, since what ran before it in the
// transaction or the text is lost with the session.
func (c *Connector) onShutdown(p *physical.Conn, err error, nothingRan bool) error {
	p.MarkRetired(physical.NodeDown)
	c.table.Shutdown(p.Node().TN(), err)
	if p.InTx() || !nothingRan || !c.allowRetry(retryRefusal) {
		return err
	}
	return &ShutdownError{Addr: p.Node().Addr(), Err: err}
}

// recheckRoles asks for an early probe, role check included, of every node, at most once per
// recheckSpacing however many statements or Connects ask (the prober also folds a trigger into
// one already pending).
func (c *Connector) recheckRoles() {
	now := time.Now().UnixNano()
	last := c.lastRecheck.Load()
	if now-last < int64(recheckSpacing) || !c.lastRecheck.CompareAndSwap(last, now) {
		return
	}
	for _, tn := range c.table.Nodes(nil) {
		at(tn).triggerProbe()
	}
}
