package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// syncBuffer is a bytes.Buffer safe for the server's logging goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &out, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	var c config
	var path string
	flagSet(&c, &path, io.Discard).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out.String(), "  -"+f.Name+" ") && !strings.Contains(out.String(), "  -"+f.Name+"\n") {
			t.Errorf("-h does not show -%s", f.Name)
		}
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("-%s has no description", f.Name)
		}
	})
	if !strings.Contains(out.String(), "onlineOfflineLoopbackOnly") {
		t.Error("-h does not describe the config file")
	}
}

func TestBadCommandLine(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-no-such-flag"}, &out, nil)
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("unknown flag: %v", err)
	}
	for _, args := range [][]string{
		{},
		{"-backend", "zookeeper"},
		{"-backend", "etcd"},
		{"-backend", "file"},
		{"-backend", "file", "-file", "x", "extra"},
		{"-backend", "file", "-file", "x", "-log-level", "loud"},
		{"-backend", "file", "-file", "x", "-log-format", "xml"},
		{"-backend", "etcd", "-etcd-endpoints", "127.0.0.1:1", "-etcd-cert", "c.pem"},
		{"-backend", "etcd", "-etcd-endpoints", "127.0.0.1:1", "-etcd-ca", "/nonexistent/ca.pem"},
		{"-backend", "etcd", "-etcd-endpoints", "127.0.0.1:1", "-etcd-password", "p", "-etcd-password-file", "f"},
		{"-config", "/nonexistent/config.yaml"},
	} {
		if err := run(context.Background(), args, io.Discard, func(_, _ net.Addr) { t.Errorf("%q started", args) }); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestConfigFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte(`
listen: 127.0.0.1:9999
adminListen: 127.0.0.1:9998
adminTokenFile: /etc/lbd/admin-token
reloadInterval: 5s
backend: etcd
etcd:
  endpoints: [127.0.0.1:2379, 127.0.0.2:2379]
  prefix: /cfg
  user: app
  dialTimeout: 2s
  refreshInterval: 30s
file:
  pollInterval: 5s
onlineOfflineLoopbackOnly: false
probe: {interval: 1m, concurrency: 4}
log: {level: debug, format: json}
`), 0o600)
	c, err := parseConfig([]string{"-config", path, "-listen", "127.0.0.1:7777", "-etcd-endpoints", "127.0.0.3:2379"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := defaults()
	want.Listen = "127.0.0.1:7777" // the flag wins
	want.AdminListen = "127.0.0.1:9998"
	want.AdminTokenFile = "/etc/lbd/admin-token"
	want.ReloadInterval = 5 * time.Second
	want.Backend = "etcd"
	want.Etcd.Endpoints = listValue{"127.0.0.3:2379"} // the flag wins
	want.Etcd.Prefix = "/cfg"
	want.Etcd.User = "app"
	want.Etcd.DialTimeout = 2 * time.Second
	want.Etcd.RefreshInterval = 30 * time.Second
	want.File.PollInterval = 5 * time.Second
	want.OnlineOfflineLoopbackOnly = false
	want.Probe.Interval = time.Minute
	want.Probe.Concurrency = 4
	want.Log.Level, want.Log.Format = "debug", "json"
	if fmt.Sprintf("%+v", c) != fmt.Sprintf("%+v", want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}

	os.WriteFile(path, []byte("listen: :1\nlisten_typo: 2\n"), 0o600)
	if _, err := parseConfig([]string{"-config", path}, io.Discard); err == nil || !strings.Contains(err.Error(), "listen_typo") {
		t.Fatalf("unknown key: %v", err)
	}
	os.WriteFile(path, []byte(`{"backend":"file","file":{"path":"/x.json"}}`), 0o600)
	if c, err := parseConfig([]string{"-config", path}, io.Discard); err != nil || c.File.Path != "/x.json" || c.Listen != ":8080" || c.AdminListen != "127.0.0.1:8081" {
		t.Fatalf("JSON config: %+v %v", c, err)
	}
}

func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "pw")
	os.WriteFile(pf, []byte("from-file\n"), 0o600)
	t.Setenv(passwordEnv, "from-env")
	cases := []struct {
		e    etcdConfig
		want string
	}{
		{etcdConfig{Password: "from-flag"}, "from-flag"},
		{etcdConfig{PasswordFile: pf}, "from-file"},
		{etcdConfig{}, "from-env"},
	}
	for _, c := range cases {
		if got, err := c.e.password(); err != nil || got != c.want {
			t.Errorf("%+v: %q %v", c.e, got, err)
		}
	}
}

// serveFor runs the command with args until the test ends, and returns the base URLs of its
// clients' and admin listeners (admin is "" without one). Unless args say otherwise, the admin
// listener takes a free loopback port.
func serveFor(t *testing.T, args []string, logs io.Writer) (base, admin string) {
	t.Helper()
	if !slices.Contains(args, "-admin-listen") {
		args = append(args, "-admin-listen", "127.0.0.1:0")
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan [2]net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, logs, func(p, a net.Addr) { addrc <- [2]net.Addr{p, a} }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return after cancel")
		}
	})
	select {
	case a := <-addrc:
		base = "http://" + a[0].String()
		if a[1] != nil {
			admin = "http://" + a[1].String()
		}
		return base, admin
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not serving")
	}
	return "", ""
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRunFileBackend(t *testing.T) {
	docs := filepath.Join(t.TempDir(), "schemas.json")
	os.WriteFile(docs, []byte(`[{"schema":"app","proxy":["127.0.0.1:2883"]}]`), 0o600)
	var logs syncBuffer
	base, _ := serveFor(t, []string{"-backend", "file", "-file", docs, "-listen", "127.0.0.1:0", "-probe-interval", "0", "-log-format", "json"}, &logs)
	if code, body := httpGet(t, base+"/fetch_sql_proxy_list?schema=app"); code != 200 || !strings.Contains(body, `"data":["127.0.0.1:2883"]`) {
		t.Fatalf("fetch: %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/health/status"); code != 200 || body != `{"code":200}` {
		t.Fatalf("status: %d %s", code, body)
	}
	if !strings.Contains(logs.String(), `"msg":"lbd-config-server serving"`) {
		t.Fatalf("no JSON start-up log:\n%s", logs.String())
	}
}

func TestRunEtcdBackend(t *testing.T) {
	// A real etcd on loopback.
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port())}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port())}
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(15 * time.Second):
		t.Fatal("etcd did not start")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cu.Host}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/lbd/schemas/app", `{"schema":"app","proxy":["127.0.0.1:2883"]}`); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	t.Setenv(passwordEnv, "") // no auth on this etcd
	base, _ := serveFor(t, []string{"-backend", "etcd", "-etcd-endpoints", cu.Host, "-listen", "127.0.0.1:0", "-etcd-refresh-interval", "1s", "-log-level", "debug"}, &logs)
	if code, body := httpGet(t, base+"/fetch_sql_proxy_list?schema=app"); code != 200 || !strings.Contains(body, `"data":["127.0.0.1:2883"]`) {
		t.Fatalf("fetch: %d %s", code, body)
	}
	if _, err := cli.Put(context.Background(), "/lbd/schemas/app", `{"schema":"app","proxy":["127.0.0.2:2883"]}`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, body := httpGet(t, base+"/fetch_sql_proxy_list?schema=app")
		if strings.Contains(body, "127.0.0.2:2883") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("change not followed: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPasswordNeverLogged starts against an unreachable etcd with a password from each source.
func TestPasswordNeverLogged(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	pf := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pf, []byte("file-secret-42"), 0o600)
	base := []string{"-backend", "etcd", "-etcd-endpoints", dead, "-etcd-user", "app", "-etcd-dial-timeout", "300ms", "-log-level", "debug"}
	for _, extra := range [][]string{{"-etcd-password", "flag-secret-42"}, {"-etcd-password-file", pf}} {
		var logs syncBuffer
		err := run(context.Background(), append(base, extra...), &logs, nil)
		if err == nil {
			t.Fatal("started against an unreachable etcd")
		}
		all := logs.String() + err.Error()
		if strings.Contains(all, "secret-42") {
			t.Errorf("password shown:\n%s", all)
		}
		if !strings.Contains(err.Error(), dead) {
			t.Errorf("error %q does not name the endpoint", err)
		}
	}
}
