package dns

import (
	"fmt"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Network is the DSN network this package registers:
// user:pass@lbdns(proxies.example:2883)/db or user:pass@lbdns(_mysql._tcp.proxies.example)/db.
const Network = "lbdns"

// The DSN parameters the source reads; the package documentation describes them.
const (
	paramRefreshInterval = "dnsRefreshIntervalSeconds"
	paramTimeout         = "dnsTimeoutMillis"
	paramServer          = "dnsServer"
)

func init() {
	nodes.Register(Network, nodes.SourceFactory{
		Params: []string{paramRefreshInterval, paramTimeout, paramServer},
		New: func(sc nodes.SourceConfig) (nodes.Source, error) {
			cfg, err := configFromDSN(sc)
			if err != nil {
				return nil, err
			}
			return New(cfg)
		},
		NoRoles: true, // SRV and A/AAAA records name proxies, never their roles
	})
}

// configFromDSN turns the DSN's names and parameters into a Config; errors name the entry or
// the parameter at fault.
func configFromDSN(sc nodes.SourceConfig) (Config, error) {
	cfg := Config{Names: sc.Addrs, Logger: sc.Logger, Clock: sc.Clock}
	for _, raw := range sc.Addrs {
		if _, err := parseEntry(raw); err != nil {
			return cfg, fmt.Errorf("lbd: %s(...) entry %q %v", Network, raw, err)
		}
	}
	p := sc.Params
	if v, set := p[paramServer]; set {
		addr, err := serverAddr(v)
		if err != nil {
			return cfg, fmt.Errorf("lbd: invalid DSN parameter %s=%q: %v", paramServer, v, err)
		}
		cfg.Server = addr
	}
	var err error
	if cfg.RefreshInterval, err = sc.Duration(paramRefreshInterval, time.Second); err != nil {
		return cfg, err
	}
	if cfg.Timeout, err = sc.Duration(paramTimeout, time.Millisecond); err != nil {
		return cfg, err
	}
	return cfg, nil
}
