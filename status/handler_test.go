package status

import (
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

const password = "pw-must-not-show"

var discard = slog.New(slog.DiscardHandler)

// probeFails makes every probe of srv fail until the returned function is called.
func probeFails(srv *mysqlfake.Server) (heal func()) {
	return srv.AddFault(mysqlfake.Fault{Name: "command/close", Phase: mysqlfake.PhaseCommand, After: mysqlfake.Close,
		Bytes: mysqlfake.Raw(nil), Match: func(c mysqlfake.Command) bool { return strings.Contains(c.Text, "ping") }})
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestPageAndJSON(t *testing.T) {
	srvs := []*mysqlfake.Server{mysqlfake.Start(t, mysqlfake.Config{}), mysqlfake.Start(t, mysqlfake.Config{})}
	dsn := "app:" + password + "@lb(" + srvs[0].Addr() + "," + srvs[1].Addr() + ")/db?timeout=2s"
	c, err := lbd.NewConnector(dsn, lbd.WithCheckHealthInterval(20*time.Millisecond), lbd.WithCheckHealthTimeout(time.Second),
		lbd.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxIdleConns(4)
	for range 3 {
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	h, err := New(c, Options{SampleInterval: 100 * time.Millisecond, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, body := get(t, srv.URL+"/debug/lbd/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'sha256-") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("page CSP %q: want default-src 'none' and the script's hash", csp)
	}
	for _, bad := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(body, bad) {
			t.Fatalf("page refers to %q: it must load nothing from the network", bad)
		}
	}

	// Two samples at least, then the JSON matches Stats.
	testkit.WaitFor(t, 5*time.Second, "two samples", func() bool { return len(h.Report().History.Samples) >= 2 })
	_, js := get(t, srv.URL+"/?format=json")
	var r Report
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js)
	}
	st := c.Stats()
	if r.Balance != "connection" || len(r.Nodes) != 2 || r.Logical != st.Logical {
		t.Fatalf("report balance %q, %d nodes, logical %d; want connection, 2, %d", r.Balance, len(r.Nodes), r.Logical, st.Logical)
	}
	open := 0
	for i, n := range r.Nodes {
		if n.Addr != st.Nodes[i].Addr || n.Open != st.Nodes[i].Open || n.Dials != st.Nodes[i].Dials || n.State != "up" {
			t.Errorf("node %d: %+v, Stats %+v", i, n, st.Nodes[i])
		}
		if sn := st.Nodes[i]; n.Role != sn.Role.String() || n.Role != "unknown" || n.Weight != sn.Weight || n.Weight != 1 ||
			n.Warmup != sn.Warmup || n.EffectiveWeight != sn.EffectiveWeight || n.PassiveSignals != sn.PassiveSignals {
			t.Errorf("node %d: role %q weight %d warmup %v effective %v passive %d; Stats %v %d %v %v %d (no roleCheck: unknown, weight 1)",
				i, n.Role, n.Weight, n.Warmup, n.EffectiveWeight, n.PassiveSignals, sn.Role, sn.Weight, sn.Warmup, sn.EffectiveWeight, sn.PassiveSignals)
		}
		if len(n.TransitionsBy) != lbd.NumTransitionCauses || len(n.RetiredBy) != int(lbd.NumRetireReasons) {
			t.Errorf("node %d keys: transitions_by %v retired_by %v", i, n.TransitionsBy, n.RetiredBy)
		}
		open += n.Open
	}
	if open != 3 || r.History.Interval != 0.1 {
		t.Fatalf("open %d (want 3), history interval %v (want 0.1)", open, r.History.Interval)
	}
	if last := r.History.Samples[len(r.History.Samples)-1]; last.Open[srvs[0].Addr()]+last.Open[srvs[1].Addr()] != 3 {
		t.Fatalf("last sample %v: want 3 open in all", last.Open)
	}

	// A node down shows in its state and in the recent transitions, with its reason.
	heal := probeFails(srvs[1])
	testkit.WaitFor(t, 5*time.Second, "the node down in the report", func() bool {
		r := h.Report()
		return r.Nodes[1].State == "down" && len(r.Recent) > 0
	})
	heal()
	_, js = get(t, srv.URL+"/?format=json")
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	tr := r.Recent[0]
	if tr.Node != srvs[1].Addr() || tr.From != "up" || tr.To != "down" || tr.Cause != "probe" || !strings.Contains(tr.Reason, "probe failed") {
		t.Fatalf("recent[0] = %+v, want %s up→down by probe", tr, srvs[1].Addr())
	}
	for _, b := range []string{body, js} {
		if strings.Contains(b, password) {
			t.Fatalf("the status page shows the password:\n%s", b)
		}
	}
	nodestest.NoSecrets(t, "Report", h.Report(), srvs[0].Addr(), []string{password})

	// Read-only, and a wrong format is named.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	if resp, body := get(t, srv.URL+"/?format=xml"); resp.StatusCode != 400 || !strings.Contains(body, "format=json") {
		t.Errorf("format=xml: %d %q", resp.StatusCode, body)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	c, err := lbd.NewConnector("u:p@lb(127.0.0.1:1)/db", lbd.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, o := range []Options{{SampleInterval: time.Millisecond}, {SampleInterval: time.Second, Window: time.Millisecond},
		{SampleInterval: time.Second, Window: 100 * time.Hour}} {
		if h, err := New(c, o); err == nil {
			h.Close()
			t.Errorf("New(%+v) accepted", o)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) accepted")
	}
	h, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	h.Close() // idempotent
}

// TestHistoryKeepsTheLatest fills the ring past its size: the oldest samples go, the rest stay
// in order.
func TestHistoryKeepsTheLatest(t *testing.T) {
	h := newHistory(3)
	t0 := time.Unix(1000, 0)
	for i := range 5 {
		h.add(lbd.Stats{Nodes: []lbd.NodeStats{{Addr: "a:1", Open: i}}}, t0.Add(time.Duration(i)*time.Second))
	}
	got := h.list()
	if len(got) != 3 {
		t.Fatalf("%d samples kept, want 3", len(got))
	}
	for i, s := range got {
		if want := i + 2; s.Open["a:1"] != want || !s.At.Equal(t0.Add(time.Duration(want)*time.Second)) {
			t.Errorf("sample %d = %+v, want the one with %d open", i, s, want)
		}
	}
}

// TestReportCarriesRolesAndWeights turns a Stats snapshot with a role, a failing role check, a
// warming node and a role change into the document, and reads back its JSON names.
func TestReportCarriesRolesAndWeights(t *testing.T) {
	at := time.Unix(1000, 0).UTC()
	st := lbd.Stats{
		Nodes: []lbd.NodeStats{
			{Addr: "a:1", Role: nodes.RoleReplica, Weight: 10, Warmup: 0.25, EffectiveWeight: 2.5, PassiveSignals: 3},
			{Addr: "b:1", Role: nodes.RoleUnknown, RoleError: "role check: access denied", Weight: 1, Warmup: 1, EffectiveWeight: 1},
		},
		Recent: []lbd.Transition{{At: at, Node: "a:1", From: lbd.StateUp, To: lbd.StateUp, Cause: lbd.CauseRole,
			Reason: "role changed", RoleFrom: nodes.RolePrimary, RoleTo: nodes.RoleReplica}},
	}
	b, err := json.Marshal(report(st, at, 0, DefaultPageSize))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nodes  []map[string]any `json:"nodes"`
		Recent []map[string]any `json:"recent"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for i, want := range []map[string]any{
		{"role": "replica", "role_error": "", "weight": 10.0, "warmup": 0.25, "effective_weight": 2.5, "passive_signals": 3.0},
		{"role": "unknown", "role_error": "role check: access denied", "weight": 1.0, "warmup": 1.0, "effective_weight": 1.0, "passive_signals": 0.0},
	} {
		for k, v := range want {
			if got, ok := doc.Nodes[i][k]; !ok || got != v {
				t.Errorf("nodes[%d].%s = %v (present %v), want %v", i, k, got, ok, v)
			}
		}
	}
	if r := doc.Recent[0]; r["cause"] != "role" || r["role_from"] != "primary" || r["role_to"] != "replica" {
		t.Errorf("recent[0] = %v, want cause role, primary to replica", r)
	}
}

// TestJSONBoundedWithHugeErrorMessage has a proxy answer the probe with an 8 MiB ERR message:
// a poll of the JSON report stays small, and carries the message cut to lbd.MaxErrorMessage.
func TestJSONBoundedWithHugeErrorMessage(t *testing.T) {
	huge := "hostile " + strings.Repeat("x", 8<<20)
	hostile := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		if strings.Contains(q, "ping") {
			return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1105, State: "HY000", Message: huge}}
		}
		return mysqlfake.DefaultAnswer(q)
	}})
	healthy := mysqlfake.Start(t, mysqlfake.Config{})
	c, err := lbd.NewConnector("app:"+password+"@lb("+hostile.Addr()+","+healthy.Addr()+")/db?timeout=2s",
		lbd.WithCheckHealthInterval(2*time.Second), lbd.WithCheckHealthTimeout(2*time.Second), lbd.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	h, err := New(c, Options{SampleInterval: 100 * time.Millisecond, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	testkit.WaitFor(t, 10*time.Second, "the hostile node down in the report", func() bool {
		r := h.Report()
		return r.Nodes[0].State == "down" && len(r.Recent) > 0
	})
	_, js := get(t, srv.URL+"/?format=json")
	if len(js) > 16<<10 {
		t.Fatalf("the JSON report is %d bytes; want it bounded (a proxy's message is kept to %d bytes)", len(js), lbd.MaxErrorMessage)
	}
	var r Report
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if n := r.Nodes[0]; !strings.Contains(n.LastError, "hostile xxx") || len(n.LastError) > 2*lbd.MaxErrorMessage {
		t.Errorf("last_error is %d bytes: %.80q; want the probe's error, cut", len(n.LastError), n.LastError)
	}
	if tr := r.Recent[0]; !strings.Contains(tr.Reason, "hostile xxx") || len(tr.Reason) > 2*lbd.MaxErrorMessage {
		t.Errorf("recent[0].reason is %d bytes: %.80q; want the probe's error, cut", len(tr.Reason), tr.Reason)
	}
}
