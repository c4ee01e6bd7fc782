// Package lbdprom exports an lbd Connector's per-node metrics to Prometheus: a
// prometheus.Collector (client_golang) over (*lbd.Connector).Stats and lbd.Observer, in a module
// of its own so that only an application that imports it pays for client_golang.
//
// Every series carries the node label ("host:port"). Gauges and counters are read from one
// Stats snapshot per scrape; the probe and dial latency histograms are fed by an lbd.Observer
// the Collector registers on the Connector (one call per probe and per dial, nothing per
// statement; with no Collector, nothing is timed at all).
//
// The node's role (primary, replica, standby, unknown) is not a label of every series: a
// switchover would end each series of the node and start another under the new role, breaking
// rate() over the counters and doubling the node's series for the lookback window. It is the
// label of one info-style gauge, lbd_node_info{node,role} = 1, as Prometheus advises for a
// changing string attribute; a query that wants the role joins it on node, for example
//
//	sum by (role) (lbd_node_open_connections * on (node) group_left (role) lbd_node_info)
//
// On a role change the old info series ends and the new one starts: one series churns, not all.
// The node's groups (lbd.InGroup) are likewise the label of lbd_node_group_info{node,group} = 1,
// one series per group of the node, none for a node of no group:
//
//	sum by (group) (lbd_node_in_use_connections * on (node) group_right lbd_node_group_info)
//
// Register it next to client_golang's collectors.NewDBStatsCollector for the *sql.DB, which
// exports database/sql's own pool (waits, lifetime closes) under go_sql_*:
//
//	reg.MustRegister(lbdprom.NewCollector(connector, lbdprom.Options{}),
//		collectors.NewDBStatsCollector(db, "orders"))
package lbdprom

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lbd-go/lbd"
)

// Options configures a Collector; the zero value takes the defaults.
type Options struct {
	// ConstLabels are added to every series, to tell several Connectors apart in one registry
	// (for example {"db_name": "orders"}, the label collectors.NewDBStatsCollector uses).
	ConstLabels prometheus.Labels
	// ProbeBuckets and DialBuckets are the histograms' upper bounds in seconds. Default
	// DefaultLatencyBuckets.
	ProbeBuckets, DialBuckets []float64
}

// DefaultLatencyBuckets are the default histogram bounds in seconds: 0.5 ms to 10 s, for a
// probe (a SELECT 1 on loopback takes well under a millisecond; the probe timeout defaults to
// 3 s) and a dial with its MySQL handshake (the dial timeout defaults to 10 s).
var DefaultLatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Collector is a prometheus.Collector over one Connector. Build it with NewCollector; Close
// removes its Observer from the Connector.
type Collector struct {
	c      *lbd.Connector
	remove func()

	logical, up, state, standby, open, idle, inUse *prometheus.Desc
	dials, dialFailures, retired, fatal, probes    *prometheus.Desc
	probeFailures, transitions                     *prometheus.Desc
	info, weight, effectiveWeight, warmup, passive *prometheus.Desc
	latency, speed, groupInfo                      *prometheus.Desc
	probeSeconds, dialSeconds                      *prometheus.HistogramVec

	mu    sync.Mutex      // guards known
	known map[string]bool // nodes with histogram series, to drop those that left the table
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector over c and registers its Observer on c. The series it
// exports (all but lbd_logical_connections per node, label node):
//
//	lbd_logical_connections                  gauge    connections database/sql holds open
//	lbd_node_info{role}                      gauge    1, with the node's role (nodes.Role): primary, replica, standby, unknown
//	lbd_node_group_info{group}               gauge    1 per group the node belongs to (lbd.NodeStats.Groups)
//	lbd_node_up                              gauge    1 while the node takes new connections
//	lbd_node_state{state}                    gauge    1 for the node's state: up, down or draining
//	lbd_node_standby                         gauge    1 while the node is a standby
//	lbd_node_open_connections                gauge    open physical connections, dials included
//	lbd_node_idle_connections                gauge    of those, idle
//	lbd_node_in_use_connections              gauge    of those, in use
//	lbd_node_weight                          gauge    the node's weight from its source or the DSN
//	lbd_node_warmup_ratio                    gauge    slow-start progress, 0 as the node comes up to 1 once warm
//	lbd_node_effective_weight                gauge    what new connections go by: weight × max(warm-up, 0.1) × speed
//	lbd_node_latency_seconds                 gauge    the node's latency estimate (lbd.NodeStats.Latency)
//	lbd_node_speed_ratio                     gauge    the factor balancePolicy=least-load gives the node for its latency, 1/16 to 1
//	lbd_node_dials_total                     counter  successful dials
//	lbd_node_dial_failures_total             counter  failed dials
//	lbd_node_retired_connections_total{reason} counter connections retired, by lbd.RetireReason
//	lbd_node_fatal_errors_total              counter  errors judged fatal to a connection
//	lbd_node_passive_signals_total           counter  what the application's statements saw against the node
//	lbd_node_probes_total                    counter  probes run
//	lbd_node_probe_failures_total            counter  probes failed
//	lbd_node_transitions_total{cause}        counter  state changes, by lbd.TransitionCause
//	lbd_node_probe_duration_seconds          histogram how long each probe took
//	lbd_node_dial_duration_seconds           histogram how long each dial and handshake took
func NewCollector(c *lbd.Connector, opts Options) *Collector {
	probeBuckets, dialBuckets := opts.ProbeBuckets, opts.DialBuckets
	if probeBuckets == nil {
		probeBuckets = DefaultLatencyBuckets
	}
	if dialBuckets == nil {
		dialBuckets = DefaultLatencyBuckets
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"node"}, labels...), opts.ConstLabels)
	}
	col := &Collector{
		c:       c,
		logical: prometheus.NewDesc("lbd_logical_connections", "Connections database/sql holds open through lbd: logical ones in statement mode, physical ones in connection mode.", nil, opts.ConstLabels),
		info:    desc("lbd_node_info", "1, with the node's role (primary, replica, standby, unknown) as a label: join on node to carry the role to other series.", "role"),
		groupInfo: desc("lbd_node_group_info",
			"1 for each group the node belongs to (lbd.InGroup), with the group as a label: join on node to carry groups to other series.", "group"),
		up:      desc("lbd_node_up", "1 while the node is up (takes new connections), 0 while down or draining."),
		state:   desc("lbd_node_state", "1 for the node's current state (up, down, draining), 0 for the others.", "state"),
		standby: desc("lbd_node_standby", "1 while the node is a standby: probed, but taking no new connection."),
		open:    desc("lbd_node_open_connections", "Open physical connections to the node, dials in progress included, the probe connection excluded."),
		idle:    desc("lbd_node_idle_connections", "Open physical connections to the node that are idle."),
		inUse:   desc("lbd_node_in_use_connections", "Open physical connections to the node that are in use."),
		weight:  desc("lbd_node_weight", "The node's weight from its source or the DSN (1 when none was given)."),
		warmup:  desc("lbd_node_warmup_ratio", "The node's slow-start progress: 0 as it comes up, 1 once warm (1 with slow start off)."),
		effectiveWeight: desc("lbd_node_effective_weight",
			"The weight new connections go by: lbd_node_weight times max(lbd_node_warmup_ratio, 0.1) times lbd_node_speed_ratio."),
		latency: desc("lbd_node_latency_seconds",
			"The node's latency estimate: a moving average of its statements' round trips over about half a second, decaying toward 0 while it answers none."),
		speed: desc("lbd_node_speed_ratio",
			"The factor balancePolicy=least-load scales the node's weight by for its latency, from 1/16 to 1 (1 under least-connections)."),
		passive: desc("lbd_node_passive_signals_total",
			"What the application's statements saw against the node (a lost connection, a statement timeout, stalled statements)."),
		dials: desc("lbd_node_dials_total", "Successful dials of application connections to the node."),
		dialFailures: desc("lbd_node_dial_failures_total",
			"Failed dials to the node (refused, timed out, handshake failed)."),
		retired: desc("lbd_node_retired_connections_total",
			"Connections to the node lbd retired, by reason (node_down, node_draining, fatal, rebalance, tx_end_failed, role).", "reason"),
		fatal:  desc("lbd_node_fatal_errors_total", "Errors on the node's connections that the exception sorter judged fatal."),
		probes: desc("lbd_node_probes_total", "Health probes of the node."),
		probeFailures: desc("lbd_node_probe_failures_total",
			"Failed health probes of the node."),
		transitions: desc("lbd_node_transitions_total",
			"State changes of the node, by the signal that decided them (probe, dial, fatal, node_list, role, panic, passive).", "cause"),
		probeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lbd_node_probe_duration_seconds", Help: "How long each health probe of the node took, failed ones included.",
			Buckets: probeBuckets, ConstLabels: opts.ConstLabels}, []string{"node"}),
		dialSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lbd_node_dial_duration_seconds", Help: "How long each dial of an application connection to the node took, the MySQL handshake and failed dials included.",
			Buckets: dialBuckets, ConstLabels: opts.ConstLabels}, []string{"node"}),
		known: map[string]bool{},
	}
	col.remove = c.AddObserver(lbd.Observer{
		Probe: func(addr string, took time.Duration, _ error) {
			col.note(addr)
			col.probeSeconds.WithLabelValues(addr).Observe(took.Seconds())
		},
		Dial: func(addr string, took time.Duration, _ error) {
			col.note(addr)
			col.dialSeconds.WithLabelValues(addr).Observe(took.Seconds())
		},
	})
	return col
}

// Close removes the Collector's Observer from the Connector: the histograms stop moving. It
// is idempotent.
func (col *Collector) Close() { col.remove() }

// Describe implements prometheus.Collector.
func (col *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{col.logical, col.up, col.state, col.standby, col.open, col.idle, col.inUse,
		col.dials, col.dialFailures, col.retired, col.fatal, col.probes, col.probeFailures, col.transitions,
		col.info, col.weight, col.warmup, col.effectiveWeight, col.passive, col.latency, col.speed, col.groupInfo} {
		ch <- d
	}
	col.probeSeconds.Describe(ch)
	col.dialSeconds.Describe(ch)
}

// nodeStates are the values of lbd_node_state's state label.
var nodeStates = []lbd.NodeState{lbd.StateUp, lbd.StateDown, lbd.StateDraining}

// Collect implements prometheus.Collector: one Stats snapshot, then the histograms. The
// histogram series of a node that left the Connector's node table are dropped.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	st := col.c.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(col.logical, float64(st.Logical))
	present := make(map[string]bool, len(st.Nodes))
	for _, n := range st.Nodes {
		a := n.Addr
		present[a] = true
		gauge(col.info, 1, a, n.Role.String())
		for _, g := range n.Groups {
			gauge(col.groupInfo, 1, a, g)
		}
		gauge(col.up, b2f(n.State == lbd.StateUp), a)
		for _, s := range nodeStates {
			gauge(col.state, b2f(n.State == s), a, s.String())
		}
		gauge(col.standby, b2f(n.Standby), a)
		gauge(col.open, float64(n.Open), a)
		gauge(col.idle, float64(n.Idle), a)
		gauge(col.inUse, float64(n.InUse), a)
		gauge(col.weight, float64(n.Weight), a)
		gauge(col.warmup, n.Warmup, a)
		gauge(col.effectiveWeight, n.EffectiveWeight, a)
		gauge(col.latency, n.Latency.Seconds(), a)
		gauge(col.speed, n.Speed, a)
		counter(col.dials, n.Dials, a)
		counter(col.dialFailures, n.DialFailures, a)
		for why, v := range n.RetiredBy {
			counter(col.retired, v, a, lbd.RetireReason(why).String())
		}
		counter(col.fatal, n.FatalErrors, a)
		counter(col.passive, n.PassiveSignals, a)
		counter(col.probes, n.Probes, a)
		counter(col.probeFailures, n.ProbeFailures, a)
		for cause, v := range n.TransitionsBy {
			counter(col.transitions, v, a, lbd.TransitionCause(cause).String())
		}
	}
	col.mu.Lock()
	for a := range col.known {
		if !present[a] {
			col.probeSeconds.DeleteLabelValues(a)
			col.dialSeconds.DeleteLabelValues(a)
			delete(col.known, a)
		}
	}
	col.mu.Unlock()
	col.probeSeconds.Collect(ch)
	col.dialSeconds.Collect(ch)
}

// note records that addr has histogram series.
func (col *Collector) note(addr string) {
	col.mu.Lock()
	col.known[addr] = true
	col.mu.Unlock()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
