package remote

import (
	"fmt"
	"strings"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Network is the DSN network this package registers:
// user:pass@lbremote(cs1:8080,cs2:8080)/db?configServerSchema=im_user.
const Network = "lbremote"

// The DSN parameters the source reads; the package documentation describes them. The first
// three are lb-driver's, and so are az, ip and azRefreshIntervalSeconds (from its AZ
// extension); configServerCacheDir and configServerPollIntervalSeconds are lbd's.
const (
	paramSchema            = "configServerSchema"
	paramAPIKey            = "configServerApiKey"
	paramTimeout           = "configServerTimeout"
	paramCacheDir          = "configServerCacheDir"
	paramPollInterval      = "configServerPollIntervalSeconds"
	paramAZ                = "az"
	paramIP                = "ip"
	paramAZRefreshInterval = "azRefreshIntervalSeconds"
)

func init() {
	nodes.Register(Network, nodes.SourceFactory{
		Params: []string{
			paramSchema, paramAPIKey, paramTimeout, paramCacheDir, paramPollInterval,
			paramAZ, paramIP, paramAZRefreshInterval,
		},
		Secrets: []string{paramAPIKey},
		New: func(sc nodes.SourceConfig) (nodes.Source, error) {
			cfg, err := configFromDSN(sc)
			if err != nil {
				return nil, err
			}
			return New(cfg)
		},
	})
}

// configFromDSN turns the DSN's config-server addresses and parameters into a Config. Errors
// name the parameter and show its value, except the API key's.
func configFromDSN(sc nodes.SourceConfig) (Config, error) {
	p := sc.Params
	cfg := Config{
		Schema: strings.TrimSpace(p[paramSchema]),
		APIKey: p[paramAPIKey],
		AZ:     p[paramAZ],
		IP:     p[paramIP],
		Logger: sc.Logger,
		Clock:  sc.Clock,

		RecoverCheckCount: sc.RecoverCheckCount,
	}
	if cfg.Schema == "" {
		return cfg, fmt.Errorf("lbd: %s needs the %s parameter: the schema whose proxy list the config-server keeps, e.g. %s=im_user",
			Network, paramSchema, paramSchema)
	}
	for _, a := range sc.Addrs {
		if _, err := parseServer(a, false); err != nil {
			return cfg, fmt.Errorf("lbd: %s(...): %v", Network, err)
		}
		cfg.Servers = append(cfg.Servers, a)
	}
	if len(cfg.Servers) == 0 {
		return cfg, fmt.Errorf("lbd: %s(...) lists no config-server", Network)
	}
	if dir, set := p[paramCacheDir]; set {
		cfg.CacheDir, cfg.DisableCache = dir, dir == ""
	}
	var err error
	if cfg.Timeout, err = sc.Duration(paramTimeout, time.Millisecond); err != nil {
		return cfg, err
	}
	if cfg.PollInterval, err = sc.Duration(paramPollInterval, time.Second); err != nil {
		return cfg, err
	}
	if cfg.AZRefreshInterval, err = sc.Duration(paramAZRefreshInterval, time.Second); err != nil {
		return cfg, err
	}
	return cfg, nil
}
