// Package lbdotel reports an lbd Connector's per-node metrics through an OpenTelemetry
// MeterProvider the application passes (Register), and, per statement, a client span and a
// db.client.operation.duration measurement naming the proxy that ran it
// (WithStatementTelemetry), following the database client semantic conventions (semconv
// v1.43.0), in a module of its own so that only an application that imports it pays for the
// OpenTelemetry API. The tracing API it adds comes with the OpenTelemetry API module itself:
// importing lbdotel brings no module a metrics-only user did not already have.
//
// Each node is a connection pool of its own in the conventions' terms: its
// db.client.connection.pool.name is "host:port/database" (the conventions' pattern
// server.address:server.port/db.namespace, or Options.PoolName), and every data point also
// carries server.address and server.port. The instruments:
//
//	db.client.connection.count        {connection}  observable up-down counter, db.client.connection.state idle|used
//	db.client.connection.create_time  s             histogram: each dial and MySQL handshake, failed ones included
//	lbd.node.state                    {node}        observable gauge: 1 for the node's lbd.node.state (up, down, draining), 0 for the others
//	lbd.node.role                     {node}        observable gauge: 1 for the node's lbd.node.role (nodes.Role: unknown, primary, replica, standby), 0 for the others
//	lbd.node.group                    {node}        observable gauge: 1 for each lbd.node.group the node belongs to (lbd.InGroup); none for a node of no group
//	lbd.node.weight                   1             observable gauge: the node's weight from its source or the DSN
//	lbd.node.warmup                   1             observable gauge: slow-start progress, 0 as the node comes up to 1 once warm
//	lbd.node.weight.effective         1             observable gauge: what new connections go by, weight × max(warm-up, 0.1)
//	lbd.node.dials                    {dial}        observable counter: successful dials
//	lbd.node.dial.failures            {dial}        observable counter: failed dials
//	lbd.node.connection.retirements   {connection}  observable counter, lbd.retire.reason (lbd.RetireReason)
//	lbd.node.fatal_errors             {error}       observable counter: errors judged fatal to a connection
//	lbd.node.passive_signals          {signal}      observable counter: what the application's statements saw against the node
//	lbd.node.probes                   {probe}       observable counter
//	lbd.node.probe.failures           {probe}       observable counter
//	lbd.node.transitions              {transition}  observable counter, lbd.transition.cause (lbd.TransitionCause)
//	lbd.node.probe.duration           s             histogram: each health probe, failed ones included
//
// Observable instruments read one Stats snapshot per collection; the histograms are fed by an
// lbd.Observer (one call per probe and per dial, nothing per statement). Per-statement
// telemetry is WithStatementTelemetry's, an option of the Connector.
//
// The role is reported as the state is, one data point per role with 1 for the current one,
// rather than as an attribute of every instrument: a switchover then changes two values and
// ends no time series (an exporter keyed by attributes, Prometheus' among them, would
// otherwise start every series of the node again under the new role).
package lbdotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/nodes"
)

// ScopeName is the instrumentation scope of the Meter lbdotel takes from the MeterProvider.
const ScopeName = "github.com/lbd-go/lbd/metrics/otel"

// Attribute keys of lbd's own instruments.
const (
	NodeStateKey       = attribute.Key("lbd.node.state")
	NodeRoleKey        = attribute.Key("lbd.node.role")
	NodeGroupKey       = attribute.Key("lbd.node.group")
	RetireReasonKey    = attribute.Key("lbd.retire.reason")
	TransitionCauseKey = attribute.Key("lbd.transition.cause")
)

// Options configures Register; the zero value takes the defaults.
type Options struct {
	// PoolName names a node's pool (db.client.connection.pool.name) from its "host:port".
	// Default: "host:port/database", database being the DSN's (none: "host:port").
	PoolName func(addr string) string
	// LatencyBuckets are the histograms' explicit bucket boundaries in seconds. Default
	// DefaultLatencyBuckets.
	LatencyBuckets []float64
}

// DefaultLatencyBuckets are the default histogram boundaries in seconds: 0.5 ms to 10 s.
var DefaultLatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics is one Connector's registration with a Meter. Close ends it.
type Metrics struct {
	c        *lbd.Connector
	poolName func(string) string
	reg      metric.Registration
	remove   func()

	closeOnce sync.Once
	closeErr  error

	count                                     dbconv.ClientConnectionCountObservable
	state, dials, dialFailures, retired       metric.Int64Observable
	fatal, probes, probeFailures, transitions metric.Int64Observable
	role, weight, passive, group              metric.Int64Observable
	warmup, effectiveWeight                   metric.Float64Observable
	latency, speed                            metric.Float64Observable
	createTime                                dbconv.ClientConnectionCreateTime
	probeDuration                             metric.Float64Histogram
}

// Register creates the instruments on mp's Meter for ScopeName and reports c's nodes to them
// until Close. Errors: a nil Connector or MeterProvider, or the Meter refusing an instrument
// or the callback.
func Register(c *lbd.Connector, mp metric.MeterProvider, opts Options) (*Metrics, error) {
	if c == nil || mp == nil {
		return nil, errors.New("lbdotel: Register needs a Connector and a MeterProvider")
	}
	m := &Metrics{c: c, poolName: opts.PoolName}
	if m.poolName == nil {
		db := c.Config().MySQL.DBName
		m.poolName = func(addr string) string {
			if db == "" {
				return addr
			}
			return addr + "/" + db
		}
	}
	buckets := opts.LatencyBuckets
	if buckets == nil {
		buckets = DefaultLatencyBuckets
	}
	meter := mp.Meter(ScopeName)
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	m.count, err = dbconv.NewClientConnectionCountObservable(meter)
	check(err)
	counter := func(name, unit, desc string) metric.Int64Observable {
		i, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return i
	}
	m.state, err = meter.Int64ObservableGauge("lbd.node.state", metric.WithUnit("{node}"),
		metric.WithDescription("1 for the node's current state (lbd.node.state up, down or draining), 0 for the others."))
	check(err)
	m.role, err = meter.Int64ObservableGauge("lbd.node.role", metric.WithUnit("{node}"),
		metric.WithDescription("1 for the node's current role (lbd.node.role unknown, primary, replica or standby), 0 for the others."))
	check(err)
	m.group, err = meter.Int64ObservableGauge("lbd.node.group", metric.WithUnit("{node}"),
		metric.WithDescription("1 for each group the node belongs to (lbd.node.group), none for a node of no group."))
	check(err)
	m.weight, err = meter.Int64ObservableGauge("lbd.node.weight", metric.WithUnit("1"),
		metric.WithDescription("The node's weight from its source or the DSN (1 when none was given)."))
	check(err)
	m.warmup, err = meter.Float64ObservableGauge("lbd.node.warmup", metric.WithUnit("1"),
		metric.WithDescription("The node's slow-start progress: 0 as it comes up, 1 once warm (1 with slow start off)."))
	check(err)
	m.effectiveWeight, err = meter.Float64ObservableGauge("lbd.node.weight.effective", metric.WithUnit("1"),
		metric.WithDescription("The weight new connections go by: lbd.node.weight times max(lbd.node.warmup, 0.1) times lbd.node.speed."))
	check(err)
	m.latency, err = meter.Float64ObservableGauge("lbd.node.latency", metric.WithUnit("s"),
		metric.WithDescription("The node's latency estimate: a moving average of its statements' round trips over about half a second, decaying toward 0 while it answers none."))
	check(err)
	m.speed, err = meter.Float64ObservableGauge("lbd.node.speed", metric.WithUnit("1"),
		metric.WithDescription("The factor balancePolicy=least-load scales the node's weight by for its latency, from 1/16 to 1 (1 under least-connections)."))
	check(err)
	m.passive = counter("lbd.node.passive_signals", "{signal}",
		"What the application's statements saw against the node (a lost connection, a statement timeout, stalled statements).")
	m.dials = counter("lbd.node.dials", "{dial}", "Successful dials of application connections to the node.")
	m.dialFailures = counter("lbd.node.dial.failures", "{dial}", "Failed dials to the node (refused, timed out, handshake failed).")
	m.retired = counter("lbd.node.connection.retirements", "{connection}", "Connections to the node lbd retired, by lbd.retire.reason.")
	m.fatal = counter("lbd.node.fatal_errors", "{error}", "Errors on the node's connections that the exception sorter judged fatal.")
	m.probes = counter("lbd.node.probes", "{probe}", "Health probes of the node.")
	m.probeFailures = counter("lbd.node.probe.failures", "{probe}", "Failed health probes of the node.")
	m.transitions = counter("lbd.node.transitions", "{transition}", "State changes of the node, by lbd.transition.cause.")
	m.createTime, err = dbconv.NewClientConnectionCreateTime(meter, metric.WithExplicitBucketBoundaries(buckets...))
	check(err)
	m.probeDuration, err = meter.Float64Histogram("lbd.node.probe.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each health probe of the node took, failed ones included."),
		metric.WithExplicitBucketBoundaries(buckets...))
	check(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("lbdotel: %w", errors.Join(errs...))
	}
	m.reg, err = meter.RegisterCallback(m.observe, m.count.Inst(), m.state, m.dials, m.dialFailures, m.retired,
		m.fatal, m.probes, m.probeFailures, m.transitions, m.role, m.weight, m.warmup, m.effectiveWeight, m.passive,
		m.latency, m.speed, m.group)
	if err != nil {
		return nil, fmt.Errorf("lbdotel: %w", err)
	}
	m.remove = c.AddObserver(lbd.Observer{
		Probe: func(addr string, took time.Duration, _ error) {
			m.probeDuration.Record(context.Background(), took.Seconds(), metric.WithAttributes(m.nodeAttrs(addr)...))
		},
		Dial: func(addr string, took time.Duration, _ error) {
			a := m.nodeAttrs(addr)
			m.createTime.Record(context.Background(), took.Seconds(), a[0].Value.AsString(), a[1:]...)
		},
	})
	return m, nil
}

// Close unregisters the callback and the Observer. It is idempotent; the first call's error
// (the Meter's Unregister) is returned each time.
func (m *Metrics) Close() error {
	m.closeOnce.Do(func() {
		m.remove()
		m.closeErr = m.reg.Unregister()
	})
	return m.closeErr
}

// nodeAttrs returns a node's pool name (first), server.address and server.port.
func (m *Metrics) nodeAttrs(addr string) []attribute.KeyValue {
	a := []attribute.KeyValue{semconv.DBClientConnectionPoolName(m.poolName(addr))}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return append(a, semconv.ServerAddress(addr))
	}
	a = append(a, semconv.ServerAddress(host))
	if p, err := strconv.Atoi(port); err == nil {
		a = append(a, semconv.ServerPort(p))
	}
	return a
}

// nodeStates are the values of lbd.node.state.
var nodeStates = []lbd.NodeState{lbd.StateUp, lbd.StateDown, lbd.StateDraining}

// observe reports one Stats snapshot.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	with := func(base []attribute.KeyValue, more ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributes(append(append(make([]attribute.KeyValue, 0, len(base)+len(more)), base...), more...)...)
	}
	for _, n := range m.c.Stats().Nodes {
		a := m.nodeAttrs(n.Addr)
		o.ObserveInt64(m.count.Inst(), int64(n.Idle), with(a, semconv.DBClientConnectionStateIdle))
		o.ObserveInt64(m.count.Inst(), int64(n.InUse), with(a, semconv.DBClientConnectionStateUsed))
		for _, s := range nodeStates {
			v := int64(0)
			if n.State == s {
				v = 1
			}
			o.ObserveInt64(m.state, v, with(a, NodeStateKey.String(s.String())))
		}
		for r := range nodes.Role(nodes.NumRoles) {
			v := int64(0)
			if n.Role == r {
				v = 1
			}
			o.ObserveInt64(m.role, v, with(a, NodeRoleKey.String(r.String())))
		}
		for _, g := range n.Groups {
			o.ObserveInt64(m.group, 1, with(a, NodeGroupKey.String(g)))
		}
		o.ObserveInt64(m.weight, int64(n.Weight), with(a))
		o.ObserveFloat64(m.warmup, n.Warmup, with(a))
		o.ObserveFloat64(m.effectiveWeight, n.EffectiveWeight, with(a))
		o.ObserveFloat64(m.latency, n.Latency.Seconds(), with(a))
		o.ObserveFloat64(m.speed, n.Speed, with(a))
		o.ObserveInt64(m.passive, int64(n.PassiveSignals), with(a))
		o.ObserveInt64(m.dials, int64(n.Dials), with(a))
		o.ObserveInt64(m.dialFailures, int64(n.DialFailures), with(a))
		for why, v := range n.RetiredBy {
			o.ObserveInt64(m.retired, int64(v), with(a, RetireReasonKey.String(lbd.RetireReason(why).String())))
		}
		o.ObserveInt64(m.fatal, int64(n.FatalErrors), with(a))
		o.ObserveInt64(m.probes, int64(n.Probes), with(a))
		o.ObserveInt64(m.probeFailures, int64(n.ProbeFailures), with(a))
		for cause, v := range n.TransitionsBy {
			o.ObserveInt64(m.transitions, int64(v), with(a, TransitionCauseKey.String(lbd.TransitionCause(cause).String())))
		}
	}
	return nil
}
