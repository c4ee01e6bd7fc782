package metricstest

import (
	"database/sql"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
	lbdotel "github.com/lbd-go/lbd/metrics/otel"
	"github.com/lbd-go/lbd/nodes"
)

var enc = attribute.DefaultEncoder()

// points collects reader into instrument name → attributes (encoded, sorted) → value; a
// histogram's value is its count. Float gauges go to floats, keyed the same way.
func points(t *testing.T, reader *sdkmetric.ManualReader) (ints map[string]map[string]int64, floats map[string]map[string]float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out, outF := map[string]map[string]int64{}, map[string]map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != lbdotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, lbdotel.ScopeName)
		}
		for _, mt := range sm.Metrics {
			m := map[string]int64{}
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					m[p.Attributes.Encoded(enc)] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					m[p.Attributes.Encoded(enc)] = p.Value
				}
			case metricdata.Gauge[float64]:
				f := map[string]float64{}
				for _, p := range d.DataPoints {
					f[p.Attributes.Encoded(enc)] = p.Value
				}
				outF[mt.Name] = f
				continue
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					m[p.Attributes.Encoded(enc)] = int64(p.Count)
				}
			default:
				t.Errorf("%s: unexpected data %T", mt.Name, mt.Data)
			}
			out[mt.Name] = m
		}
	}
	return out, outF
}

// key is a node's attributes with more, as the reader's points are keyed.
func key(pool, host string, port int, more ...attribute.KeyValue) string {
	kv := append([]attribute.KeyValue{
		attribute.String("db.client.connection.pool.name", pool),
		attribute.String("server.address", host), attribute.Int("server.port", port),
	}, more...)
	set := attribute.NewSet(kv...)
	return set.Encoded(enc)
}

// TestMetricsMatchStats runs the scripted sequence (dials, a fatal error, a node down and up)
// and checks every data point the SDK's manual reader collects against Stats.
func TestMetricsMatchStats(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	c, err := lbd.NewConnector(cl.DSN(""), append(clusterkit.SequenceOptions(), lbd.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(t.Context()) })
	m, err := lbdotel.Register(c, mp, lbdotel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	registered := c.Stats() // probes before it are not in the histogram
	seq := clusterkit.RunSequence(t, cl, db, c)

	before := c.Stats()
	got, gotF := points(t, reader)
	after := c.Stats()
	dbName := c.Config().MySQL.DBName
	for i, n := range after.Nodes {
		p := cl.Proxy(i)
		if p.Addr() != n.Addr {
			t.Fatalf("node %d is %s, proxy %s", i, n.Addr, p.Addr())
		}
		host, port := "127.0.0.1", portOf(t, n.Addr)
		pool := n.Addr + "/" + dbName
		k := func(more ...attribute.KeyValue) string { return key(pool, host, port, more...) }
		for name, want := range map[string]map[string]int64{
			"db.client.connection.count": {
				k(attribute.String("db.client.connection.state", "idle")): int64(n.Idle),
				k(attribute.String("db.client.connection.state", "used")): int64(n.InUse),
			},
			"lbd.node.dials":                   {k(): int64(n.Dials)},
			"lbd.node.dial.failures":           {k(): int64(n.DialFailures)},
			"lbd.node.fatal_errors":            {k(): int64(n.FatalErrors)},
			"lbd.node.weight":                  {k(): int64(n.Weight)},
			"lbd.node.passive_signals":         {k(): int64(n.PassiveSignals)},
			"db.client.connection.create_time": {k(): int64(n.Dials + n.DialFailures)},
		} {
			for attrs, v := range want {
				if gotV, ok := got[name][attrs]; !ok || gotV != v {
					t.Errorf("%s %v = %d (present %v), Stats %d", name, attrs, gotV, ok, v)
				}
			}
		}
		for _, s := range []lbd.NodeState{lbd.StateUp, lbd.StateDown, lbd.StateDraining} {
			want := int64(0)
			if n.State == s {
				want = 1
			}
			if v, ok := got["lbd.node.state"][k(lbdotel.NodeStateKey.String(s.String()))]; !ok || v != want {
				t.Errorf("%s lbd.node.state %s = %d (present %v), want %d", n.Addr, s, v, ok, want)
			}
		}
		for r := range nodes.Role(nodes.NumRoles) {
			want := int64(0)
			if n.Role == r {
				want = 1
			}
			if v, ok := got["lbd.node.role"][k(lbdotel.NodeRoleKey.String(r.String()))]; !ok || v != want {
				t.Errorf("%s lbd.node.role %s = %d (present %v), want %d (Stats %v)", n.Addr, r, v, ok, want, n.Role)
			}
		}
		// Warm-up moves on with the clock while we read.
		b, _ := before.Node(n.Addr)
		for name, rng := range map[string][2]float64{
			"lbd.node.warmup":           {b.Warmup, n.Warmup},
			"lbd.node.weight.effective": {b.EffectiveWeight, n.EffectiveWeight},
		} {
			if v, ok := gotF[name][k()]; !ok || v < rng[0] || v > rng[1] {
				t.Errorf("%s %s = %v (present %v), Stats %v..%v", n.Addr, name, v, ok, rng[0], rng[1])
			}
		}
		for r := range lbd.NumRetireReasons {
			if v, ok := got["lbd.node.connection.retirements"][k(lbdotel.RetireReasonKey.String(r.String()))]; !ok || v != int64(n.RetiredBy[r]) {
				t.Errorf("%s retirements %s = %d (present %v), Stats %d", n.Addr, r, v, ok, n.RetiredBy[r])
			}
		}
		for cause := range lbd.NumTransitionCauses {
			cs := lbd.TransitionCause(cause).String()
			if v, ok := got["lbd.node.transitions"][k(lbdotel.TransitionCauseKey.String(cs))]; !ok || v != int64(n.TransitionsBy[cause]) {
				t.Errorf("%s transitions %s = %d (present %v), Stats %d", n.Addr, cs, v, ok, n.TransitionsBy[cause])
			}
		}
		// Probes run on while we read.
		if v := got["lbd.node.probes"][k()]; v < int64(b.Probes) || v > int64(n.Probes) {
			t.Errorf("%s probes %d, Stats %d..%d", n.Addr, v, b.Probes, n.Probes)
		}
		r, _ := registered.Node(n.Addr)
		if v := got["lbd.node.probe.duration"][k()]; v < int64(b.Probes-r.Probes)-1 || v > int64(n.Probes) {
			t.Errorf("%s probe durations %d, Stats %d-%d..%d", n.Addr, v, b.Probes, r.Probes, n.Probes)
		}
	}
	fatalPool, downPool := seq.Fatal+"/"+dbName, seq.Down+"/"+dbName
	if v := got["lbd.node.connection.retirements"][key(fatalPool, "127.0.0.1", portOf(t, seq.Fatal), lbdotel.RetireReasonKey.String("fatal"))]; v != 1 {
		t.Errorf("%s retired as fatal %d, want 1", seq.Fatal, v)
	}
	if v := got["lbd.node.transitions"][key(downPool, "127.0.0.1", portOf(t, seq.Down), lbdotel.TransitionCauseKey.String("probe"))]; v != 2 {
		t.Errorf("%s probe transitions %d, want 2 (down, up)", seq.Down, v)
	}
	if v := got["lbd.node.role"][key(downPool, "127.0.0.1", portOf(t, seq.Down), lbdotel.NodeRoleKey.String("unknown"))]; v != 1 {
		t.Errorf("%s lbd.node.role unknown = %d, want 1 (no role check)", seq.Down, v)
	}

	// After Close nothing more is reported.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := points(t, reader); len(got["lbd.node.dials"]) != 0 {
		t.Errorf("after Close the callback still reports: %v", got["lbd.node.dials"])
	}
}

// TestRoleGauge runs the role check (roleCheck=mysql) over a primary and a proxy turned
// replica: lbd.node.role is 1 for each node's role and 0 for the others.
func TestRoleGauge(t *testing.T) {
	cl, c := roleConnector(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(t.Context())
	m, err := lbdotel.Register(c, mp, lbdotel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RolePrimary)
	cl.Proxy(1).SetRole(lbdtest.Replica)
	clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RoleReplica)

	got, _ := points(t, reader)
	db := c.Config().MySQL.DBName
	for i, want := range []nodes.Role{nodes.RolePrimary, nodes.RoleReplica} {
		addr := cl.Proxy(i).Addr()
		for r := range nodes.Role(nodes.NumRoles) {
			w := int64(0)
			if r == want {
				w = 1
			}
			v, ok := got["lbd.node.role"][key(addr+"/"+db, "127.0.0.1", portOf(t, addr), lbdotel.NodeRoleKey.String(r.String()))]
			if !ok || v != w {
				t.Errorf("%s lbd.node.role %s = %d (present %v), want %d", addr, r, v, ok, w)
			}
		}
	}
	if n := len(got["lbd.node.role"]); n != 2*nodes.NumRoles {
		t.Errorf("%d lbd.node.role points, want %d", n, 2*nodes.NumRoles)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
