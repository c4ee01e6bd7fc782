package metricstest

import (
	"bytes"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
	"github.com/lbd-go/lbd/nodes"
)

// setup runs the scripted sequence over a two-proxy cluster with a Collector registered from
// the start, next to database/sql's own collector. registered is the Stats taken just after
// the Collector was (probes before it are not in the histograms).
func setup(t *testing.T) (reg *prometheus.Registry, c *lbd.Connector, seq clusterkit.Sequence, registered lbd.Stats) {
	cl := lbdtest.NewCluster(t, 2)
	var err error
	c, err = lbd.NewConnector(cl.DSN(""), append(clusterkit.SequenceOptions(), lbd.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	col := lbdprom.NewCollector(c, lbdprom.Options{ConstLabels: prometheus.Labels{"db_name": "test"}})
	t.Cleanup(col.Close)
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(col, collectors.NewDBStatsCollector(db, "test"))
	registered = c.Stats()
	return reg, c, clusterkit.RunSequence(t, cl, db, c), registered
}

// TestCollectorShowsRoles runs the role check (roleCheck=mysql) over a primary and a proxy
// turned replica: lbd_node_info carries each node's role, one series per node, and the
// switchover is counted as a role transition.
func TestCollectorShowsRoles(t *testing.T) {
	cl, c := roleConnector(t)
	col := lbdprom.NewCollector(c, lbdprom.Options{})
	defer col.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RolePrimary)
	cl.Proxy(1).SetRole(lbdtest.Replica)
	clusterkit.WaitRoles(t, c, nodes.RolePrimary, nodes.RoleReplica)

	got := series(t, reg)
	first, second := "node="+cl.Proxy(0).Addr(), "node="+cl.Proxy(1).Addr()
	if info := got["lbd_node_info"]; len(info) != 2 || info[first+",role=primary"] != 1 || info[second+",role=replica"] != 1 {
		t.Errorf("lbd_node_info %v: want %s primary and %s replica, one series each", info, first, second)
	}
	if v := got["lbd_node_transitions_total"]["cause=role,"+second]; v != 2 {
		t.Errorf("%s: %v role transitions, want 2 (unknown to primary, primary to replica)", second, v)
	}
}

// series gathers reg into name → labels ("k=v,k=v" sorted by name, db_name left out) → value; a
// histogram's value is its sample count.
func series(t *testing.T, reg prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		m := map[string]float64{}
		for _, metric := range mf.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				if l.GetName() != "db_name" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			m[strings.Join(labels, ",")] = value(mf.GetType(), metric)
		}
		out[mf.GetName()] = m
	}
	return out
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// TestCollectorMatchesStats checks every series against Stats after the scripted sequence:
// dials, a fatal error, a node down and up again.
func TestCollectorMatchesStats(t *testing.T) {
	reg, c, seq, registered := setup(t)
	before := c.Stats()
	got := series(t, reg)
	after := c.Stats()

	if v := got["lbd_logical_connections"][""]; v != float64(after.Logical) || v != float64(seq.Held) {
		t.Errorf("lbd_logical_connections %v, Stats %d, held %d", v, after.Logical, seq.Held)
	}
	if v := got["go_sql_open_connections"][""]; v != float64(after.Logical) {
		t.Errorf("go_sql_open_connections %v, lbd's Logical %d: in connection mode they are the same", v, after.Logical)
	}
	for _, n := range after.Nodes {
		node := "node=" + n.Addr
		for name, want := range map[string]float64{
			"lbd_node_up":                    b2f(n.State == lbd.StateUp),
			"lbd_node_standby":               b2f(n.Standby),
			"lbd_node_open_connections":      float64(n.Open),
			"lbd_node_idle_connections":      float64(n.Idle),
			"lbd_node_in_use_connections":    float64(n.InUse),
			"lbd_node_dials_total":           float64(n.Dials),
			"lbd_node_dial_failures_total":   float64(n.DialFailures),
			"lbd_node_fatal_errors_total":    float64(n.FatalErrors),
			"lbd_node_weight":                float64(n.Weight),
			"lbd_node_passive_signals_total": float64(n.PassiveSignals),
		} {
			if v, ok := got[name][node]; !ok || v != want {
				t.Errorf("%s{%s} = %v (present %v), Stats %v", name, node, v, ok, want)
			}
		}
		for _, s := range []lbd.NodeState{lbd.StateUp, lbd.StateDown, lbd.StateDraining} {
			if v := got["lbd_node_state"][node+",state="+s.String()]; v != b2f(n.State == s) {
				t.Errorf("lbd_node_state{%s,state=%s} = %v, node is %v", node, s, v, n.State)
			}
		}
		// One info series per node, labelled with the role Stats gives.
		for r := range nodes.Role(nodes.NumRoles) {
			v, ok := got["lbd_node_info"][node+",role="+r.String()]
			if want := r == n.Role; ok != want || (ok && v != 1) {
				t.Errorf("lbd_node_info{%s,role=%s} = %v (present %v), Stats role %v", node, r, v, ok, n.Role)
			}
		}
		// Warm-up moves on with the clock while we read: the scrape lies between the snapshots.
		b, _ := before.Node(n.Addr)
		for name, rng := range map[string][2]float64{
			"lbd_node_warmup_ratio":     {b.Warmup, n.Warmup},
			"lbd_node_effective_weight": {b.EffectiveWeight, n.EffectiveWeight},
		} {
			if v, ok := got[name][node]; !ok || v < rng[0] || v > rng[1] {
				t.Errorf("%s{%s} = %v (present %v), Stats %v..%v", name, node, v, ok, rng[0], rng[1])
			}
		}
		for r := range lbd.NumRetireReasons {
			key := node + ",reason=" + r.String()
			if v, ok := got["lbd_node_retired_connections_total"][key]; !ok || v != float64(n.RetiredBy[r]) {
				t.Errorf("retired{%s} = %v (present %v), Stats %d", key, v, ok, n.RetiredBy[r])
			}
		}
		for cause := range lbd.NumTransitionCauses {
			key := "cause=" + lbd.TransitionCause(cause).String() + "," + node // labels sort by name
			if v, ok := got["lbd_node_transitions_total"][key]; !ok || v != float64(n.TransitionsBy[cause]) {
				t.Errorf("transitions{%s} = %v (present %v), Stats %d", key, v, ok, n.TransitionsBy[cause])
			}
		}
		// Probes run on while we read: the scrape lies between the two snapshots, and the
		// histogram is told of a probe just after the table counts it.
		probes, hist := got["lbd_node_probes_total"][node], got["lbd_node_probe_duration_seconds_count"][node]
		if hist == 0 {
			hist = got["lbd_node_probe_duration_seconds"][node]
		}
		if probes < float64(b.Probes) || probes > float64(n.Probes) {
			t.Errorf("probes_total{%s} = %v, Stats %d..%d", node, probes, b.Probes, n.Probes)
		}
		r, _ := registered.Node(n.Addr)
		if hist < float64(b.Probes-r.Probes)-1 || hist > float64(n.Probes) {
			t.Errorf("probe histogram count{%s} = %v, Stats %d-%d..%d", node, hist, b.Probes, r.Probes, n.Probes)
		}
		if pf := got["lbd_node_probe_failures_total"][node]; pf < float64(b.ProbeFailures) || pf > float64(n.ProbeFailures) {
			t.Errorf("probe_failures_total{%s} = %v, Stats %d..%d", node, pf, b.ProbeFailures, n.ProbeFailures)
		}
		if dials := got["lbd_node_dial_duration_seconds"][node]; dials != float64(n.Dials+n.DialFailures) {
			t.Errorf("dial histogram count{%s} = %v, want dials %d + failures %d", node, dials, n.Dials, n.DialFailures)
		}
	}

	// What the sequence did, as the series say it.
	fatal, down := "node="+seq.Fatal, "node="+seq.Down
	if got["lbd_node_fatal_errors_total"][fatal] != 1 || got["lbd_node_retired_connections_total"][fatal+",reason=fatal"] != 1 {
		t.Errorf("%s: fatal errors %v, retired as fatal %v; want 1 and 1", seq.Fatal,
			got["lbd_node_fatal_errors_total"][fatal], got["lbd_node_retired_connections_total"][fatal+",reason=fatal"])
	}
	if got["lbd_node_transitions_total"]["cause=probe,"+down] != 2 || got["lbd_node_up"][down] != 1 {
		t.Errorf("%s: probe transitions %v, up %v; want 2 (down, up) and 1", seq.Down,
			got["lbd_node_transitions_total"]["cause=probe,"+down], got["lbd_node_up"][down])
	}
	if got["lbd_node_info"][fatal+",role=unknown"] != 1 || got["lbd_node_info"][down+",role=unknown"] != 1 {
		t.Errorf("lbd_node_info %v: want both nodes of role unknown (no role check)", got["lbd_node_info"])
	}
	if got["lbd_node_retired_connections_total"][down+",reason=node_down"] < 1 {
		t.Errorf("%s: no connection retired as node_down", seq.Down)
	}
	if got["lbd_node_dials_total"][fatal]+got["lbd_node_dials_total"][down] < 5 {
		t.Errorf("dials %v: want the four of the sequence, the replacement after the fatal error's and the held ones", got["lbd_node_dials_total"])
	}

	if problems, err := testutil.CollectAndLint(lbdprom.NewCollector(c, lbdprom.Options{})); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestPromtoolChecksScrape scrapes the Collector over HTTP, as Prometheus would, and has
// promtool check the exposition (Debian package prometheus).
func TestPromtoolChecksScrape(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LBD_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool not found and LBD_REQUIRE_PROMTOOL is set")
		}
		t.Skip("promtool not found: install Debian's prometheus package (apt-get install prometheus) to run this check")
	}
	reg, _, _, _ := setup(t)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lbd_node_probe_duration_seconds_bucket", "lbd_node_retired_connections_total", "go_sql_open_connections"} {
		if !bytes.Contains(scrape, []byte(name)) {
			t.Fatalf("scrape lacks %s:\n%s", name, scrape)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, scrape)
	}
}

// b2f is a gauge's value for a flag: 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
