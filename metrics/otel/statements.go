package lbdotel

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/nodes"
)

// DefaultOperationDurationBuckets are db.client.operation.duration's bucket boundaries in
// seconds: the database metric conventions' advice.
var DefaultOperationDurationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// mysqlPort is MySQL's default port: a server.port of that value is left out.
const mysqlPort = 3306

// StatementOptions configures WithStatementTelemetry; the zero value takes the defaults.
type StatementOptions struct {
	// TracerProvider gives the Tracer of the statements' spans (required):
	// otel.GetTracerProvider() for the application's global one, or trace/noop's to record
	// no span.
	TracerProvider trace.TracerProvider
	// MeterProvider gives the Meter of db.client.operation.duration (required):
	// otel.GetMeterProvider() for the application's global one, or metric/noop's to record no
	// measurement.
	MeterProvider metric.MeterProvider
	// QueryText records each statement's text on its span as db.query.text (never on the
	// histogram). Off by default: lbd cannot tell a parameterized text from one holding literal
	// values, which the conventions keep out unless the application opts in.
	QueryText bool
	// SystemName is db.system.name. Default "mysql" (the conventions' value for MySQL
	// servers); "mariadb" for MariaDB servers; see the conventions' list for others.
	SystemName string
	// ServerAddress, when set, is server.address on every statement, with no server.port, in
	// place of the address derived from the Connector's configuration.
	ServerAddress string
	// DurationBuckets are db.client.operation.duration's bucket boundaries in seconds.
	// Default DefaultOperationDurationBuckets.
	DurationBuckets []float64
}

// WithStatementTelemetry returns an lbd.Option that gives every statement an OpenTelemetry
// client span and a db.client.operation.duration measurement, after the database semantic
// conventions (v1.43.0, with the later clarification of server.address for clients that
// balance over several servers), through lbd.WithStatementObserver (whose rules say what one
// statement is and when it ends). Pass it to lbd.NewConnector or lbd.Open with the DSN.
//
// Each span is a child of the span in the caller's context, of kind client, named by its
// db.operation.name (db.namespace, or db.system.name, when there is none), and carries:
//
//	db.system.name            SystemName ("mysql")
//	db.namespace              the DSN's database, when it names one (the database the connection was opened with)
//	db.operation.name         the text's verb when the text is one statement ("SELECT", "INSERT", ...);
//	                          PREPARE for a prepare; BEGIN, COMMIT, ROLLBACK for a transaction's
//	server.address            the database address of the configuration, the same for every statement:
//	server.port               the DSN's proxies as host,host (their port in server.port when they share one other
//	                          than 3306; host:port,host:port when they differ), a node source's addresses as the DSN
//	                          writes them, or ServerAddress
//	network.peer.address      the proxy that ran the statement (the last one, when lbd ran a read again elsewhere)
//	network.peer.port
//	lbd.node.role             that proxy's role: unknown, primary, replica, standby
//	lbd.node.group            that proxy's named groups, when it has any
//	db.response.status_code   a server's error number, when it answered with an error
//	error.type                that error number; otherwise semconv.ErrorType of the error (its Go type)
//	db.query.text             with QueryText only
//
// and, on failure, the status Error with the error's text. The histogram db.client.operation.duration
// (seconds) gets one measurement per statement with the same attributes but db.query.text,
// recorded in the span's context. A statement go-sql-driver declined to send
// (driver.ErrSkip) ends its span with no measurement.
//
// The proxy that ran a statement is in network.peer.address and network.peer.port, as the
// node list names it (a host name stays a name): the conventions keep server.address for the
// address the client was configured with, unchanged whichever server an operation went to.
// They and lbd.node.* are set as the span ends (statement mode picks the proxy after the
// start, and a read run again ends elsewhere); the rest is there from the start, for samplers.
//
// The providers are the application's to pass, as Register's MeterProvider is: lbdotel does not
// reach for the global ones itself, since the package holding them (go.opentelemetry.io/otel)
// would add modules to the graph of every program importing lbdotel, metrics-only ones too.
//
// Errors: the option fails (and so NewConnector) when a provider is missing or the Meter
// refuses the histogram.
func WithStatementTelemetry(opts StatementOptions) lbd.Option {
	return func(cfg *lbd.Config) error {
		tp, mp := opts.TracerProvider, opts.MeterProvider
		if tp == nil || mp == nil {
			return errors.New("lbdotel: WithStatementTelemetry needs StatementOptions.TracerProvider and MeterProvider: otel.GetTracerProvider() and otel.GetMeterProvider() for the application's global ones, a no-op provider (trace/noop, metric/noop) to record only spans or only measurements")
		}
		buckets := opts.DurationBuckets
		if buckets == nil {
			buckets = DefaultOperationDurationBuckets
		}
		duration, err := dbconv.NewClientOperationDuration(mp.Meter(ScopeName), metric.WithExplicitBucketBoundaries(buckets...))
		if err != nil {
			return fmt.Errorf("lbdotel: WithStatementTelemetry: %w", err)
		}
		t := &statementTelemetry{
			tracer:    tp.Tracer(ScopeName),
			duration:  duration,
			system:    dbconv.SystemNameAttr(opts.SystemName),
			queryText: opts.QueryText,
		}
		if t.system == "" {
			t.system = dbconv.SystemNameMySQL
		}
		t.common = append(t.common, semconv.DBSystemNameKey.String(string(t.system)))
		t.namespace = cfg.MySQL.DBName
		if t.namespace != "" {
			t.common = append(t.common, semconv.DBNamespace(t.namespace))
		}
		if addr, port := serverAddress(cfg, opts.ServerAddress); addr != "" {
			t.common = append(t.common, semconv.ServerAddress(addr))
			if port != 0 {
				t.common = append(t.common, semconv.ServerPort(port))
			}
		}
		return lbd.WithStatementObserver(t)(cfg)
	}
}

// serverAddress derives server.address and server.port from the Connector's configuration
// after the conventions' rules for clients configured with several servers: the DSN's proxies
// in their order (it matters to singleWriter), ports left out when all are 3306 and moved to
// server.port when all share another; a node source's addresses, as the DSN writes them, with
// no port. override wins. "" when the configuration names no address (lb() with a source of
// the application's own): the conventions then leave server.address out.
func serverAddress(cfg *lbd.Config, override string) (string, int) {
	if override != "" {
		return override, 0
	}
	if cfg.Network != lbd.Network {
		return strings.Join(cfg.SourceAddrs, ","), 0
	}
	if len(cfg.Nodes) == 0 {
		return "", 0
	}
	hosts := make([]string, len(cfg.Nodes))
	port, samePort := "", true
	for i, n := range cfg.Nodes {
		h, p, err := net.SplitHostPort(n)
		if err != nil {
			return strings.Join(cfg.Nodes, ","), 0
		}
		hosts[i] = h
		if i == 0 {
			port = p
		} else if p != port {
			samePort = false
		}
	}
	if !samePort {
		return strings.Join(cfg.Nodes, ","), 0
	}
	for i, h := range hosts {
		if strings.Contains(h, ":") { // IPv6: brackets keep the address apart from the list
			hosts[i] = "[" + h + "]"
		}
	}
	p, _ := strconv.Atoi(port)
	if p == mysqlPort {
		p = 0
	}
	return strings.Join(hosts, ","), p
}

// statementTelemetry is the lbd.StatementObserver WithStatementTelemetry installs.
type statementTelemetry struct {
	tracer    trace.Tracer
	duration  dbconv.ClientOperationDuration
	system    dbconv.SystemNameAttr
	namespace string
	common    []attribute.KeyValue // db.system.name, db.namespace, server.address, server.port
	queryText bool

	// starts holds, by db.operation.name, a span's attributes at its start (common and
	// db.operation.name); ends holds, by node, role and operation, a span's attributes at its
	// end and the measurement's of a statement that succeeded. Both are copied on write and
	// read without a lock; their keys come from fixed sets (verbs, roles) and the node list,
	// and ends stops growing at maxEnds.
	mu     sync.Mutex
	starts atomic.Pointer[map[string][]attribute.KeyValue]
	ends   atomic.Pointer[map[endKey]*endAttrs]
}

// endKey is what a statement's attributes at its end depend on, errors aside.
type endKey struct {
	addr string
	role nodes.Role
	op   string
}

// endAttrs are the attributes of a statement that succeeded: the span's at its end (the node)
// and the measurement's (all but db.query.text).
type endAttrs struct {
	span []attribute.KeyValue
	set  attribute.Set
}

// maxEnds bounds ends: a node list that keeps changing (a node source's answers are
// untrusted) must not make it grow without end. Past it, attributes are built per statement.
const maxEnds = 4096

// operationName is a statement's db.operation.name; "" when it has none.
func operationName(s lbd.StatementInfo) string {
	switch s.Op {
	case lbd.OpPrepare:
		return "PREPARE"
	case lbd.OpBegin:
		return "BEGIN"
	case lbd.OpCommit:
		return "COMMIT"
	case lbd.OpRollback:
		return "ROLLBACK"
	}
	return s.Verb
}

// startAttrs returns a span's attributes at its start for operation op: common and
// db.operation.name. The slice is shared: callers must not change it.
func (t *statementTelemetry) startAttrs(op string) []attribute.KeyValue {
	if m := t.starts.Load(); m != nil {
		if a, ok := (*m)[op]; ok {
			return a
		}
	}
	a := slices.Clip(t.common)
	if op != "" {
		a = append(a, semconv.DBOperationName(op))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := map[string][]attribute.KeyValue{op: a}
	if m := t.starts.Load(); m != nil {
		maps.Copy(next, *m)
	}
	t.starts.Store(&next)
	return a
}

// endAttrsFor returns the attributes of a statement s with operation op that succeeded.
func (t *statementTelemetry) endAttrsFor(s lbd.StatementInfo, op string) *endAttrs {
	k := endKey{s.Addr, s.Role, op}
	m := t.ends.Load()
	if m != nil {
		if e, ok := (*m)[k]; ok {
			return e
		}
	}
	e := t.buildEnd(s, op)
	if len(s.Groups) > 0 || m != nil && len(*m) >= maxEnds {
		return e // groups are not in the key; past the bound nothing more is kept
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make(map[endKey]*endAttrs, 1)
	if m := t.ends.Load(); m != nil {
		next = maps.Clone(*m)
	}
	next[k] = e
	t.ends.Store(&next)
	return e
}

// buildEnd builds the attributes of a statement s with operation op that succeeded.
func (t *statementTelemetry) buildEnd(s lbd.StatementInfo, op string) *endAttrs {
	var node []attribute.KeyValue
	if s.Addr != "" {
		node = appendNode(nil, s)
	}
	all := append(slices.Clone(t.startAttrs(op)), node...)
	return &endAttrs{span: slices.Clip(node), set: attribute.NewSet(all...)}
}

// StatementStart starts the statement's client span, a child of ctx's, and returns ctx with it.
// The node is set at the end: statement mode picks it after the start, and a read run again
// elsewhere ends on another one.
func (t *statementTelemetry) StatementStart(ctx context.Context, s lbd.StatementInfo) context.Context {
	op := operationName(s)
	name := op
	if name == "" {
		if name = t.namespace; name == "" {
			name = string(t.system)
		}
	}
	attrs := t.startAttrs(op)
	if t.queryText && s.Text != "" {
		attrs = append(slices.Clip(attrs), semconv.DBQueryText(s.Text))
	}
	ctx, _ = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx
}

// StatementEnd ends the statement's span with its node and outcome, and records its duration.
func (t *statementTelemetry) StatementEnd(ctx context.Context, s lbd.StatementInfo, took time.Duration, err error) {
	span := trace.SpanFromContext(ctx)
	if err == driver.ErrSkip { // not sent: database/sql prepares it, and that is measured
		span.End()
		return
	}
	op := operationName(s)
	if err == nil {
		e := t.endAttrsFor(s, op)
		if len(e.span) > 0 {
			span.SetAttributes(e.span...)
		}
		span.End()
		t.duration.RecordSet(ctx, took.Seconds(), e.set)
		return
	}
	var node []attribute.KeyValue
	if s.Addr != "" {
		node = appendNode(nil, s)
	}
	spanAttrs := appendError(node, err)
	if span.IsRecording() {
		span.SetAttributes(spanAttrs...)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	all := append(slices.Clone(t.startAttrs(op)), spanAttrs...)
	t.duration.RecordSet(ctx, took.Seconds(), attribute.NewSet(all...))
}

// appendNode appends the node's attributes: network.peer.address and .port, lbd.node.role,
// lbd.node.group.
func appendNode(attrs []attribute.KeyValue, s lbd.StatementInfo) []attribute.KeyValue {
	attrs = append(attrs, semconv.NetworkPeerAddress(s.Host))
	if s.Port != 0 {
		attrs = append(attrs, semconv.NetworkPeerPort(s.Port))
	}
	attrs = append(attrs, NodeRoleKey.String(s.Role.String()))
	if len(s.Groups) > 0 {
		attrs = append(attrs, NodeGroupKey.StringSlice(s.Groups))
	}
	return attrs
}

// appendError appends error.type and, for a server's error, db.response.status_code: the
// MySQL error number (the MySQL conventions' rule); other errors' error.type is
// semconv.ErrorType's (the Go type of the error beneath fmt's wrapping).
func appendError(attrs []attribute.KeyValue, err error) []attribute.KeyValue {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		code := strconv.Itoa(int(me.Number))
		return append(attrs, semconv.DBResponseStatusCode(code), semconv.ErrorTypeKey.String(code))
	}
	return append(attrs, semconv.ErrorType(err))
}
