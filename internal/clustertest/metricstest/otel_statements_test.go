package metricstest

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
	lbdotel "github.com/lbd-go/lbd/metrics/otel"
	"github.com/lbd-go/lbd/nodes"
)

// spanAttrs returns a span's attributes by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestStatementTelemetry runs statements over three proxies, a replica among them, in both
// balance modes: three transactions held at once, so that they sit on the three proxies, each
// with its own statements, a failing statement, and a statement outside them. Each statement's
// span, and the db.client.operation.duration measurements, must name the proxy that received
// its text (network.peer.address and .port) with that proxy's role, and carry the conventions'
// attributes; every span is a client span, child of the caller's.
func TestStatementTelemetry(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	cl.Proxy(1).SetRole(lbdtest.Replica)
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			for _, p := range cl.Proxies() {
				p.ResetCounters()
			}
			recorder := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
			defer tp.Shutdown(context.Background())
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())

			c, err := lbd.NewConnector(cl.DSN("roleCheck=mysql&balance="+mode), lbd.WithLogger(slog.New(slog.DiscardHandler)),
				lbd.WithCheckHealthInterval(20*time.Millisecond), lbd.WithCheckHealthTimeout(time.Second),
				lbdotel.WithStatementTelemetry(lbdotel.StatementOptions{TracerProvider: tp, MeterProvider: mp, QueryText: true}))
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RoleReplica, nodes.RolePrimary)

			ctx, parent := tp.Tracer("test").Start(t.Context(), "request")
			var txs []*sql.Tx
			for range 3 {
				tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				txs = append(txs, tx)
			}
			texts := map[string]bool{} // statement text → whether it fails
			for i, tx := range txs {
				for j := range 2 {
					q := fmt.Sprintf("/* tx%d.%d */ SELECT %d", i, j, i)
					var v int
					if err := tx.QueryRowContext(ctx, q).Scan(&v); err != nil || v != i {
						t.Fatalf("%s: %d, %v", q, v, err)
					}
					texts[q] = false
				}
			}
			bad := "/* bad */ SELECT * FROM no_such_table"
			if _, err := txs[0].ExecContext(ctx, bad); err == nil {
				t.Fatalf("%s succeeded", bad)
			}
			texts[bad] = true
			for _, tx := range txs {
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			free := "/* free */ SELECT 1"
			var one int
			if err := db.QueryRowContext(ctx, free).Scan(&one); err != nil {
				t.Fatal(err)
			}
			texts[free] = false
			parent.End()

			st := c.Stats()
			roleOf := map[int]string{} // port → role
			for _, n := range st.Nodes {
				roleOf[portOf(t, n.Addr)] = n.Role.String()
			}
			wantServer := strings.Join(cl.Addrs(), ",") // the proxies share a host and not a port
			var spans []sdktrace.ReadOnlySpan
			for _, s := range recorder.Ended() {
				if s.InstrumentationScope().Name == lbdotel.ScopeName {
					spans = append(spans, s)
				}
			}
			// Per proxy port, the statements it ran: each span's node, checked against the
			// proxy that received the text; transactions' begins and commits by their trace
			// order around them.
			perPort := map[int]int{}
			textPorts := map[int]bool{}
			for _, s := range spans {
				a := spanAttrs(s)
				if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() {
					t.Errorf("span %q: kind %v, parent %v; want a client span, child of the caller's", s.Name(), s.SpanKind(), s.Parent().SpanID())
				}
				if a["db.system.name"].AsString() != "mysql" || a["db.namespace"].AsString() != cl.Database() || a["server.address"].AsString() != wantServer {
					t.Errorf("span %q: db.system.name %q, db.namespace %q, server.address %q; want mysql, %q, %q",
						s.Name(), a["db.system.name"].AsString(), a["db.namespace"].AsString(), a["server.address"].AsString(), cl.Database(), wantServer)
				}
				if _, ok := a["server.port"]; ok {
					t.Errorf("span %q has server.port; the proxies' ports differ, so each is in server.address", s.Name())
				}
				port := int(a["network.peer.port"].AsInt64())
				if a["network.peer.address"].AsString() != "127.0.0.1" || roleOf[port] == "" {
					t.Errorf("span %q: network.peer %q:%d names no proxy", s.Name(), a["network.peer.address"].AsString(), port)
					continue
				}
				if got := a["lbd.node.role"].AsString(); got != roleOf[port] {
					t.Errorf("span %q on port %d: lbd.node.role %q, want %q", s.Name(), port, got, roleOf[port])
				}
				perPort[port]++
				text := a["db.query.text"].AsString()
				if text == "" {
					if s.Name() != "BEGIN" && s.Name() != "COMMIT" {
						t.Errorf("span %q has no db.query.text", s.Name())
					}
					continue
				}
				fails, ok := texts[text]
				if !ok {
					t.Errorf("span %q for a statement the test did not run: %q", s.Name(), text)
					continue
				}
				delete(texts, text)
				at := cl.Proxy(clusterkit.ProxyThatSaw(t, cl, text)).Addr()
				if port != portOf(t, at) {
					t.Errorf("%q ran on %s; its span names port %d", text, at, port)
				}
				textPorts[port] = true
				if s.Name() != "SELECT" || a["db.operation.name"].AsString() != "SELECT" {
					t.Errorf("%q: span name %q, db.operation.name %q; want SELECT", text, s.Name(), a["db.operation.name"].AsString())
				}
				if fails {
					if s.Status().Code != codes.Error || a["error.type"].AsString() != "1146" || a["db.response.status_code"].AsString() != "1146" {
						t.Errorf("%q: status %v, error.type %q, db.response.status_code %q; want Error and 1146 (no such table)",
							text, s.Status(), a["error.type"].AsString(), a["db.response.status_code"].AsString())
					}
				} else if s.Status().Code == codes.Error || a["error.type"].AsString() != "" {
					t.Errorf("%q succeeded; its span says %v, error.type %q", text, s.Status(), a["error.type"].AsString())
				}
			}
			for text := range texts {
				t.Errorf("no span for %q", text)
			}
			if len(textPorts) != 3 {
				t.Errorf("the statements' spans name %d proxies, want all 3: %v", len(textPorts), textPorts)
			}
			// 3 begins, 6 reads and a failing statement in the transactions, 3 commits, and
			// the statement outside them.
			if n := len(spans); n != 14 {
				for _, s := range spans {
					t.Logf("span %q %v", s.Name(), s.Attributes())
				}
				t.Fatalf("%d spans, want 14", n)
			}

			// The histogram: one measurement per span, by the same node.
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(t.Context(), &rm); err != nil {
				t.Fatal(err)
			}
			var hist *metricdata.Histogram[float64]
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "db.client.operation.duration" {
						if sm.Scope.Name != lbdotel.ScopeName || m.Unit != "s" {
							t.Errorf("db.client.operation.duration in scope %q with unit %q", sm.Scope.Name, m.Unit)
						}
						h := m.Data.(metricdata.Histogram[float64])
						hist = &h
					}
				}
			}
			if hist == nil {
				t.Fatal("no db.client.operation.duration")
			}
			measured := map[int]int{}
			errorsSeen := 0
			for _, p := range hist.DataPoints {
				if !slices.Equal(p.Bounds, lbdotel.DefaultOperationDurationBuckets) {
					t.Errorf("bounds %v, want %v", p.Bounds, lbdotel.DefaultOperationDurationBuckets)
				}
				port, _ := p.Attributes.Value("network.peer.port")
				role, _ := p.Attributes.Value("lbd.node.role")
				if role.AsString() != roleOf[int(port.AsInt64())] {
					t.Errorf("a point on port %d has lbd.node.role %q, want %q", port.AsInt64(), role.AsString(), roleOf[int(port.AsInt64())])
				}
				if _, ok := p.Attributes.Value("db.query.text"); ok {
					t.Errorf("a point carries db.query.text: %v", p.Attributes.ToSlice())
				}
				if et, ok := p.Attributes.Value("error.type"); ok {
					errorsSeen += int(p.Count)
					if et.AsString() != "1146" {
						t.Errorf("error.type %q, want 1146", et.AsString())
					}
				}
				measured[int(port.AsInt64())] += int(p.Count)
			}
			if errorsSeen != 1 {
				t.Errorf("%d measurements with error.type, want 1", errorsSeen)
			}
			for port, n := range perPort {
				if measured[port] != n {
					t.Errorf("port %d: %d spans, %d measurements", port, n, measured[port])
				}
			}
			if len(measured) != len(perPort) {
				t.Errorf("measurements on ports %v, spans on %v", measured, perPort)
			}
			t.Logf("statements per proxy port: %v", perPort)
		})
	}
}

// TestStatementTelemetryOptions: SystemName and ServerAddress replace their defaults, and
// without QueryText no span carries db.query.text.
func TestStatementTelemetryOptions(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	for _, tc := range []struct {
		name       string
		dsn        string
		opts       lbdotel.StatementOptions
		system     string
		server     string
		serverPort int
	}{
		{"defaults", cl.DSN(""), lbdotel.StatementOptions{}, "mysql", "127.0.0.1", portOf(t, cl.Proxy(0).Addr())},
		{"options", cl.DSN(""), lbdotel.StatementOptions{SystemName: "mariadb", ServerAddress: "proxies.example"}, "mariadb", "proxies.example", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
			defer tp.Shutdown(context.Background())
			tc.opts.TracerProvider, tc.opts.MeterProvider = tp, metricnoop.NewMeterProvider()
			db, err := lbd.Open(tc.dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)), lbdotel.WithStatementTelemetry(tc.opts))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(t.Context(), "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			spans := recorder.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			a := spanAttrs(spans[0])
			port, hasPort := a["server.port"]
			if a["db.system.name"].AsString() != tc.system || a["server.address"].AsString() != tc.server || int(port.AsInt64()) != tc.serverPort || hasPort != (tc.serverPort != 0) {
				t.Errorf("db.system.name %q, server.address %q, server.port %v; want %q, %q, %d", a["db.system.name"].AsString(), a["server.address"].AsString(), port.String(), tc.system, tc.server, tc.serverPort)
			}
			if _, ok := a["db.query.text"]; ok {
				t.Error("db.query.text without QueryText")
			}
			if spans[0].Name() != "SELECT" {
				t.Errorf("span name %q, want SELECT", spans[0].Name())
			}
		})
	}
}
