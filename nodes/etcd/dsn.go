package etcd

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Network is the DSN network this package registers:
// user:pass@lbetcd(etcd1:2379,etcd2:2379)/db?etcdKey=%2Flbd%2Fschemas%2Fdb.
const Network = "lbetcd"

// The DSN parameters the source reads; the package documentation describes them.
const (
	paramKey             = "etcdKey"
	paramUser            = "etcdUser"
	paramPassword        = "etcdPassword"
	paramTLS             = "etcdTLS"
	paramDialTimeout     = "etcdDialTimeoutMillis"
	paramRefreshInterval = "etcdRefreshIntervalSeconds"
)

func init() {
	nodes.Register(Network, nodes.SourceFactory{
		Params:  []string{paramKey, paramUser, paramPassword, paramTLS, paramDialTimeout, paramRefreshInterval},
		Secrets: []string{paramPassword},
		New: func(sc nodes.SourceConfig) (nodes.Source, error) {
			cfg, err := configFromDSN(sc)
			if err != nil {
				return nil, err
			}
			return New(cfg)
		},
	})
}

// configFromDSN turns the DSN's endpoints and parameters into a Config. Errors name the
// parameter and, except for the password, show the value.
func configFromDSN(sc nodes.SourceConfig) (Config, error) {
	p := sc.Params
	cfg := Config{
		Endpoints: sc.Addrs,
		Key:       p[paramKey],
		Username:  p[paramUser],
		Password:  p[paramPassword],
		Logger:    sc.Logger,
		Clock:     sc.Clock,
	}
	if _, set := p[paramKey]; !set {
		return cfg, fmt.Errorf("lbd: %s needs the %s parameter: the etcd key holding the schema's document, "+
			"with '/' written as %%2F, e.g. %s=%%2Flbd%%2Fschemas%%2Fim_user", Network, paramKey, paramKey)
	}
	if err := checkKey(cfg.Key); err != nil {
		return cfg, fmt.Errorf("lbd: invalid DSN parameter %s=%q: %v", paramKey, cfg.Key, err)
	}
	if err := checkAuth(cfg.Username, cfg.Password); err != nil {
		return cfg, fmt.Errorf("lbd: DSN parameters %s and %s: %v", paramUser, paramPassword, err)
	}
	switch v := p[paramTLS]; v {
	case "", "false":
	case "true":
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	case "skip-verify":
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	default:
		return cfg, fmt.Errorf("lbd: invalid DSN parameter %s=%q: want true, false or skip-verify", paramTLS, v)
	}
	if err := checkEndpoints(cfg.Endpoints, cfg.TLS != nil); err != nil {
		return cfg, fmt.Errorf("lbd: %s(...) endpoints: %v", Network, err)
	}
	var err error
	if cfg.DialTimeout, err = sc.Duration(paramDialTimeout, time.Millisecond); err != nil {
		return cfg, err
	}
	if cfg.RefreshInterval, err = sc.Duration(paramRefreshInterval, time.Second); err != nil {
		return cfg, err
	}
	return cfg, nil
}
