package remote

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

func TestConfigFromDSN(t *testing.T) {
	sc := func(params map[string]string, addrs ...string) nodes.SourceConfig {
		if len(addrs) == 0 {
			addrs = []string{"cs1:8080"}
		}
		return nodes.SourceConfig{Network: Network, Addrs: addrs, Params: params}
	}
	cfg, err := configFromDSN(sc(map[string]string{paramSchema: "im_user"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if s.Timeout != DefaultTimeout || s.PollInterval != DefaultPollInterval || s.AZRefreshInterval != DefaultAZRefreshInterval ||
		s.RecoverCheckCount != 2 || s.HealthTick != DefaultHealthTick || s.DisableCache || s.AZ != "" || s.IP != "" || s.APIKey != "" {
		t.Fatalf("defaults: %+v", s.Config)
	}

	cfg, err = configFromDSN(sc(map[string]string{
		paramSchema: "im_user", paramAPIKey: "k", paramTimeout: "1500", paramCacheDir: "/var/cache/x",
		paramPollInterval: "2", paramAZ: "az1", paramIP: "10.0.0.5", paramAZRefreshInterval: "60",
	}, "cs1:8080", "cs2"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Schema != "im_user" || cfg.APIKey != "k" || cfg.Timeout != 1500*time.Millisecond || cfg.CacheDir != "/var/cache/x" ||
		cfg.PollInterval != 2*time.Second || cfg.AZ != "az1" || cfg.IP != "10.0.0.5" || cfg.AZRefreshInterval != time.Minute ||
		len(cfg.Servers) != 2 {
		t.Fatalf("parsed %+v", cfg)
	}

	cfg, err = configFromDSN(sc(map[string]string{paramSchema: "s", paramCacheDir: ""}))
	if err != nil || !cfg.DisableCache {
		t.Fatalf("empty %s: %+v, %v; want the cache off", paramCacheDir, cfg, err)
	}

	for name, tc := range map[string]struct {
		params map[string]string
		addrs  []string
		want   string
	}{
		"no schema":      {params: map[string]string{}, want: paramSchema},
		"empty schema":   {params: map[string]string{paramSchema: " "}, want: paramSchema},
		"zero timeout":   {params: map[string]string{paramSchema: "s", paramTimeout: "0"}, want: paramTimeout},
		"bad timeout":    {params: map[string]string{paramSchema: "s", paramTimeout: "5s"}, want: paramTimeout},
		"bad poll":       {params: map[string]string{paramSchema: "s", paramPollInterval: "-1"}, want: paramPollInterval},
		"bad az refresh": {params: map[string]string{paramSchema: "s", paramAZRefreshInterval: "x"}, want: paramAZRefreshInterval},
		"bad server":     {params: map[string]string{paramSchema: "s"}, addrs: []string{"cs1:8080", ""}, want: "stray comma"},
	} {
		_, err := configFromDSN(sc(tc.params, tc.addrs...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, tc.want)
		}
	}
	cfg, _ = configFromDSN(sc(map[string]string{paramSchema: "s", paramIP: "10.0.0"}))
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "10.0.0") {
		t.Errorf("bad ip: %v", err)
	}
	if _, err := New(Config{Servers: []string{"a:1", "a:1"}, Schema: "s"}); err == nil {
		t.Error("a server listed twice was accepted")
	}
	if _, err := New(Config{Schema: "s"}); err == nil {
		t.Error("no server was accepted")
	}
	if _, err := New(Config{Servers: []string{"a:1"}, Schema: "s", Timeout: -1}); err == nil {
		t.Error("a negative timeout was accepted")
	}
}

// The DSN network end to end: the parameters reach the source and stay away from the
// proxies, the list follows the config-server, and Close leaves no goroutine behind.
func TestDSN(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	a := cl.Addrs()
	cs := newFakeCS(t)
	cs.setKey("dsn-key")
	cs.setList("im_user", a...)
	cs.setAZ("im_user", "az1", a[0], a[1])
	leaks := goleak.IgnoreCurrent()

	dsn := fmt.Sprintf("%s:%s@lbremote(%s,%s)/%s?configServerSchema=im_user&configServerApiKey=dsn-key"+
		"&configServerCacheDir=%s&configServerTimeout=500&configServerPollIntervalSeconds=1&az=az1&timeout=2s",
		cl.User(), cl.Password(), deadAddr(t), cs.addr(), cl.Database(), url.QueryEscape(t.TempDir()))
	cfg, err := lbd.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MySQL.Params) != 0 || cfg.SourceParams[paramAPIKey] != "dsn-key" {
		t.Fatalf("go-sql-driver params %v, source params %d", cfg.MySQL.Params, len(cfg.SourceParams))
	}
	logs := &logRecorder{}
	c, err := testkit.Started(lbd.NewConnector(dsn, fastOptions(logs)...))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	if got := c.Stats().Nodes; len(got) != 2 || got[0].Addr != a[0] || got[1].Addr != a[1] {
		t.Fatalf("nodes %+v, want the az1 set", got)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if strings.Contains(q, "configServer") || strings.Contains(q, "az") {
				t.Fatalf("a source parameter reached a proxy: %s", q)
			}
		}
	}
	cs.setAZ("im_user", "az1", a[0], a[1], a[2])
	waitFor(t, 10*time.Second, "the third proxy", func() bool { return isUp(c, a[2]) })
	if r := cs.requests()[0]; r.auth != "Bearer dsn-key" || r.query.Get("az") != "az1" {
		t.Fatalf("request %v, auth %q", r.query, r.auth)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, leaks)

	_, err = testkit.Started(lbd.NewConnector(strings.Replace(dsn, "configServerSchema=im_user&", "", 1), fastOptions(logs)...))
	if err == nil || !strings.Contains(err.Error(), paramSchema) {
		t.Fatalf("no schema: %v", err)
	}
}

func TestConfigHidesTheKey(t *testing.T) {
	cfg := Config{Servers: []string{"cs:1"}, Schema: "s", APIKey: "hidden-key"}
	logs := &logRecorder{}
	logs.logger().Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%v", &cfg), logs.all()[0]} {
		if strings.Contains(s, "hidden-key") || !strings.Contains(s, "cs:1") {
			t.Errorf("%s", s)
		}
	}
}

// A parameter of this network in the wrong letter case is a typo of it, not another network's.
func TestDSNParameterInOtherLetterCase(t *testing.T) {
	_, err := lbd.ParseDSN("u:p@lbremote(cs1:8080)/db?configServerSchema=s&configServerApikey=k")
	if err == nil || !strings.Contains(err.Error(), `did you mean "configServerApiKey"?`) || strings.Contains(err.Error(), "another network") {
		t.Fatalf("ParseDSN = %v, want did you mean configServerApiKey", err)
	}
}
