package lbd

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/internal/connect"
	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/logical"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/ring"
	"github.com/lbd-go/lbd/internal/role"
)

// Connector is a driver.Connector that spreads physical connections over a cluster of
// MySQL-protocol proxies: each new connection goes to the up node with the fewest open
// connections. It probes every node, retires connections that hit fatal errors and evens out
// pooled connections when nodes come and go. database/sql's pool stays in charge of pooling.
//
// Create one with NewConnector and hand it to sql.OpenDB; DB.Close calls Close, which stops
// every background loop. A Connector is safe for concurrent use.
type Connector struct {
	cfg    *Config // what runs: the DSN's settings after options, defaults and clamps; never changed
	roles  roleSettings
	table  *nodeTable
	health *health.Monitor // probes, passive detection, state and role reactions, the retry budget
	dial   *connect.Dialer // connection mode's connect path (statement mode's dials too)
	rebal  *detect.Rebalancer

	nodeTLSName string // fixed TLS server name chosen by the user; "" = each node's own host

	start *sourceStart  // the node source's background start; nil for a static list
	ready chan struct{} // closed once the first node list is in the table; Connect and source updates wait for it

	observers   observers              // AddObserver's list
	transitions *ring.Ring[Transition] // latest state changes, for Stats.Recent
	stmt        *logical.Mode          // statement mode: logical connections, prepared statements, the router
	applyMu     sync.Mutex             // serialises node-list changes (SetNodes and source updates)

	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	stopCtx   context.Context // done at Close: cuts in-flight dials short
	cancelAll context.CancelFunc
	loops     sync.WaitGroup
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// NewConnector parses dsn (see ParseDSN), applies opts and starts the connector's probes and
// rebalancer. Errors: a malformed DSN, a bad lbd parameter or option, an unknown
// exceptionSorter name, a node source's bad parameter, a statusURL in a program that did not
// import package statuscheck. No connection is made here, not even
// to a node source: a source (lbremote, lbetcd, lbdns, WithSource) fetches its first node list
// in the background, Connect waits for it within its context, and Ready waits for it alone.
func NewConnector(dsn string, opts ...Option) (*Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnectorFromConfig(cfg, opts...)
}

// NewConnectorFromConfig is NewConnector for a Config built or changed in code. cfg is not
// modified and may be reused: the options act on the Connector's own copy. Errors: a setting
// out of range (each names its DSN parameter or option), an option's error, an unknown
// exceptionSorter name, a node source's bad parameter.
func NewConnectorFromConfig(cfg *Config, opts ...Option) (*Connector, error) {
	if cfg == nil || cfg.MySQL == nil {
		return nil, errors.New("lbd: nil Config; build one with ParseDSN")
	}
	run := cloneConfig(cfg)
	for _, opt := range opts {
		if err := opt(run); err != nil {
			return nil, err
		}
	}
	if err := run.settle(); err != nil {
		return nil, err
	}
	src := run.source // the Connector owns it from here; see Config.source
	run.source = nil
	if run.Balance == BalanceStatement && autocommitOff(run.MySQL.Params) {
		return nil, errors.New("lbd: balance=statement with autocommit off in the DSN: every physical connection would hold its own open transaction, so a logical connection could never move; use balance=connection, or BEGIN ... COMMIT with autocommit on")
	}

	roles, err := run.parseRoleSettings()
	if err != nil {
		return nil, err // settle checked it; kept for the parsed form
	}
	c := &Connector{
		cfg:         run,
		roles:       roles,
		stop:        make(chan struct{}),
		ready:       make(chan struct{}),
		transitions: ring.New[Transition](recentTransitions),
	}
	table, err := nodetable.New(nodetable.Config[*physical.Node]{
		Target:             roles.target,
		RoleCheck:          roles.check.Query() != "",
		SingleWriter:       run.SingleWriter,
		RecoverCount:       run.RecoverCheckCount,
		FatalThreshold:     run.FatalErrorThreshold,
		FatalWindow:        run.FatalErrorWindow,
		ProbeInterval:      run.CheckHealthInterval,
		RecoverSpacing:     health.RecoverySpacing(run.CheckHealthInterval),
		FlapWindow:         health.FlapWindow,
		Warmup:             run.Warmup,
		SlowStartAfterDown: SlowStartAfterDown,
		MaxEjectionPercent: run.MaxEjectionPercent,
		PanicThreshold:     run.PanicThresholdPercent,
		MinServingReplicas: run.MinServingReplicas,
		BaseEjectionTime:   run.BaseEjectionTime,
		Rand:               run.randN,
		PanicSpacing:       panicSpacing(run.CheckHealthInterval),
		OnTransition:       func(t nodetable.Transition[*physical.Node]) { c.health.OnTransition(t) },
		LeastLoad:          run.BalancePolicy == LeastLoad,
		LocalZone:          run.LocalZone,
		ZoneMinUpPercent:   run.ZoneMinUpPercent,
		Group:              run.Group,
		Isolated:           run.IsolatedGroups,
	})
	if err != nil {
		return nil, fmt.Errorf("lbd: %w", err)
	}
	c.table = table
	trace := statementTrace(run, table)
	hc := health.Config{
		Table:                table,
		Check:                roles.check,
		Target:               roles.target,
		RoleAware:            roles.aware,
		Interval:             run.CheckHealthInterval,
		Timeout:              run.CheckHealthTimeout,
		MaxReplicationLag:    run.MaxReplicationLag,
		FatalWindow:          run.FatalErrorWindow,
		StatusURL:            run.StatusURL,
		Sorter:               run.Sorter,
		RetryReads:           run.RetryReads,
		RetryBudgetPercent:   run.RetryBudgetPercent,
		RetryBudgetPerSecond: run.RetryBudgetPerSecond,
		MaxFailoverWaiters:   run.MaxFailoverWaiters,
		Clock:                run.clock,
		Jitter:               run.jitter,
		Logger:               run.Logger,
		Stop:                 c.stop,
		Closed:               c.closed.Load,
		Refused:              func(addr string, err error) error { return &RefusedError{Addr: addr, Err: err} },
		ShuttingDown:         func(addr string, err error) error { return &ShutdownError{Addr: addr, Err: err} },
		ObserveProbe:         c.observers.probe,
		Record:               recordTo(c.transitions),
	}
	if run.Balance == BalanceConnection {
		// In statement mode the physical connections trace nothing (internal/logical traces
		// the statements) and reads run again through logical.Config.RetryRead.
		hc.Trace = trace
		hc.ReadElsewhere = func(ctx context.Context, avoid *tableNode) (*physical.Conn, error) {
			return c.dial.Avoiding(ctx, avoid)
		}
	} else {
		hc.Tick = func(now time.Time) { c.stmt.TrimIdle(now) } // closes the idle surplus of physical connections
	}
	if c.health, err = health.New(hc); err != nil {
		return nil, err
	}
	c.stopCtx, c.cancelAll = context.WithCancel(context.Background())
	dialTimeout := run.MySQL.Timeout
	if dialTimeout <= 0 {
		dialTimeout = DefaultDialTimeout
	}
	c.dial = connect.New(connect.Config{
		Table:           table,
		Health:          c.health,
		Target:          roles.target,
		Check:           roles.check,
		RoleAware:       roles.aware,
		Group:           run.Group,
		Isolated:        len(run.IsolatedGroups) > 0,
		FailoverTimeout: run.FailoverTimeout,
		DialTimeout:     dialTimeout,
		Now:             run.clock.Now,
		Closed:          c.closed.Load,
		Stop:            c.stopCtx,
		ErrClosed:       ErrClosed,
		Failed:          connectError,
		ObserveDial:     c.observers.dial,
	})
	c.stmt = logical.New(logical.Config{
		Table:             table,
		Connect:           c.dial.Physical,
		TryNodes:          c.dial.TryNodes,
		Dial:              c.dial.Node,
		CountRouted:       countRouted,
		Closed:            c.closed.Load,
		ErrClosed:         ErrClosed,
		Now:               run.clock.Now,
		Logger:            run.Logger,
		Target:            roles.target,
		Split:             run.ReadWriteSplit,
		RoutingHints:      run.RoutingHints,
		PrimaryReads:      run.PrimaryReads,
		ReadAfterWrite:    run.ReadAfterWrite,
		Causal:            run.ReadConsistency == "gtid",
		CausalGalera:      roles.check == role.Galera,
		Refused:           isRefusal,
		RetryRead:         c.health.RetryRead,
		InterpolateParams: run.MySQL.InterpolateParams,
		Trace:             trace,
	})
	c.nodeTLSName = fixedTLSName(c.cfg)
	if err := c.startSource(src); err != nil {
		return nil, err
	}
	if err := c.table.Start(c.roles.seedRoles(c.staticNodes()), c.newNode); err != nil {
		return nil, err
	}
	if err := c.startLoops(); err != nil {
		if c.start != nil {
			c.start.src.Close()
		}
		return nil, err
	}
	c.launchSource()
	return c, nil
}

// fixedTLSName returns the TLS server name the user set explicitly, if any. go-sql-driver fills
// ServerName from the DSN's address when it is a single host:port (one proxy, or one
// config-server or etcd endpoint of a source); a name equal to that host was derived, not chosen,
// and each node then checks its own host instead.
func fixedTLSName(cfg *Config) string {
	t := cfg.MySQL.TLS
	if t == nil || t.InsecureSkipVerify || t.ServerName == "" {
		return ""
	}
	if addrs := append(slices.Clone(cfg.Nodes), cfg.SourceAddrs...); len(addrs) == 1 {
		if host, _, err := net.SplitHostPort(addrs[0]); err == nil && strings.EqualFold(host, t.ServerName) {
			return ""
		}
	}
	return t.ServerName
}

// newNode builds the node the table is adding as tn, with its go-sql-driver connector, dialing
// through the lb network with the node's own address and, with TLS, its own host name. It is
// the table's Build: it runs under the table's mutex and does no I/O.
func (c *Connector) newNode(tn *tableNode) (*physical.Node, error) {
	my, tr, err := c.driverConfig(tn.Addr())
	if err == nil {
		_, err = c.nodeConnector(tn.Addr(), my)
	}
	if err != nil {
		return nil, fmt.Errorf("lbd: node %s: %w", tn.Addr(), err)
	}
	n := &node{c: c}
	c.health.InitNode(&n.Node, tn)
	pn := physical.NewNode(c.table, tn, dialConnector{n}, tr, n)
	n.Attach(pn)
	return pn, nil
}

// node is what the Connector hangs off one proxy beside its physical side (internal/physical)
// and its health (internal/health, embedded: its Hooks are the physical node's): the split's
// counters.
type node struct {
	health.Node
	c *Connector
	// splitReads and splitWrites count the statements readWriteSplit ran here, by class.
	splitReads, splitWrites atomic.Uint64
}

// nodeTable is the Connector's node table, and tableNode a node's handle in it; the payload is
// the physical node, whose Hooks is the root's node.
type (
	nodeTable = nodetable.Table[*physical.Node]
	tableNode = nodetable.Node[*physical.Node]
)

// nodeOf returns the root's side of a physical node.
func nodeOf(pn *physical.Node) *node { return pn.Hooks().(*node) }

// countRouted counts a statement of the read/write split on n, as a read or a write.
func countRouted(n *physical.Node, write bool) {
	if write {
		nodeOf(n).splitWrites.Add(1)
	} else {
		nodeOf(n).splitReads.Add(1)
	}
}

// dialConnector is one node's go-sql-driver connector (with the credentials provider, when
// one is set: Connector.nodeConnector), built afresh for each dial from the Connector's config
// (nodeConfig) rather than kept: a kept one costs about 400 bytes a node (the config's copy and
// its connection attributes), which a fleet of 50 000 mostly idle or down nodes would pay for
// nothing, while one dial's handshake allocates far more.
type dialConnector struct{ n *node }

// Connect implements driver.Connector. newNode checked that the config builds.
func (dc dialConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c := dc.n.c
	addr := dc.n.Addr()
	my, _, err := c.driverConfig(addr)
	var connector driver.Connector
	if err == nil {
		connector, err = c.nodeConnector(addr, my)
	}
	if err != nil {
		return nil, fmt.Errorf("lbd: node %s: %w", addr, err)
	}
	return connector.Connect(ctx)
}

// Driver implements driver.Connector.
func (dialConnector) Driver() driver.Driver { return &mysql.MySQLDriver{} }

// driverConfig is the go-sql-driver config for the node at addr with TLS and compression
// taken out (go-sql-driver negotiates neither), and the physical.Transport that carries them
// beneath it instead, so that the protocol guard reads plain packets on every transport.
func (c *Connector) driverConfig(addr string) (*mysql.Config, physical.Transport, error) {
	my := c.nodeConfig(addr)
	tr, err := physical.NewTransport(my)
	return my, tr, err
}

// nodeConfig is the go-sql-driver config for one node.
func (c *Connector) nodeConfig(addr string) *mysql.Config {
	my := c.cfg.MySQL.Clone()
	my.Net, my.Addr = Network, addr
	if my.TLS != nil && !my.TLS.InsecureSkipVerify {
		if c.nodeTLSName != "" {
			my.TLS.ServerName = c.nodeTLSName
		} else {
			host, _, _ := net.SplitHostPort(addr)
			my.TLS.ServerName = host
		}
	}
	return my
}

// Connect implements driver.Connector. It waits for a node source's first node list (as Ready
// does). In connection mode it then dials the up node with the fewest open connections, and the
// next best when that dial fails, each within the DSN's timeout (DefaultDialTimeout without
// one); in statement mode it returns a logical connection. When no node is up it still tries
// the down node that failed least recently (panic mode, see the package documentation).
// Errors:
//   - the first node's error when every proxy would answer the same (access denied 1044, 1045,
//     1698; unknown database 1049; unknown system variable 1193): no other node is tried and
//     none is blocked;
//   - *ConnectError naming every node when none gave a connection (AllDown when none was up);
//   - the caller's context error when ctx ends first, and ErrClosed after Close.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := c.Ready(ctx); err != nil {
		return nil, err
	}
	if c.cfg.Balance == BalanceStatement {
		return c.stmt.Connect(ctx)
	}
	p, err := c.dial.Physical(ctx)
	if err != nil {
		return nil, err // not p: a nil *physical.Conn is not a nil driver.Conn
	}
	return p, nil
}

// DefaultDialTimeout bounds one node's dial and handshake when the DSN sets no timeout, so a
// proxy that accepts TCP but never greets cannot hold a Connect forever.
const DefaultDialTimeout = 10 * time.Second

// Driver implements driver.Connector.
func (c *Connector) Driver() driver.Driver { return Driver{} }

// Config returns a copy of the configuration the Connector runs with: the DSN's settings after
// the options, with the defaults filled in (Logger, Sorter, StatsInterval) and
// CheckHealthTimeout capped at CheckHealthInterval. The node list is the one the DSN gave,
// empty for a node source's network (Stats lists the nodes the Connector has); a source given
// with WithSource belongs to the Connector and is not in the copy.
func (c *Connector) Config() *Config { return cloneConfig(c.cfg) }

// Close stops the node source, the probes, the rebalancer and the stats logger and waits for
// them. database/sql
// calls it from DB.Close. Open connections are closed by database/sql, not here. Close is
// idempotent and always returns nil.
func (c *Connector) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		c.cancelAll()
		c.stmt.CloseParked()
		c.stopSource()
		c.rebal.Close()
		c.health.Close()
		c.loops.Wait()
	})
	return nil
}

// Open opens a *sql.DB over an lbd DSN: sql.OpenDB(NewConnector(dsn)). Like sql.Open it makes
// no connection, not even to a node source; use PingContext to check the cluster.
func Open(dsn string, opts ...Option) (*sql.DB, error) {
	c, err := NewConnector(dsn, opts...)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// DriverName is the name lbd registers with database/sql: sql.Open("lbd", dsn).
const DriverName = "lbd"

func init() {
	sql.Register(DriverName, Driver{})
}

// Driver is lbd's database/sql driver. database/sql uses OpenConnector, so each sql.Open gets
// one Connector, closed by DB.Close.
type Driver struct{}

var _ driver.DriverContext = Driver{}

// OpenConnector implements driver.DriverContext: NewConnector(dsn).
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	return NewConnector(dsn)
}

// Open implements driver.Driver. database/sql never calls it for lbd (it prefers
// OpenConnector); a single connection without a Connector could not be balanced, so it fails.
func (Driver) Open(string) (driver.Conn, error) {
	return nil, errors.New(`lbd: Driver.Open is not supported: use sql.Open("lbd", dsn), lbd.Open or lbd.NewConnector`)
}

// Panic mode's rules are internal/nodetable's (see its panic.go); the Connector sets how many
// panic-mode dials one Connect makes and how far apart one node's dials start.

// panicSpacing is the least time between two panic-mode dials of one node: a twentieth of the
// probe interval, within [10 ms, 1 s] (250 ms at the default 5 s interval), so that a proxy
// that comes back is used within a fraction of a probe interval, and a dead one costs a
// Connector at most a few dials per second.
func panicSpacing(interval time.Duration) time.Duration {
	return min(max(interval/20, 10*time.Millisecond), time.Second)
}
