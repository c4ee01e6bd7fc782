package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/budget"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/statushook"
)

// Config is what the root hands per-node health: the node table, the settings the checks and
// reactions go by, and functions for what only the Connector can do (dial elsewhere, build its
// public errors, record and observe). Durations are as the Connector's Config gives them.
type Config struct {
	Table *physical.Table

	Check     role.Check  // the role check run on each probe (role.None: none)
	Target    role.Target // which roles new connections may go to
	RoleAware bool        // the Connector routes by role: a role check, a target other than any, or the split

	Interval          time.Duration // checkHealthInterval: between two probes of an up node
	Timeout           time.Duration // checkHealthTimeout: bounds one probe
	MaxReplicationLag time.Duration // maxReplicationLagSeconds; 0 checks no lag
	FatalWindow       time.Duration // fatalErrorWindow: how long NodeOfError remembers a fatal error

	// StatusURL is the statusURL template, "" for none. With one, New needs a status check
	// registered through internal/statushook (package statuscheck), or fails with
	// ErrNoStatusCheck.
	StatusURL string

	Sorter exception.Sorter // judges which errors are fatal to a connection

	RetryReads           bool // retryReads: reads and prepares a node failed run again
	RetryBudgetPercent   int  // retryBudgetPercent
	RetryBudgetPerSecond int  // retryBudgetPerSecond
	MaxFailoverWaiters   int  // how many Connects may wait for a node of their target at once

	Clock  clock.Clock
	Jitter func(max time.Duration) time.Duration // staggers the first probes; in [0, max)
	Logger *slog.Logger

	// Trace is the statement tracing the nodes' physical connections do (Hooks.Trace); nil
	// traces nothing there.
	Trace *physical.Trace

	// Stop is closed when the Connector closes: the loops end and waits return. Closed
	// reports the same without a channel.
	Stop   <-chan struct{}
	Closed func() bool

	// ReadElsewhere makes a connection for a read to run again, on any up node but avoid (on
	// avoid when no other is up), closed with the read's rows; nil runs no read again through
	// Hooks.RetryRead.
	ReadElsewhere func(ctx context.Context, avoid *physical.TableNode) (*physical.Conn, error)
	// Refused and ShuttingDown build the errors of a statement a node refused before running
	// any of it, as not the primary or while shutting down: the root's RefusedError and
	// ShutdownError, which wrap err and driver.ErrBadConn.
	Refused, ShuttingDown func(addr string, err error) error
	// ObserveProbe is told every probe's duration and verdict.
	ObserveProbe func(addr string, took time.Duration, err error)
	// Record is told every transition of the node table as it is made (before its log line
	// and its reactions), with the Connector's time.
	Record func(at time.Time, t nodetable.Transition[*physical.Node])
	// Tick, when set, runs on the stall loop's goroutine every stallTick, after the watches.
	Tick func(now time.Time)
}

// Monitor is the per-node health of one Connector: its prober and the loops of passive
// detection and transitions, the retry budget, the failover waiters, and every node's Node.
type Monitor struct {
	cfg    Config
	table  *physical.Table
	status statushook.Get // the statusURL checks' client; nil without statusURL
	prober *detect.Prober // nil before Start

	topo        topologySignal // wakes Connects waiting for a node their target accepts
	lastRecheck atomic.Int64   // when roles were last checked again out of turn (unix nanoseconds)
	waiting     atomic.Int64   // Connects waiting for a node their target accepts (AwaitTarget)
	waitRefused atomic.Uint64  // Connects refused because MaxFailoverWaiters already waited

	recent    recentFatal  // latest fatal errors, for NodeOfError
	stallBase atomic.Int64 // the stall threshold now, in nanoseconds: a confirming probe's deadline
	allStuck  atomic.Bool  // stallWatch.allStuck at the stall loop's last tick

	budget  *budget.Budget // bounds what lbd runs again on its own (AllowRetry)
	retried retryCounts

	trq   transitionQueue // state changes on their way to transitionLoop
	loops sync.WaitGroup
}

// New builds the health of a Connector from cfg; nothing runs until Start. Its one error is
// ErrNoStatusCheck.
func New(cfg Config) (*Monitor, error) {
	m := &Monitor{
		cfg:    cfg,
		table:  cfg.Table,
		topo:   topologySignal{ch: make(chan struct{})},
		budget: budget.New(cfg.RetryBudgetPercent, cfg.RetryBudgetPerSecond),
		trq:    transitionQueue{wake: make(chan struct{}, 1)},
	}
	if cfg.StatusURL != "" {
		get := statushook.Registered()
		if get == nil {
			return nil, ErrNoStatusCheck
		}
		m.status = get(cfg.Timeout)
	}
	m.stallBase.Store(int64(StallFloor))
	return m, nil
}

// Start starts the prober with every node of the table in it, the transition loop and the
// stall loop. They run until Config.Stop is closed; Close waits for them.
func (m *Monitor) Start() error {
	var err error
	m.prober, err = detect.NewProber(detect.ProberConfig{
		Interval: m.cfg.Interval,
		Timeout:  m.cfg.Timeout,
		Clock:    m.cfg.Clock,
		Jitter:   m.cfg.Jitter,
		Report:   m.report,
	})
	if err != nil {
		return fmt.Errorf("lbd: %w", err)
	}
	for _, tn := range m.table.Nodes(nil) {
		at(tn).startProbing()
	}
	m.loops.Add(2)
	go m.transitionLoop()
	go m.watchStalls()
	return nil
}

// Close stops the prober and waits for it and for the loops, which end once Config.Stop is
// closed.
func (m *Monitor) Close() {
	if m.prober != nil {
		m.prober.Close()
	}
	m.loops.Wait()
}

// Watch starts probing a node added to the table at run time, at once.
func (m *Monitor) Watch(tn *physical.TableNode) {
	n := at(tn)
	n.startProbing()
	n.triggerProbe()
}

// Node is what health hangs off one proxy: the role check's last error, the replica lag, the
// probe target and the counters of the passive watches. It is the node's physical.Hooks, so the
// physical connections reach health through it; the root may wrap it in a Hooks of its own
// that embeds it (NodeOf finds it there).
type Node struct {
	m    *Monitor
	tn   *physical.TableNode
	phys *physical.Node

	// roleErr is the latest failed role check's error, nil once one answered; kept for the
	// error of a Connect that found no node of its target's roles.
	roleErr atomic.Pointer[error]
	// lag is the replica's latest lag behind its primary, nanoseconds (maxReplicationLagSeconds).
	lag atomic.Int64

	// probe is the node's current prober target; nil while the node is not probed (draining).
	probe atomic.Pointer[nodeProbe]
	// probeConns counts the probe connections open to the node (one, or briefly two while an
	// old probe target finishes): connections the proxy sees that Open does not count.
	probeConns atomic.Int32
	// earlyProbe is when the traffic last brought the probe forward, Unix nanoseconds
	// (mayProbeEarly); downAt is when the node last went down (queueTransition), for
	// nodeProbe.NextProbeIn.
	earlyProbe, downAt atomic.Int64
	// answeredErrors counts statements the server answered with an error that may be this
	// node's own (noteStatementError); errWatch is the error-rate loop's view of it.
	answeredErrors atomic.Uint64
	errWatch       nodeErrWatch
}

// InitNode makes n, a zero Node (most often embedded in the root's own node, so that one
// allocation holds both), the health side of the node the table is adding as tn; Attach then
// gives it its physical side. It does no I/O (it runs in the table's Build, under the table's
// mutex).
func (m *Monitor) InitNode(n *Node, tn *physical.TableNode) {
	n.m, n.tn = m, tn
}

// Attach gives n its physical node, built with n (or a Hooks embedding it) as its hooks.
func (n *Node) Attach(pn *physical.Node) { n.phys = pn }

// Addr is the node's host:port.
func (n *Node) Addr() string { return n.tn.Addr() }

// RoleErr is the latest failed role or lag check's error; nil once one answered, or when none
// runs.
func (n *Node) RoleErr() error {
	if e := n.roleErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Lag is the replica's latest lag behind its primary (0 when not checked).
func (n *Node) Lag() time.Duration { return time.Duration(n.lag.Load()) }

// ProbeConns counts the probe connections open to the node.
func (n *Node) ProbeConns() int { return int(n.probeConns.Load()) }

// holder is a physical node's hooks: a *Node, or a value that embeds one.
type holder interface{ healthNode() *Node }

func (n *Node) healthNode() *Node { return n }

// NodeOf returns the health side of a physical node.
func NodeOf(pn *physical.Node) *Node { return pn.Hooks().(holder).healthNode() }

// at returns the health side of the node tn.
func at(tn *physical.TableNode) *Node { return NodeOf(tn.Payload()) }

// StatementError implements physical.Hooks: a node announcing its shutdown is drained; a
// refusal by a node that is no longer the primary (exception.NotPrimary, or a 1792 in a
// transaction the caller did not make read-only) is a role change; any other error is shown to
// passive outlier detection and to the exception sorter.
func (n *Node) StatementError(p *physical.Conn, err error, nothingRan bool) error {
	m := n.m
	if exception.ServerShutdown(err) {
		return m.onShutdown(p, err, nothingRan)
	}
	if m.cfg.RoleAware && (exception.NotPrimary(err) || exception.ReadOnlyTransaction(err) && !p.CallerReadOnly()) {
		return m.onNotPrimary(p, err, nothingRan)
	}
	n.noteStatementError(err)
	m.onStatementError(p, err)
	m.onConnError(p, err)
	return err
}

// Broken implements physical.Hooks: a protocol violation is fatal to the connection and counts
// against the node.
func (n *Node) Broken(p *physical.Conn, err error) { n.m.onConnError(p, err) }

// Farewell implements physical.Hooks: a server that closed an idle connection saying it shuts
// down (1053) is drained; any other parting word (a wait_timeout) says nothing about the node.
func (n *Node) Farewell(_ *physical.Conn, err error) {
	if exception.ServerShutdown(err) {
		n.m.table.Shutdown(n.tn, err)
	}
}

// CallerEnded implements physical.Hooks: a cancellation says nothing about the node; a passed
// deadline does only when the node has been silent for long (callerDeadline).
func (n *Node) CallerEnded(_ *physical.Conn, cause error) {
	if cause == context.DeadlineExceeded {
		n.m.callerDeadline(n)
	}
}

// Trace implements physical.Hooks: Config.Trace.
func (n *Node) Trace() *physical.Trace { return n.m.cfg.Trace }

// DialFailed reacts to a failed dial of an application connection to tn (whose count the dial
// already gave back): a dial the caller's deadline cut may be a hung proxy, and brings its probe
// forward; an answer every proxy would give (access denied, no credentials) counts without
// blocking the node; a shutdown drains it; any other failure counts toward taking it down and
// brings its probe forward. After Close, nothing.
func (m *Monitor) DialFailed(ctx context.Context, tn *physical.TableNode, err error) {
	n := at(tn)
	switch {
	case m.cfg.Closed():
	case CallerGaveUp(ctx):
		// That says nothing certain about the node, but a dial still stalled when the caller's
		// deadline passed may be a hung proxy: have it probed now rather than at its turn.
		if ctx.Err() != context.Canceled {
			n.probeForTraffic()
		}
	case exception.SameOnEveryNode(err), errors.Is(err, physical.ErrNoCredentials):
		m.table.DialRefused(tn)
	case exception.ServerShutdown(err):
		m.table.Shutdown(tn, err) // the next node is tried at once; this one is not dialed again
		m.table.Dialed(tn, err)
	default:
		m.table.Dialed(tn, err)
		n.probeForTraffic()
	}
}

// CallerGaveUp reports whether the caller's context has ended or its deadline has passed. The
// net package can report "i/o timeout" for the caller's deadline a moment before the context
// itself says so, and that must not be blamed on the node.
func CallerGaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}
