package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/configserver"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes/remote"
)

// The settings every scenario runs with. The probe interval and timeout are the shortest that
// stay reliable under the race detector on a small machine; the client polls faster than the
// Connector probes so that a change reaches it within a probe or two.
const (
	schema    = "e2e_app"
	prefix    = "/lbd/schemas"
	schemaKey = prefix + "/" + schema

	healthInterval  = 300 * time.Millisecond
	healthTimeout   = 300 * time.Millisecond
	balanceInterval = 300 * time.Millisecond
	pollInterval    = 200 * time.Millisecond
	requestTimeout  = time.Second // bound of one request to one config-server

	workers      = 8
	pace         = 5 * time.Millisecond
	stmtTimeout  = 2 * time.Second
	settleWithin = 10 * time.Second // deadline of every wait for the system to react
)

// ---- logs ----

// logCapture keeps every record as one line "LEVEL message k=v ..."; its lines are printed when
// the test fails.
type logCapture struct{ testkit.Logs }

func newLogCapture(t testing.TB, name string) *logCapture {
	lc := &logCapture{}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range lc.all() {
				t.Logf("[%s] %s", name, l)
			}
		}
	})
	return lc
}

func (lc *logCapture) logger() *slog.Logger { return lc.Logger() }

func (lc *logCapture) all() []string { return lc.Lines() }

// find returns the lines at level that contain every one of parts.
func (lc *logCapture) find(level slog.Level, parts ...string) []string {
	var out []string
	for _, l := range lc.all() {
		if !strings.HasPrefix(l, level.String()+" ") {
			continue
		}
		match := true
		for _, p := range parts {
			match = match && strings.Contains(l, p)
		}
		if match {
			out = append(out, l)
		}
	}
	return out
}

// ---- etcd ----

// etcdMember is a single-member etcd on loopback, with a client for the test's writes.
type etcdMember struct {
	t        testing.TB
	e        *embed.Etcd
	endpoint string
	client   *clientv3.Client
	once     sync.Once
	stopped  chan struct{}
}

// loopbackURL reserves a free loopback port and returns it as an http URL. The port is
// released before etcd binds it; nothing else on the machine competes for it in practice.
func loopbackURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// startEtcd starts a member and stops it at the end of the test.
func startEtcd(t testing.TB) *etcdMember {
	t.Helper()
	clientURL, peerURL := loopbackURL(t), loopbackURL(t)
	cfg := embed.NewConfig()
	cfg.Name = "e2e"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = 10, 100 // elected at once, closed quickly
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &etcdMember{t: t, e: e, endpoint: clientURL.Host, stopped: make(chan struct{})}
	t.Cleanup(func() {
		m.stop()
		<-m.stopped
	})
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(15 * time.Second):
		t.Fatal("etcd did not become ready")
	}
	m.client, err = clientv3.New(clientv3.Config{Endpoints: []string{m.endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stop takes the member down. Its listeners close at once; the rest of the shutdown (which
// waits a while for open watch streams) finishes in the background and is awaited at cleanup.
func (m *etcdMember) stop() {
	m.once.Do(func() {
		if m.client != nil {
			m.client.Close()
		}
		go func() {
			defer close(m.stopped)
			m.e.Close()
		}()
	})
}

// put writes value under key.
func (m *etcdMember) put(key, value string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.client.Put(ctx, key, value); err != nil {
		m.t.Fatalf("etcd put %s: %v", key, err)
	}
}

// document is the schema's lb-driver document listing proxies.
func document(proxies ...string) string {
	b, _ := json.Marshal(map[string]any{"schema": schema, "proxy": proxies})
	return string(b)
}

// ---- config-servers ----

// configServer is one lbd config-server over etcd, served over loopback HTTP. It can be stopped
// (its port refuses connections) or hung (connections are accepted, requests never answered),
// and counts the list requests it receives.
type configServer struct {
	srv  *configserver.Server
	hs   *httptest.Server
	addr string
	logs *logCapture

	fetches  atomic.Int64 // list requests received
	hung     atomic.Bool
	held     atomic.Int64 // requests held by the hang
	release  chan struct{}
	stopOnce sync.Once
}

func etcdBackend(t testing.TB, endpoint string, dialTimeout time.Duration, log *slog.Logger) *configserver.Etcd {
	t.Helper()
	be, err := configserver.NewEtcd(configserver.EtcdConfig{
		Endpoints:       []string{endpoint},
		Prefix:          prefix,
		DialTimeout:     dialTimeout,
		RefreshInterval: time.Second,
		Logger:          log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// startConfigServer starts a config-server following the etcd at endpoint; it is stopped at the
// end of the test.
func startConfigServer(t testing.TB, endpoint string) *configServer {
	t.Helper()
	cs := &configServer{logs: newLogCapture(t, "config-server"), release: make(chan struct{})}
	srv, err := configserver.New(context.Background(), configserver.Config{
		Backend:       etcdBackend(t, endpoint, time.Second, cs.logs.logger()),
		Logger:        cs.logs.logger(),
		ProbeInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	cs.srv = srv
	cs.hs = httptest.NewServer(http.HandlerFunc(cs.serve))
	cs.addr = strings.TrimPrefix(cs.hs.URL, "http://")
	t.Cleanup(func() {
		close(cs.release) // hung requests end before the HTTP server waits for them
		cs.stop()
		if err := srv.Close(); err != nil {
			t.Errorf("config-server Close: %v", err)
		}
	})
	return cs
}

func (cs *configServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/fetch_sql_proxy_list" {
		cs.fetches.Add(1)
	}
	if cs.hung.Load() {
		// As a frozen process: the connection is open, no byte comes back. The handler also
		// returns when the client hangs up, which the client cannot see, so that abandoned
		// requests do not pile up.
		cs.held.Add(1)
		select {
		case <-cs.release:
		case <-r.Context().Done():
		}
		panic(http.ErrAbortHandler) // drop the connection without an answer
	}
	cs.srv.ServeHTTP(w, r)
}

// stop closes the HTTP server: the port refuses connections from now on.
func (cs *configServer) stop() { cs.stopOnce.Do(cs.hs.Close) }

// hang makes every later request wait, unanswered, until the end of the test.
func (cs *configServer) hang() { cs.hung.Store(true) }

// served asks the config-server itself (not over the network, so the fault does not matter)
// for the schema's list as a client without md5 would.
func (cs *configServer) served(t testing.TB) (code int, list []string) {
	t.Helper()
	rec := httptest.NewRecorder()
	cs.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fetch_sql_proxy_list?schema="+schema, nil))
	var body struct {
		Code int      `json:"code"`
		Data []string `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("config-server answer %q: %v", rec.Body.String(), err)
	}
	return body.Code, body.Data
}

// waitPolls waits until the config-server has received n more list requests.
func (cs *configServer) waitPolls(t testing.TB, n int64) {
	t.Helper()
	from := cs.fetches.Load()
	testkit.WaitFor(t, settleWithin, fmt.Sprintf("%d more polls of %s", n, cs.addr), func() bool { return cs.fetches.Load() >= from+n })
}

// tryConfigServer starts (and at once closes) another config-server on the etcd at endpoint,
// returning New's error: what restarting a config-server now would do.
func tryConfigServer(t testing.TB, endpoint string) error {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	srv, err := configserver.New(context.Background(), configserver.Config{
		Backend: etcdBackend(t, endpoint, 500*time.Millisecond, log), Logger: log, ProbeInterval: -1,
	})
	if err == nil {
		srv.Close()
	}
	return err
}

// ---- the rig: etcd, config-servers, proxies ----

type rig struct {
	etcd    *etcdMember
	cluster *lbdtest.Cluster
	p       []string // proxy addresses; p[0] and p[1] are listed at start
	cs      []*configServer
}

// newRig starts etcd holding a document that lists the first two of nProxies proxies, and
// nServers config-servers following it.
func newRig(t testing.TB, nProxies, nServers int) *rig {
	t.Helper()
	r := &rig{etcd: startEtcd(t), cluster: lbdtest.NewCluster(t, nProxies)}
	r.p = r.cluster.Addrs()
	r.etcd.put(schemaKey, document(r.p[0], r.p[1]))
	for range nServers {
		r.cs = append(r.cs, startConfigServer(t, r.etcd.endpoint))
	}
	return r
}

func (r *rig) servers() []string {
	out := make([]string, len(r.cs))
	for i, cs := range r.cs {
		out[i] = cs.addr
	}
	return out
}

func (r *rig) setProxies(proxies ...string) { r.etcd.put(schemaKey, document(proxies...)) }

// ---- the application ----

// app is an application's *sql.DB over a Connector fed by the config-servers.
type app struct {
	db   *sql.DB
	conn *lbd.Connector
	logs *logCapture
}

// openApp builds a Connector whose nodes come from the config-servers at servers, with the
// disk cache in cacheDir; it returns NewConnector's error. The *sql.DB is closed at the end of
// the test.
func (r *rig) openApp(t testing.TB, servers []string, cacheDir string) (*app, error) {
	t.Helper()
	logs := newLogCapture(t, "app")
	src, err := remote.New(remote.Config{
		Servers:      servers,
		Schema:       schema,
		PollInterval: pollInterval,
		Timeout:      requestTimeout,
		CacheDir:     cacheDir,
		Logger:       logs.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("%s:%s@lb()/%s?timeout=2s&readTimeout=5s", r.cluster.User(), r.cluster.Password(), r.cluster.Database())
	c, err := testkit.Started(lbd.NewConnector(dsn,
		lbd.WithSource(src),
		lbd.WithLogger(logs.logger()),
		lbd.WithCheckHealthInterval(healthInterval),
		lbd.WithCheckHealthTimeout(healthTimeout),
		lbd.WithCheckBalanceInterval(balanceInterval),
		lbd.WithWarmup(0), // added proxies must take their share at once here; slow start has its own tests
	))
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(workers)
	t.Cleanup(func() { db.Close() })
	return &app{db: db, conn: c, logs: logs}, nil
}

// mustOpenApp is openApp failing the test on error.
func (r *rig) mustOpenApp(t testing.TB, servers []string, cacheDir string) *app {
	t.Helper()
	a, err := r.openApp(t, servers, cacheDir)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	return a
}

// nodes returns the addresses the Connector knows, sorted.
func (a *app) nodes() []string {
	var out []string
	for _, n := range a.conn.Stats().Nodes {
		out = append(out, n.Addr)
	}
	slices.Sort(out)
	return out
}

// serving reports whether addr is up and holds at least one pooled connection.
func (a *app) serving(addr string) bool {
	n, ok := a.conn.Stats().Node(addr)
	return ok && n.State == lbd.StateUp && n.Open > 0
}

// gone reports whether the Connector has forgotten addr (a drained node leaves Stats).
func (a *app) gone(addr string) bool {
	_, ok := a.conn.Stats().Node(addr)
	return !ok
}

// expectNodes fails the test unless the Connector knows exactly want, every one of them up.
func (a *app) expectNodes(t testing.TB, when string, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if got := a.nodes(); !slices.Equal(got, want) {
		t.Fatalf("%s: the Connector has nodes %v, want %v", when, got, want)
	}
	for _, n := range a.conn.Stats().Nodes {
		if n.State != lbd.StateUp {
			t.Fatalf("%s: node %s is %v, want up", when, n.Addr, n.State)
		}
	}
}

// run runs n statements one after the other and fails the test on the first error.
func (a *app) run(t testing.TB, n int) {
	t.Helper()
	for i := range n {
		if err := selectOne(a.db); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
}

func selectOne(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	var v int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		return err
	}
	if v != 1 {
		return fmt.Errorf("SELECT 1 returned %d", v)
	}
	return nil
}

// ---- workload ----

// startWorkload runs a checked SELECT 1 on several goroutines, paced, until the test ends.
func startWorkload(t testing.TB, db *sql.DB) *testkit.Workload {
	return testkit.StartWorkload(t, db, testkit.WorkloadConfig{Workers: workers, Pace: pace, Timeout: stmtTimeout})
}
