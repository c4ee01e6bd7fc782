package remote

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
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
