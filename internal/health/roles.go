package health

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// ErrPartialRun is the root's ErrPartialRun: a server refused a statement of a multi-statement
// text after earlier statements of the same text had run, and the text is not run again.
var ErrPartialRun = errors.New("lbd: part of the statement text ran before the server refused the rest; it was not run again")

// topologySignal tells the Connects waiting for a node their target accepts that the table
// changed (a node came up, or a role changed): each change closes the current channel and
// makes a new one, so a waiter needs no lock while it waits.
type topologySignal struct {
	mu sync.Mutex
	ch chan struct{}
}

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

// Topology returns a channel closed at the next change of the table that may bring a node a
// waiting Connect's target accepts: a node up, a role changed, or a node list applied
// (TopologyChanged). Take it before the pick, so that a change after the pick still wakes the
// wait.
func (m *Monitor) Topology() <-chan struct{} { return m.topo.wait() }

// TopologyChanged wakes the Connects waiting for a node (a node list was applied: a node may
// have joined a group one waits for).
func (m *Monitor) TopologyChanged() { m.topo.changed() }

// onRoleChange reacts to a node's role change: it is logged once; when the target no longer
// accepts the node's role, its connections are retired as for a drain (idle ones close now,
// in-use ones at their return, never mid-statement); waiting Connects look again. Transitions
// arrive after the table made them: a node whose role the target accepts again by then (a role
// that changed back, as singleWriter's choice may while the first checks come in) keeps its
// connections, those opened since included.
func (m *Monitor) onRoleChange(n *Node, t nodetable.Transition[*physical.Node]) {
	m.cfg.Logger.Info("lbd: node role changed", "node", n.Addr(), "from", t.RoleFrom.String(), "to", t.RoleTo.String(), "reason", t.Reason)
	if !m.cfg.Target.Accepts(t.RoleTo) && !m.table.Serves(n.tn) {
		n.phys.RetireAll(physical.Role)
	}
	m.topo.changed()
}

// ErrFailoverWaitersFull is the root's ErrFailoverWaitersFull: MaxFailoverWaiters Connects
// already wait for a node of their target.
var ErrFailoverWaitersFull = errors.New("lbd: too many callers already wait for a node of the target")

// Waiting reports how many Connects wait now for a node their target accepts, and how many
// AwaitTarget refused because MaxFailoverWaiters already waited.
func (m *Monitor) Waiting() (waiting int64, refused uint64) {
	return m.waiting.Load(), m.waitRefused.Load()
}

// AwaitTarget waits, for a Connect that found no up node target accepts, until one may have
// come up (changed, from Topology, is closed: a node came up or a role changed), the deadline
// passes, ctx ends or the Connector closes; it reports whether picking again is worth it. While
// it waits, roles are checked again every recheckSpacing. A wait is a retry from the budget, and
// no more than MaxFailoverWaiters Connects wait at once. Errors, before any wait:
// ErrFailoverWaitersFull (counted in Waiting) and ErrRetryBudget, wrapped, naming target.
func (m *Monitor) AwaitTarget(ctx context.Context, target role.Target, deadline time.Time, changed <-chan struct{}) (bool, error) {
	if m.waiting.Add(1) > int64(m.cfg.MaxFailoverWaiters) {
		m.waiting.Add(-1)
		m.waitRefused.Add(1)
		return false, fmt.Errorf("%w: %d already wait for one that serves target=%s (maxFailoverWaiters); this Connect fails at once rather than queue",
			ErrFailoverWaitersFull, m.cfg.MaxFailoverWaiters, target)
	}
	defer m.waiting.Add(-1)
	if !m.AllowRetry(FailoverWait) {
		return false, fmt.Errorf("%w: no node up serves target=%s, and waiting for one would exceed it (retryBudgetPercent, retryBudgetPerSecond)", ErrRetryBudget, target)
	}
	return m.awaitChange(ctx, deadline, changed), nil
}

// awaitChange is AwaitTarget's wait.
func (m *Monitor) awaitChange(ctx context.Context, deadline time.Time, changed <-chan struct{}) bool {
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
			if m.cfg.RoleAware {
				m.recheckRoles()
			}
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-m.cfg.Stop:
			return false
		}
	}
}

// recheckSpacing is how often roles are checked again while a Connect waits for a node its
// target accepts, and the least time between two such rounds of one Connector.
const recheckSpacing = 250 * time.Millisecond

// onNotPrimary handles a statement that p's node refused as not primary (exception.NotPrimary):
// the node takes the role the refusal names at once, every node's role is checked again now
// (the new primary may be any of them), and p is retired. What the caller gets depends on what
// the refusal proves (nothingRan, see physical's Conn.nothingRan):
//
//   - inside a transaction, whose earlier statements are lost with the session:
//     ErrPrimaryChanged wrapping the server's error;
//   - when the server surely ran none of the command: Config.Refused's error (the root's
//     *RefusedError, wrapping the server's error and driver.ErrBadConn), so database/sql runs
//     the statement again on another connection (whose Connect waits up to FailoverTimeout for
//     a primary), and when its retries end the caller sees the server's own number and
//     message, not a bare "bad connection";
//   - when part of a multi-statement text may have run: ErrPartialRun wrapping the server's
//     error; nothing is run again.
func (m *Monitor) onNotPrimary(p *physical.Conn, err error, nothingRan bool) error {
	now := nodes.RoleReplica
	if exception.StandbyTenant(err) {
		now = nodes.RoleStandby
	}
	p.MarkRetired(physical.Role)
	m.table.RefusedWrite(p.Node().TN(), now)
	m.recheckRoles()
	switch {
	case p.InTx():
		return fmt.Errorf("%w (%s refused a statement: %w)", physical.ErrPrimaryChanged, p.Node().Addr(), err)
	case !nothingRan:
		return fmt.Errorf("%w: %s refused a later statement of the text as not the primary: %w", ErrPartialRun, p.Node().Addr(), err)
	case !m.AllowRetry(Refusal):
		return fmt.Errorf("lbd: %s refused the statement as not the primary; none of it ran, and running it again would exceed the retry budget (%w): %w", p.Node().Addr(), ErrRetryBudget, err)
	}
	return m.cfg.Refused(p.Node().Addr(), err)
}

// onShutdown handles a statement that p's node answered with ER_SERVER_SHUTDOWN: the node is
// drained at once (nodetable's Shutdown) and p is retired. Outside a transaction, when the
// server surely ran none of the command, the caller gets Config.ShuttingDown's error, which
// database/sql runs again on another connection (a retry from the budget, counted as a
// refusal); otherwise, or with the budget spent, the server's error as it is, since what ran
// before it in the transaction or the text is lost with the session.
func (m *Monitor) onShutdown(p *physical.Conn, err error, nothingRan bool) error {
	p.MarkRetired(physical.NodeDown)
	m.table.Shutdown(p.Node().TN(), err)
	if p.InTx() || !nothingRan || !m.AllowRetry(Refusal) {
		return err
	}
	return m.cfg.ShuttingDown(p.Node().Addr(), err)
}

// recheckRoles asks for an early probe, role check included, of every node, at most once per
// recheckSpacing however many statements or Connects ask (the prober also folds a trigger into
// one already pending).
func (m *Monitor) recheckRoles() {
	now := time.Now().UnixNano()
	last := m.lastRecheck.Load()
	if now-last < int64(recheckSpacing) || !m.lastRecheck.CompareAndSwap(last, now) {
		return
	}
	for _, tn := range m.table.Nodes(nil) {
		at(tn).triggerProbe()
	}
}
