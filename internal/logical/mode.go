package logical

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
)

// Config is what the root hands statement mode: the node table, and functions for what the
// Connector does (dial, clock, logger) and the split's settings.
type Config struct {
	Table *physical.Table
	// Connect dials a physical connection as connection mode's Connect does: on the up node
	// with the fewest open connections, the next best when a dial fails, panic mode when
	// none is up.
	Connect func(ctx context.Context) (*physical.Conn, error)
	// TryNodes asks next (then panicNext) for a node and use for a connection on it, with
	// Connect's failover and error rules; target and group are what next picks for ("": the
	// default picks).
	TryNodes func(ctx context.Context, target role.Target, group string, next func(tried []*physical.TableNode) *physical.TableNode,
		panicNext func(tried []*physical.TableNode, now time.Time) *physical.TableNode,
		use func(n *physical.Node, panicDial bool) (*physical.Conn, error)) (*physical.Conn, error)
	// Dial makes one physical connection to n, whose count the pick already raised.
	Dial func(ctx context.Context, n *physical.Node, panicDial bool) (*physical.Conn, error)
	// CountRouted counts a statement of the split on its node, as a read or a write.
	CountRouted func(n *physical.Node, write bool)
	// Refused reports an error that says a node refused the statement as not the primary
	// before running any of it (the root's RefusedError).
	Refused func(error) bool
	// RetryRead reports whether the read with text query, which failed with err before any row
	// reached the caller, outside any transaction or session state, runs once more on another
	// node (retryReads, and a retry from the budget); nil retries none.
	RetryRead func(query string, err error) bool
	// Closed reports whether the Connector is closed; ErrClosed is then the error.
	Closed    func() bool
	ErrClosed error
	Now       func() time.Time
	Logger    *slog.Logger

	Target         role.Target   // where every statement goes without the split
	Split          bool          // readWriteSplit
	ReadAfterWrite time.Duration // read-your-writes window; 0: none
	Causal         bool          // readConsistency=gtid (with Split)
	RoutingHints   bool          // routingHints: a leading /* lbd:primary */ or /* lbd:replica */ routes one statement (with Split)
	PrimaryReads   bool          // primaryReads: replica-safe reads may go to the primary as to any replica (with Split)
	// CausalGalera says the nodes are Galera's (roleCheck=galera): positions are captured and
	// waited for with Galera's functions (causal.Galera) rather than told MariaDB from MySQL
	// by the first capture.
	CausalGalera bool
	// InterpolateParams is go-sql-driver's interpolateParams: without it a statement with
	// arguments is prepared by database/sql (ExecContext and QueryContext answer ErrSkip).
	InterpolateParams bool
	// Trace is the statement tracing (lbd.WithStatementObserver); nil traces nothing. Each
	// statement's span covers its routing, bind and waits and names the node it ran on at
	// last; the physical connections' own wrappers trace nothing in statement mode.
	Trace *physical.Trace
}

// Mode is statement mode for one Connector: the count of logical connections database/sql
// holds, the prepared statements they share, and the router. The physical connections
// themselves stay on their nodes (the node's free list for idle ones), counted and retired
// exactly as in connection mode.
type Mode struct {
	cfg   Config
	table *physical.Table
	split splitState

	logical  atomic.Int64                     // open logical connections
	checker  atomic.Value                     // driver.NamedValueChecker: go-sql-driver's argument rules, from the first logical connection's dial
	trimMu   sync.Mutex                       // one trim at a time, so two returns never close the same surplus twice
	views    []nodetable.View[*physical.Node] // trim's scratch copy of the node table; guarded by trimMu
	prepared preparedSet
}

// New builds statement mode from cfg.
func New(cfg Config) *Mode {
	m := &Mode{cfg: cfg, table: cfg.Table}
	m.split.init(&cfg)
	return m
}

// Logical returns how many logical connections are open.
func (m *Mode) Logical() int64 { return m.logical.Load() }

// Connect opens a logical connection. Physical connections follow the logical count:
// when there are fewer physical connections than logical ones, one is dialed now (on the node
// with the fewest open connections) and parked, so connect errors surface here as in
// connection mode and the first statement finds an idle physical connection. A caller whose
// context chooses a group (lbd.InGroup) gets no such dial, which would go to the default
// picks: its first statement dials in its group.
func (m *Mode) Connect(ctx context.Context) (driver.Conn, error) {
	if m.cfg.Closed() {
		return nil, m.cfg.ErrClosed
	}
	want := m.logical.Add(1)
	if g, chose := physical.GroupOf(ctx); (!chose || g == "") && m.table.Total() < want {
		p, err := m.cfg.Connect(ctx)
		if err != nil {
			m.logical.Add(-1)
			return nil, err
		}
		// go-sql-driver's argument rules do not depend on the connection: keep the first one's.
		m.checker.CompareAndSwap(nil, driver.NamedValueChecker(p.Driver()))
		if !p.Park() {
			p.Close() // its node went down during the dial
		} else {
			m.parkFree(p)
		}
	}
	return &logicalConn{m: m}, nil
}

// Borrow claims a physical connection for a logical one: an idle one on the up node with the
// fewest physical connections in use, else a new one dialed there; when that dial fails, the
// next least busy node. The node's in-use count is charged; GiveBack or park returns it.
func (m *Mode) Borrow(ctx context.Context, target role.Target) (*physical.Conn, error) {
	return m.borrow(ctx, target, "", nil)
}

// borrow is Borrow among the nodes of group ("": the default picks) on a node other than
// avoid (nil: any), or on avoid when no other is up: a read run again because avoid failed it
// goes elsewhere when it can, and never on the connection that failed (the caller retired that
// one). The connection is marked picked for group (physical.Conn.SetGroup).
func (m *Mode) borrow(ctx context.Context, target role.Target, group string, avoid *physical.TableNode) (*physical.Conn, error) {
	if m.cfg.Closed() {
		return nil, m.cfg.ErrClosed
	}
	var skip []*physical.TableNode
	if avoid != nil {
		skip = []*physical.TableNode{avoid}
	}
	first := m.table.PickInUseForGroup(target, group, skip)
	if first == nil && avoid != nil {
		first, avoid = m.table.PickInUseForGroup(target, group, nil), nil // none other: avoid itself, on another connection
		if first == nil {
			return nil, errNoOtherNode
		}
	}
	if first != nil {
		if p := m.takeFree(ctx, first.Payload()); p != nil {
			p.SetGroup(group)
			return p, nil
		}
	}
	p, err := m.dialFor(ctx, target, group, first, avoid)
	if err == nil {
		p.SetGroup(group)
	}
	return p, err
}

// errNoOtherNode: a read to run again found no node up.
var errNoOtherNode = errors.New("lbd: no node is up to run the read again")

// dialFor is borrow when no idle physical connection was found on first (the node borrow
// picked and claimed in group, nil when none): a new one is dialed there, then on the next least busy
// nodes. It is a function of its own so that first, which the closures below share and
// Config.TryNodes sees, is moved to the heap only when a dial is needed.
func (m *Mode) dialFor(ctx context.Context, target role.Target, group string, first, avoid *physical.TableNode) (*physical.Conn, error) {
	next := func(tried []*physical.TableNode) *physical.TableNode {
		if n := first; n != nil { // already claimed: dial there before trying any other node
			first = nil
			return n
		}
		if avoid != nil {
			tried = append(tried[:len(tried):len(tried)], avoid) // a copy: tried is TryNodes'
		}
		return m.table.PickInUseForGroup(target, group, tried)
	}
	panicNext := m.table.PanicPickInUse
	switch {
	case avoid != nil:
		panicNext = func([]*physical.TableNode, time.Time) *physical.TableNode { return nil }
	case group != "":
		panicNext = func(tried []*physical.TableNode, now time.Time) *physical.TableNode {
			return m.table.PanicPickInUseFor(group, tried, now)
		}
	}
	p, err := m.cfg.TryNodes(ctx, target, group, next, panicNext, func(n *physical.Node, panicDial bool) (*physical.Conn, error) {
		if p := m.takeFree(ctx, n); p != nil {
			return p, nil
		}
		m.table.Charge(n.TN())
		p, err := m.cfg.Dial(ctx, n, panicDial)
		if err == nil && !m.table.InRotation(n.TN()) {
			p.Close() // not handed out, as a checkout would not hand it out (physical.Conn's checkout rule)
			err = errClosedWhileDialing
		}
		if err == nil && !p.ClaimFresh() {
			err = errClosedWhileDialing // its node went down or was drained meanwhile
		}
		if err != nil {
			m.table.Unclaim(n.TN())
			return nil, err
		}
		return p, nil
	})
	if first != nil { // Config.TryNodes gave up before dialing (Close)
		m.table.Unclaim(first)
	}
	return p, err
}

// errClosedWhileDialing: lbd closed a new physical connection before its first use, because
// its node went down or started draining during the dial; the next node is tried.
var errClosedWhileDialing = errors.New("lbd: the new connection was closed before use: its node went down during the dial")

// takeFree claims an idle physical connection of n that passes go-sql-driver's liveness check
// (the one database/sql runs at checkout in connection mode). One that died while idle is
// closed quietly: it says nothing about the node now. While n is not up, none is handed out
// (as enter rules in connection mode): each one taken is closed.
func (m *Mode) takeFree(ctx context.Context, n *physical.Node) *physical.Conn {
	for {
		p := n.PopFree()
		if p == nil {
			return nil
		}
		if !p.Usable(ctx) {
			p.Close()
			continue
		}
		m.sweepStatements(p)
		return p
	}
}

// GiveBack ends a claim on a physical connection: a healthy one is parked idle on its node for
// the next logical connection, a retired or broken one is closed.
func (m *Mode) GiveBack(p *physical.Conn) {
	m.table.Unclaim(p.Node().TN())
	if !p.IsValid() || m.cfg.Closed() {
		p.Close()
		return
	}
	m.parkFree(p)
}

// TrimIdle closes, at now, the physical connections above the goal that have been parked for
// spareGrace: the surplus a busy spell left closes even when no statement returns to close
// it. The Connector calls it every stall-loop tick; it costs two atomic loads when there is no
// surplus.
func (m *Mode) TrimIdle(now time.Time) {
	if m.table.Total() > m.physicalGoal() {
		m.trim(now.Add(-spareGrace))
	}
}

// spareGrace is how long a physical connection above physicalGoal stays parked before trim
// closes it at a statement's return. Statements that a target concentrates on some nodes (the
// split's writes on the primary) need more connections there than the goal's spares give; the
// grace keeps each node's connections at its demand of the last second instead of closing a
// connection at one return and dialing one at the next (in a benchmark of the split at 16
// workers, 60 dials per thousand statements without it).
const spareGrace = time.Second

// parkFree puts an idle physical connection on its node's free list; then connections above
// the goal that have been parked for spareGrace are closed.
func (m *Mode) parkFree(p *physical.Conn) {
	now := m.cfg.Now()
	p.Node().PushFree(p, now)
	if m.cfg.Closed() { // Close may have emptied the lists just before the push
		m.CloseParked()
		return
	}
	if m.table.Total() > m.physicalGoal() {
		m.trim(now.Add(-spareGrace))
	}
}

// trim closes idle physical connections parked before the given time (any, when it is zero)
// while there are more than the logical connections need: one per logical connection plus one
// spare per up node but one, so that the least busy node usually has an idle connection and a
// statement does not wait for a dial. Surplus goes from the node with the most idle
// connections (the most open breaks a tie), longest idle first: where connections sit idle,
// statements do not need them.
func (m *Mode) trim(parkedBefore time.Time) {
	if !m.trimMu.TryLock() {
		return
	}
	defer m.trimMu.Unlock()
	for m.table.Total() > m.physicalGoal() {
		n := m.idlest()
		if n == nil {
			return
		}
		p := n.PopOldestFree(parkedBefore)
		if p == nil {
			return
		}
		p.ClosePhysical()
	}
}

// physicalGoal is how many physical connections statement mode keeps open: none when
// database/sql holds no logical connection (SetMaxIdleConns(0) means no idle connection).
func (m *Mode) physicalGoal() int64 {
	logical := m.logical.Load()
	if logical <= 0 {
		return 0
	}
	return logical + max(int64(m.table.Ups())-1, 0)
}

// idlest returns the node with the most idle physical connections, the most open among equals,
// or nil when none has one. The caller holds trimMu, which guards the scratch views.
func (m *Mode) idlest() *physical.Node {
	m.views = m.table.Snapshot(m.views[:0])
	defer clear(m.views) // drop node handles until the next trim
	var best *physical.Node
	bestFree, bestOpen := 0, 0
	for _, v := range m.views {
		n := v.Node.Payload()
		free := n.FreeCount()
		if free > bestFree || free == bestFree && free > 0 && v.Open > bestOpen {
			best, bestFree, bestOpen = n, free, v.Open
		}
	}
	return best
}

// CloseParked closes every idle physical connection (at Close: database/sql closes the logical
// connections, and lbd the physical ones they leave).
func (m *Mode) CloseParked() {
	for _, tn := range m.table.Nodes(nil) {
		n := tn.Payload()
		for p := n.PopOldestFree(time.Time{}); p != nil; p = n.PopOldestFree(time.Time{}) {
			p.ClosePhysical()
		}
	}
}
