// Package connect is connection mode's connect path: it picks a node for each new physical
// connection, dials it within the dial timeout, moves on to the next best node when a dial
// fails, dials nodes marked down in panic mode when none is up, waits through a switchover for
// a node of the target's roles, and says why when every node failed. Statement mode reaches
// the same path through internal/logical's Config (TryNodes and Dial).
//
// Imports run one way (internal/testkit's TestImportsRunOneWay checks it): the root package lbd
// → internal/connect → internal/logical, internal/health and internal/rebalance →
// internal/physical → ... This package imports neither the root nor internal/logical: the
// root builds it with a Config of values and functions, and it never holds the Connector.
package connect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// Config is what the connect path needs of the Connector.
type Config struct {
	Table     *physical.Table
	Health    *health.Monitor // the retry budget, the topology's changes, dial failures
	Target    role.Target     // the Connector's target
	Check     role.Check      // the role check (roleCheck), for the all-failed error
	RoleAware bool            // the Connector routes by role: a switchover is waited through
	// Group is the Connector's group (WithGroup), Isolated whether it keeps out of isolated
	// groups (isolatedGroups): the picks keep to a group, and a switchover is waited through.
	Group    string
	Isolated bool
	// FailoverTimeout bounds the wait for a node of the target's roles; 0: none.
	FailoverTimeout time.Duration
	// DialTimeout bounds one dial and handshake (the DSN's timeout, or the root's
	// DefaultDialTimeout); a panic-mode dial is bounded by PanicDialTimeout too.
	DialTimeout time.Duration
	Now         func() time.Time // the Connector's clock, for panic mode's spacing
	Closed      func() bool      // the Connector is closed
	Stop        context.Context  // done at Close: cuts dials in flight short
	ErrClosed   error            // returned once Closed
	// Failed builds the all-failed error (the root's *ConnectError) from what the path saw.
	Failed func(Failed) error
	// ObserveDial returns the function that hears of a dial (addr, how long, its error), or nil
	// when nobody listens: then dials are not timed.
	ObserveDial func() func(addr string, took time.Duration, err error)
}

// Failure is one node's entry in the all-failed error (the root's NodeError).
type Failure struct {
	Addr       string
	State      nodetable.State
	Role       nodes.Role
	RoleSource string // "role check NAME" or "node list"; "" when the role is unknown
	Err        error
}

// Failed is what the all-failed error says (the root's ConnectError's fields).
type Failed struct {
	Nodes             []Failure // tried ones first, in the order tried
	AllDown, NoTarget bool
	Target            role.Target
	RoleCheck         bool
	Group             string
	GroupNodes        int
	Isolated          bool
}

// Dialer is the connect path of one Connector.
type Dialer struct{ cfg Config }

// New returns the connect path over cfg.
func New(cfg Config) *Dialer { return &Dialer{cfg: cfg} }

// PanicDialTimeout bounds a panic-mode dial (no node up): a Connect while everything is down
// fails within about a second rather than the whole dial timeout per node it tries, and a node
// that needs longer to greet comes back through its probes instead.
const PanicDialTimeout = time.Second

// PanicDialsPerConnect bounds the panic-mode dials one Connect makes: the least recently failed
// node, and one more should that dial fail.
const PanicDialsPerConnect = 2

// ErrNoOtherNode: a read to run again found no node up.
var ErrNoOtherNode = errors.New("lbd: no node is up to run the read again")

// Physical dials a physical connection on the up node with the fewest open connections,
// moving on to the next best when a dial fails, and in panic mode when none is up.
func (d *Dialer) Physical(ctx context.Context) (*physical.Conn, error) {
	t := d.cfg.Table
	return d.TryNodes(ctx, d.cfg.Target, "", t.Pick, t.PanicPick, func(n *physical.Node, panicDial bool) (*physical.Conn, error) {
		return d.Node(ctx, n, panicDial)
	})
}

// Avoiding is Physical on any up node but avoid, or on avoid itself when no
// other is up (a new connection: never the one that failed), with no panic-mode dial and no
// wait for a switchover. It fails with ErrNoOtherNode when no node is up.
func (d *Dialer) Avoiding(ctx context.Context, avoid *physical.TableNode) (*physical.Conn, error) {
	first := d.cfg.Table.Pick([]*physical.TableNode{avoid})
	if first == nil {
		first = d.cfg.Table.Pick(nil)
	}
	if first == nil {
		return nil, ErrNoOtherNode
	}
	next := func(tried []*physical.TableNode) *physical.TableNode {
		if n := first; n != nil { // picked, and counted, above
			first = nil
			return n
		}
		return d.cfg.Table.Pick(append(tried[:len(tried):len(tried)], avoid))
	}
	noPanic := func([]*physical.TableNode, time.Time) *physical.TableNode { return nil }
	p, err := d.TryNodes(ctx, d.cfg.Target, "", next, noPanic, func(n *physical.Node, panicDial bool) (*physical.Conn, error) {
		return d.Node(ctx, n, panicDial)
	})
	if first != nil { // TryNodes gave up before dialing it (Close)
		d.cfg.Table.Release(first)
	}
	return p, err
}

// TryNodes asks next for a node (it is told the nodes already tried) and use for a connection
// on it, until one is made, every node has failed, the caller gives up or the Connector closes.
// When next has no node left, it asks panicNext for up to PanicDialsPerConnect down nodes
// (panic mode: none is up). It applies Connect's error rules; target and group ("": the
// default picks) are what next picks for, named when no up node serves them.
func (d *Dialer) TryNodes(ctx context.Context, target role.Target, group string, next func(tried []*physical.TableNode) *physical.TableNode,
	panicNext func(tried []*physical.TableNode, now time.Time) *physical.TableNode, use func(n *physical.Node, panicDial bool) (*physical.Conn, error)) (*physical.Conn, error) {
	if d.cfg.Closed() {
		return nil, d.cfg.ErrClosed
	}
	if err := checkChosenGroup(group); err != nil {
		return nil, err
	}
	var triedBuf [4]*physical.TableNode
	tried := triedBuf[:0]
	var failures []Failure
	var failover time.Time // when waiting for a node of the target's roles ends; zero before the first wait
	upTried, panics := 0, 0
	for {
		changed := d.cfg.Health.Topology() // before the pick: a change after it must still wake the wait
		tn, panicDial := next(tried), false
		if tn == nil && panics < PanicDialsPerConnect {
			// A dial to a node marked down is a retry: the budget is asked first, since
			// panicNext claims the node it picks, and its retry is given back when no node is
			// due for one.
			if !d.cfg.Health.AllowRetry(health.PanicDial) {
				return nil, fmt.Errorf("%w: no node is up, and a dial to one marked down would exceed it (retryBudgetPercent, retryBudgetPerSecond): %w", health.ErrRetryBudget, d.failed(failures, upTried == 0, target, group))
			}
			tn, panicDial = panicNext(tried, d.cfg.Now()), true
			panics++
			if tn == nil {
				d.cfg.Health.RefundRetry(health.PanicDial)
			}
		}
		if tn == nil {
			// Nodes are up but none is of a role the target accepts (a switchover, or role
			// checks not answered yet): wait for one rather than fail.
			if len(tried) == 0 && d.cfg.Table.UpNodes() > 0 && (d.cfg.RoleAware || d.grouped(group)) && d.cfg.FailoverTimeout > 0 {
				if failover.IsZero() {
					failover = time.Now().Add(d.cfg.FailoverTimeout)
				}
				ok, err := d.cfg.Health.AwaitTarget(ctx, target, failover, changed)
				if err != nil {
					return nil, err
				}
				if ok {
					continue
				}
			}
			break
		}
		tried = append(tried, tn)
		n := tn.Payload()
		p, err := use(n, panicDial)
		state := nodetable.Up
		if panicDial {
			d.cfg.Table.PanicDialed(tn, err)
			state = nodetable.Down
		} else {
			upTried++
		}
		if err == nil {
			return p, nil
		}
		if exception.SameOnEveryNode(err) || errors.Is(err, physical.ErrNoCredentials) {
			return nil, err
		}
		failures = append(failures, Failure{Addr: n.Addr(), State: state, Err: err})
		if health.CallerGaveUp(ctx) {
			cause := ctx.Err()
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			return nil, fmt.Errorf("lbd: %w (%s)", cause, d.cfg.Failed(Failed{Nodes: failures}).Error())
		}
		if d.cfg.Closed() {
			return nil, d.cfg.ErrClosed
		}
	}
	return nil, d.failed(failures, upTried == 0, target, group)
}

// failed builds the all-failed error: the nodes tried, then every other node with its
// last failure (for a node up but of a role target does not accept, the role check's latest
// error, if any). allDown says that no node was up to try; group is the group picked for.
func (d *Dialer) failed(tried []Failure, allDown bool, target role.Target, group string) error {
	seen := make(map[string]bool, len(tried))
	for _, t := range tried {
		seen[t.Addr] = true
	}
	roleSource := "node list"
	if d.cfg.Check.Query() != "" || d.cfg.Check.Fixed() != nodes.RoleUnknown {
		roleSource = "role check " + d.cfg.Check.Name()
	}
	for _, v := range d.cfg.Table.Snapshot(nil) {
		if seen[v.Addr()] {
			continue
		}
		ne := Failure{Addr: v.Addr(), State: v.State, Role: v.Role, Err: v.LastErr}
		if v.Role != nodes.RoleUnknown {
			ne.RoleSource = roleSource
		}
		if ne.Err == nil {
			ne.Err = health.NodeOf(v.Node.Payload()).RoleErr()
		}
		tried = append(tried, ne)
	}
	if allDown && d.cfg.Table.UpNodes() > 0 && (d.cfg.RoleAware || d.grouped(group)) {
		return d.cfg.Failed(d.withGroup(Failed{NoTarget: true, Target: target, RoleCheck: d.cfg.Check.Query() != "", Nodes: tried}, group))
	}
	return d.cfg.Failed(d.withGroup(Failed{AllDown: allDown, Nodes: tried}, group))
}

// Node makes one physical connection to n, whose count the pick already raised. The
// dial and handshake are bounded by Config.DialTimeout (PanicDialTimeout too in panic mode) and
// cut short when the Connector closes. A panic-mode dial (panicDial) that succeeds brings its
// node up before the connection is adopted, so the connection is not retired at once.
func (d *Dialer) Node(ctx context.Context, pn *physical.Node, panicDial bool) (*physical.Conn, error) {
	tn, addr := pn.TN(), pn.Addr()
	if !panicDial && !d.cfg.Table.IsUp(tn) && !d.cfg.Closed() && !d.cfg.Health.AllowRetry(health.PanicDial) {
		// A node below the panic threshold (down, served while too few are up) is dialed as
		// panic mode dials one: a retry, from the budget.
		d.cfg.Table.Release(tn)
		return nil, fmt.Errorf("%w: %s is down (served while fewer than panicThresholdPercent of the nodes are up), and dialing it would exceed the budget", health.ErrRetryBudget, addr)
	}
	timeout := d.cfg.DialTimeout
	if panicDial {
		timeout = min(timeout, PanicDialTimeout)
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(d.cfg.Stop, cancel)()
	var began time.Time
	obs := d.cfg.ObserveDial()
	if obs != nil {
		began = time.Now()
	}
	dc, sock, err := physical.Connect(dctx, pn, true)
	if obs != nil {
		obs(addr, time.Since(began), err)
	}
	if err == nil {
		if mc, ok := dc.(physical.FullConn); ok {
			if panicDial {
				d.cfg.Table.PanicDialed(tn, nil)
			}
			return pn.Adopt(mc, sock), nil
		}
		dc.Close()
		err = fmt.Errorf("lbd: go-sql-driver returned an unexpected connection type %T", dc)
	}
	if sock != nil {
		sock.Close() // gives the count back once, even if go-sql-driver closed it already
	} else {
		d.cfg.Table.Release(tn)
	}
	d.cfg.Health.DialFailed(ctx, tn, err)
	return nil, err
}

// grouped reports whether a pick for group ("": the default picks) keeps to a group of nodes:
// a group chosen, the Connector's group, or isolated groups kept out. A Connect that finds no
// node then waits for one, as for a role.
func (d *Dialer) grouped(group string) bool {
	return group != "" || d.cfg.Group != "" || d.cfg.Isolated
}

// checkChosenGroup fails at once a pick for a group name no node can have (InGroup with a
// name nodes.CheckGroup refuses), rather than waiting for one.
func checkChosenGroup(group string) error {
	if group == "" {
		return nil
	}
	if err := nodes.CheckGroup(group); err != nil {
		return fmt.Errorf("lbd: InGroup: %w", err)
	}
	return nil
}

// withGroup completes f with the group the picks kept to (see the root's ConnectError.Group).
func (d *Dialer) withGroup(f Failed, group string) Failed {
	if group == "" {
		group = d.cfg.Group
	}
	switch {
	case group != "":
		f.Group = group
		f.GroupNodes, _ = d.cfg.Table.Groups(group)
	case d.cfg.Isolated:
		f.Isolated = true
		f.GroupNodes, _ = d.cfg.Table.Groups("")
	}
	return f
}
