package configserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// testEtcd is a single-member etcd on loopback that can be stopped and started again on the
// same ports and data.
type testEtcd struct {
	t                  *testing.T
	dir                string
	clientURL, peerURL url.URL
	e                  *embed.Etcd
	stopped            chan struct{}    // closed when the last stop finished
	client             *clientv3.Client // the test's own client, for writing
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startEtcd(t *testing.T) *testEtcd {
	t.Helper()
	te := &testEtcd{t: t, dir: t.TempDir()}
	te.clientURL = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	te.peerURL = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	te.start()
	t.Cleanup(func() {
		te.stop()
		<-te.stopped
	})
	return te
}

func (te *testEtcd) endpoint() string { return te.clientURL.Host }

// start starts the member, after the last stop has finished, and connects a new client (the old
// one would wait out its reconnection backoff).
func (te *testEtcd) start() {
	te.t.Helper()
	if te.stopped != nil {
		<-te.stopped
	}
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = te.dir
	cfg.ListenClientUrls = []url.URL{te.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{te.clientURL}
	cfg.ListenPeerUrls = []url.URL{te.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{te.peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = 10, 100 // a quick election, and a quicker Close
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		te.t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(15 * time.Second):
		e.Close()
		te.t.Fatal("etcd did not start")
	}
	te.e = e
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{te.endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		te.t.Fatal(err)
	}
	te.client = c
}

// stop stops the member in the background: its listeners close at once, but Close waits some
// seconds for the open watch streams before cutting them.
func (te *testEtcd) stop() {
	if te.e == nil {
		return
	}
	te.client.Close()
	e, done := te.e, make(chan struct{})
	te.e, te.stopped = nil, done
	go func() {
		defer close(done)
		e.Close()
	}()
}

func (te *testEtcd) put(key, value string) {
	te.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := te.client.Put(ctx, key, value); err != nil {
		te.t.Fatal(err)
	}
}

func (te *testEtcd) del(key string) {
	te.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := te.client.Delete(ctx, key); err != nil {
		te.t.Fatal(err)
	}
}

func (te *testEtcd) backend(t *testing.T, mod func(*EtcdConfig)) (*Etcd, *slog.Logger, *logBuffer) {
	t.Helper()
	log, lb := newLogger(t)
	cfg := EtcdConfig{
		Endpoints:       []string{te.endpoint()},
		Prefix:          "/lbd/schemas/",
		DialTimeout:     time.Second,
		RefreshInterval: 200 * time.Millisecond,
		Logger:          log,
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := NewEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, log, lb
}

const (
	keyA = "/lbd/schemas/app_a"
	keyB = "/lbd/schemas/app_b"
	keyC = "/lbd/schemas/app_c"
)

func TestEtcdBackend(t *testing.T) {
	t.Parallel()
	te := startEtcd(t)
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.2:2883","127.0.0.1:2883"]}`)
	te.put(keyB, `{"schema":"app_b","auth.enable":true,"api.keys":["kb"],"proxy":["127.0.0.1:2883"]}`)
	te.put("/lbd/other/app_x", `not even JSON: outside the prefix`)
	be, log, lb := te.backend(t, nil)
	s, hs, _ := startServerLogged(t, be, log, lb, nil)

	a := &javaClient{base: hs.URL, schema: "app_a"}
	b := &javaClient{base: hs.URL, schema: "app_b", key: "kb"}
	c := &javaClient{base: hs.URL, schema: "app_c"}
	if r := a.fetch(t); !slices.Equal(r.Data, []string{"127.0.0.1:2883", "127.0.0.2:2883"}) {
		t.Fatalf("a: %s", r.raw)
	}
	if r := b.fetch(t); r.Code != 200 {
		t.Fatalf("b: %s", r.raw)
	}
	within := func(what string, cond func() bool) { t.Helper(); eventually(t, 10*time.Second, what, cond) }

	// Added, changed, deleted.
	te.put(keyC, `{"schema":"app_c","proxy":["127.0.0.3:2883"]}`)
	within("new key served", func() bool { return c.fetch(t).Code == 200 })
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.4:2883"]}`)
	within("changed key served", func() bool { return slices.Equal(a.fetch(t).Data, []string{"127.0.0.4:2883"}) })
	te.del(keyB)
	within("deleted key no longer served", func() bool { return b.fetch(t).raw == `{"code":404}` })

	// Invalid JSON: rejected with one clear log line, the last good document stays.
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.5:2883"]`)
	within("rejection logged", func() bool { return len(lb.lines("document rejected", keyA)) > 0 })
	fullReads := func(n int) { // the periodic full read, run here so that it surely ran n times
		for range n {
			be.mu.Lock()
			_ = be.refresh(context.Background())
			be.mu.Unlock()
		}
	}
	fullReads(3) // of the same bad value
	if got := lb.lines("document rejected", keyA); len(got) != 1 || !strings.Contains(got[0], "not valid JSON") || !strings.Contains(got[0], "previous document") {
		t.Fatalf("want one clear line for the bad JSON, got %q", got)
	}
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("last good document not kept: %s", r.raw)
	}

	// One proxy entry wrong: the document is rejected whole, the last good one stays.
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.5:2883","127.0.0.6"]}`)
	within("bad entry logged", func() bool { return len(lb.lines("document rejected", keyA, "127.0.0.6")) == 1 })
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("document with a bad entry served: %s", r.raw)
	}
	// Wrong schema for the key, and all entries wrong, are rejected too.
	te.put(keyA, `{"schema":"app_z","proxy":["127.0.0.5:2883"]}`)
	within("schema mismatch logged", func() bool { return len(lb.lines("document rejected", keyA, "app_z")) == 1 })
	te.put(keyA, `{"schema":"app_a","proxy":["a","b"]}`)
	within("all entries wrong logged", func() bool { return len(lb.lines("document rejected", keyA, `\"a\"`)) == 1 })
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("rejected documents changed the answer: %s", r.raw)
	}
	// A new key with an invalid document is logged and not served.
	te.put("/lbd/schemas/app_d", `{"schema":"app_d","proxy":[]}`)
	within("invalid new key logged", func() bool {
		l := lb.lines("document rejected", "app_d")
		return len(l) == 1 && strings.Contains(l[0], "nothing")
	})
	if r := (&javaClient{base: hs.URL, schema: "app_d"}).fetch(t); r.raw != `{"code":404}` {
		t.Fatalf("invalid new document served: %s", r.raw)
	}
	// Fixed: served again.
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.7:2883"]}`)
	within("fixed document served", func() bool { return slices.Equal(a.fetch(t).Data, []string{"127.0.0.7:2883"}) })

	// etcd down: everything keeps being served; logged once.
	te.stop()
	within("etcd down logged", func() bool { return len(lb.lines("cannot read etcd")) > 0 })
	fullReads(1) // one more failed one
	if n := len(lb.lines("cannot read etcd")); n != 1 {
		t.Errorf("etcd down logged %d times:\n%s", n, lb)
	}
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("etcd down: %s", r.raw)
	}
	if r := c.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("etcd down: %s", r.raw)
	}
	if r := reload(t, s); r.raw != `{"code":500}` {
		t.Fatalf("/reload with etcd down: %s", r.raw)
	}
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("after a failed /reload: %s", r.raw)
	}

	// etcd back: changes are followed again.
	te.start()
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.8:2883"]}`)
	within("change after restart followed", func() bool { return slices.Equal(a.fetch(t).Data, []string{"127.0.0.8:2883"}) })
	within("recovery logged", func() bool { return len(lb.lines("etcd readable again")) == 1 })
	te.del(keyC)
	within("delete after restart followed", func() bool { return c.fetch(t).raw == `{"code":404}` })
	if r := reload(t, s); r.raw != `{"code":200}` {
		t.Fatalf("/reload: %s", r.raw)
	}
}

// TestEtcdWatchOnly checks that the watch alone follows changes (the full read is far away).
func TestEtcdWatchOnly(t *testing.T) {
	t.Parallel()
	te := startEtcd(t)
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.1:2883"]}`)
	be, log, lb := te.backend(t, func(c *EtcdConfig) { c.RefreshInterval = time.Hour })
	_, hs, _ := startServerLogged(t, be, log, lb, nil)
	a := &javaClient{base: hs.URL, schema: "app_a"}
	a.fetch(t)
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.2:2883"]}`)
	eventually(t, 5*time.Second, "watch followed a change", func() bool { return slices.Equal(a.fetch(t).Data, []string{"127.0.0.2:2883"}) })
	te.del(keyA)
	eventually(t, 5*time.Second, "watch followed a delete", func() bool { return a.fetch(t).raw == `{"code":404}` })

	// The watch resumes by itself after etcd restarts.
	te.stop()
	te.start()
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.3:2883"]}`)
	eventually(t, 10*time.Second, "watch followed a change after a restart", func() bool {
		return slices.Equal(a.fetch(t).Data, []string{"127.0.0.3:2883"})
	})
}

func TestEtcdStartFailures(t *testing.T) {
	t.Parallel()
	te := startEtcd(t)
	te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.1:2883"]}`)
	te.put(keyB, `{"schema":"app_b","proxy":["127.0.0.1:2883","127.0.0.1"]}`)
	be, _, _ := te.backend(t, nil)
	_, err := New(context.Background(), Config{Backend: be, ProbeInterval: -1})
	if err == nil || !strings.Contains(err.Error(), keyB) || !strings.Contains(err.Error(), `"127.0.0.1" is not host:port`) {
		t.Fatalf("bad document at start: %v", err)
	}
	te.put(keyB, `{"schema":"app_b","proxy":["127.0.0.1:2883"]`)
	be, _, _ = te.backend(t, nil)
	if _, err = New(context.Background(), Config{Backend: be, ProbeInterval: -1}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("invalid JSON at start: %v", err)
	}
	te.put(keyB, `{"schema":"app_a","proxy":["127.0.0.1:2883"]}`)
	be, _, _ = te.backend(t, nil)
	if _, err = New(context.Background(), Config{Backend: be, ProbeInterval: -1}); err == nil || !strings.Contains(err.Error(), "stored under") {
		t.Fatalf("schema mismatch at start: %v", err)
	}

	// etcd unreachable at start.
	be, _, _ = te.backend(t, func(c *EtcdConfig) { c.Endpoints = []string{closedAddr(t)}; c.DialTimeout = 300 * time.Millisecond })
	if _, err = New(context.Background(), Config{Backend: be, ProbeInterval: -1}); err == nil || !strings.Contains(err.Error(), "reading") {
		t.Fatalf("etcd down at start: %v", err)
	}
}

func TestEtcdConfigErrors(t *testing.T) {
	bad := []EtcdConfig{
		{Prefix: "/p"},
		{Endpoints: []string{"127.0.0.1:2379"}},
		{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/"},
		{Endpoints: []string{""}, Prefix: "/p"},
		{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/p", Username: "u"},
		{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/p", Password: "secret"},
		{Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/p", DialTimeout: -1},
	}
	for _, c := range bad {
		if _, err := NewEtcd(c); err == nil {
			t.Errorf("accepted %+v", c)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	log, lb := newLogger(t)
	log.Info("config", "etcd", EtcdConfig{Endpoints: []string{"h:1"}, Prefix: "/p", Username: "u", Password: "hunter2"})
	if strings.Contains(lb.String(), "hunter2") || !strings.Contains(lb.String(), "password_set=true") {
		t.Errorf("logged config: %s", lb)
	}
}
