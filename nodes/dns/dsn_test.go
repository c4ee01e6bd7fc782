package dns_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
)

func TestDSNErrors(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want string // in the error
	}{
		{"u:p@lbdns(proxies.test)/db", `"proxies.test" has no port`},
		{"u:p@lbdns(_mysql._tcp.proxies.test:3306)/db", "drop the :port"},
		{"u:p@lbdns(p.test:70000)/db", "70000"},
		{"u:p@lbdns(p.test:2883)/db?dnsServer=a:b:c", "dnsServer"},
		{"u:p@lbdns(p.test:2883)/db?dnsServer=", "dnsServer"},
		{"u:p@lbdns(p.test:2883)/db?dnsRefreshIntervalSeconds=0", "dnsRefreshIntervalSeconds"},
		{"u:p@lbdns(p.test:2883)/db?dnsTimeoutMillis=2s", "dnsTimeoutMillis"},
		{"u:p@lbdns(p.test:2883)/db?dnsserver=127.0.0.1", "dnsServer"},
	} {
		if _, err := lbd.NewConnector(c.dsn, lbd.WithLogger((&testkit.Logs{}).Logger())); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewConnector(%q) = %v, want an error mentioning %q", c.dsn, err, c.want)
		}
	}
}

func TestDSNParameters(t *testing.T) {
	cfg, err := lbd.ParseDSN("u:p@lbdns(p.test:2883,_mysql._tcp.q.test)/db?dnsServer=10.0.0.53&dnsTimeoutMillis=500&parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Network != "lbdns" || len(cfg.SourceAddrs) != 2 || cfg.SourceParams["dnsServer"] != "10.0.0.53" ||
		cfg.SourceParams["dnsTimeoutMillis"] != "500" || cfg.MySQL.Params != nil {
		t.Fatalf("parsed %+v, session parameters %v", cfg, cfg.MySQL.Params)
	}
}

// DNS records carry no role, so the split (whose writes need a primary) and target=primary or
// target=replica over lbdns with no role check can never be served: NewConnector refuses them,
// as it refuses a static list that names no role.
func TestRolesDNSCannotGiveAreRefused(t *testing.T) {
	for _, dsn := range []string{
		"u:p@lbdns(p.test:2883)/db?balance=statement&readWriteSplit=true",
		"u:p@lbdns(p.test:2883)/db?target=primary",
		"u:p@lbdns(p.test:2883)/db?target=replica",
	} {
		c, err := lbd.NewConnector(dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)))
		if c != nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "roleCheck") {
			t.Errorf("NewConnector(%q) = %v, want an error naming roleCheck", dsn, err)
		}
	}
	c, err := lbd.NewConnector("u:p@lbdns(p.test:2883)/db?balance=statement&readWriteSplit=true&roleCheck=mysql", lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("with a role check: %v", err)
	}
	c.Close()
}
