package lbd

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/dsnparam"
	"github.com/lbd-go/lbd/nodes"
)

// Network is the DSN network name that selects lbd's balanced dial:
// `user:pass@lb(host1:port1,host2:port2)/db`.
const Network = "lb"

// Defaults of lbd's DSN parameters, as in lb-driver.
const (
	DefaultCheckHealthInterval  = 5 * time.Second  // checkHealthIntervalSeconds
	DefaultCheckHealthTimeout   = 3 * time.Second  // checkHealthTimeoutMillis
	DefaultCheckBalanceInterval = 10 * time.Second // checkBalanceIntervalSeconds
	DefaultRecoverCheckCount    = 2                // recoverCheckCount
	DefaultFatalErrorThreshold  = 3                // fatalErrorThreshold
	DefaultFatalErrorWindow     = 10 * time.Second // fatalErrorWindowSeconds
	DefaultExceptionSorter      = "mysql"          // exceptionSorter
)

// DefaultWarmup is the slow-start window of a node added at run time or recovered
// (warmupSeconds): its share of new connections rises from 10% of its weight to all of it over
// 30 s. lb-driver has no slow start; the value is lbd's own. It spans three rounds of the
// rebalancer at its default interval (10 s), so the connections moved into the node come in
// at least three waves instead of one, and it keeps the time a recovered proxy carries less
// than its share to half a minute. bench/results (scale-out phase) has the measurement.
const DefaultWarmup = 30 * time.Second

// SlowStartAfterDown is the shortest outage after which a recovered proxy warms up (30 s).
// Slow start helps a proxy with nothing warm behind it: one added by a scale-out, or one down
// long enough to have been restarted cold or replaced. A proxy back from a shorter outage (a
// restart of a few seconds, a network blip) comes back at the weight it had, so the next
// rebalancing round gives it its fair share back: with slow start it held one of twelve
// pooled connections ten seconds after it returned. HAProxy's slowstart and Envoy's slow start
// warm up every recovery; lbd does so only after this long, or after an ejection for the
// errors a proxy answered while passing its probes (it takes load back gradually).
const SlowStartAfterDown = 30 * time.Second

// Defaults of passive outlier detection (Envoy's outlier detection names them the same way).
const (
	// DefaultMaxEjectionPercent is Envoy's max_ejection_percent default; lbd lets it eject at
	// least one node, so three proxies at 10 % may still lose a hung one.
	DefaultMaxEjectionPercent = 10 // maxEjectionPercent
	// DefaultBaseEjectionTime is lbd's own (Envoy's base_ejection_time is 30 s): a proxy
	// ejected once is back about a second after it answers again, like a proxy that probes
	// took down (the recovery schedule); each recent ejection adds a second to its hold.
	DefaultBaseEjectionTime = time.Second // baseEjectionTimeSeconds
)

// DefaultMinServingReplicas is the lag floor (minServingReplicas): when every replica lags
// beyond maxReplicationLagSeconds, the least lagging one keeps serving reads. Vitess keeps two
// (min_number_serving_vttablets); lbd keeps one, since a primary and one replica is the
// commonest pair.
const DefaultMinServingReplicas = 1

// DefaultPanicThresholdPercent is the panic threshold (panicThresholdPercent): while some proxy
// is up but fewer than half of them are, the down ones take connections too. It is Envoy's
// panic_threshold default (50%).
const DefaultPanicThresholdPercent = 50

// ParseDSN parses a DSN of the form
//
//	user:password@lb(host1:port1,host2:port2,[v6addr]:port3)/dbname?param=value&...
//
// The part go-sql-driver understands is parsed by mysql.ParseDSN, so escaping rules and every
// go-sql-driver parameter are the same as there. lbd's own parameters (see the README's table)
// are taken out; a bad value for one of them is an error naming the parameter, and so is a key
// that spells one of them with other letter case. Errors never contain the password.
func ParseDSN(dsn string) (*Config, error) {
	my, err := mysql.ParseDSN(dsn)
	emptyAddr := false
	if err != nil && strings.Contains(err.Error(), "default addr for network") {
		// "lb()": no node in the DSN, which is fine when a source supplies them. go-sql-driver
		// insists on an address, so parse with a placeholder and drop it.
		my, err = mysql.ParseDSN(dsnparam.WithPlaceholderAddr(dsn))
		emptyAddr = true
	}
	if err != nil {
		if q := strings.LastIndexByte(dsn, '?'); q >= 0 && strings.Contains(dsn[q:], "/") {
			// go-sql-driver takes the last '/' for the start of the database name, so a bare
			// '/' in a value (etcdKey=/lbd/x) breaks the DSN; its own message does not say so.
			return nil, fmt.Errorf("lbd: %w (a parameter value holds '/': write it as %%2F, e.g. etcdKey=%%2Flbd%%2Fschemas%%2Forders)", err)
		}
		if perr := dsnparam.DriverError(dsn, isParam); perr != nil {
			return nil, perr
		}
		if strings.HasPrefix(err.Error(), "invalid DSN") { // go-sql-driver's own words already say so
			return nil, fmt.Errorf("lbd: %w", err)
		}
		return nil, fmt.Errorf("lbd: invalid DSN: %w", err)
	}
	source, isSource := nodes.Lookup(my.Net)
	if my.Net != Network && !isSource {
		return nil, unknownNetworkError(my.Net)
	}
	cfg := &Config{
		MySQL:                 my,
		Network:               my.Net,
		CheckHealthInterval:   DefaultCheckHealthInterval,
		CheckHealthTimeout:    DefaultCheckHealthTimeout,
		CheckBalanceInterval:  DefaultCheckBalanceInterval,
		RecoverCheckCount:     DefaultRecoverCheckCount,
		FatalErrorThreshold:   DefaultFatalErrorThreshold,
		FatalErrorWindow:      DefaultFatalErrorWindow,
		MaxEjectionPercent:    DefaultMaxEjectionPercent,
		StatsInterval:         DefaultStatsInterval,
		ExceptionSorter:       DefaultExceptionSorter,
		FailoverTimeout:       DefaultFailoverTimeout,
		MaxFailoverWaiters:    DefaultMaxFailoverWaiters,
		RetryReads:            DefaultRetryReads,
		RetryBudgetPercent:    DefaultRetryBudgetPercent,
		RetryBudgetPerSecond:  DefaultRetryBudgetPerSecond,
		ReadAfterWrite:        DefaultReadAfterWrite,
		Warmup:                DefaultWarmup,
		PanicThresholdPercent: DefaultPanicThresholdPercent,
		MinServingReplicas:    DefaultMinServingReplicas,
		BalancePolicy:         DefaultBalancePolicy,
		ZoneMinUpPercent:      DefaultZoneMinUpPercent,
	}
	switch {
	case emptyAddr && isSource:
		return nil, fmt.Errorf("lbd: the DSN's %s(...) lists no address", my.Net)
	case emptyAddr:
		my.Addr = ""
	case isSource:
		for raw := range strings.SplitSeq(my.Addr, ",") {
			cfg.SourceAddrs = append(cfg.SourceAddrs, strings.TrimSpace(raw))
		}
		my.Addr = strings.Join(cfg.SourceAddrs, ",")
	default:
		ns, err := dsnparam.ParseNodes(my.Addr)
		if err != nil {
			return nil, err
		}
		cfg.Nodes, cfg.Weights, cfg.Roles, cfg.Zones, cfg.Groups = ns.List, ns.Weights, ns.Roles, ns.Zones, ns.Groups
		my.Addr = strings.Join(cfg.Nodes, ",")
	}
	for key, value := range my.Params {
		if isSource && slices.Contains(source.Params, key) {
			if cfg.SourceParams == nil {
				cfg.SourceParams = make(map[string]string)
			}
			cfg.SourceParams[key] = value
			delete(my.Params, key)
			continue
		}
		p, ok := lookupParam(key)
		if !ok {
			if err := dsnparam.Unknown(key, my.Net, append(paramNames(), source.Params...), allSourceParams()); err != nil {
				return nil, err
			}
			continue // go-sql-driver's: a session variable to SET on each connection
		}
		if err := p.parse(cfg, value); err != nil {
			return nil, fmt.Errorf("lbd: invalid DSN parameter %s=%q: %v", key, value, err)
		}
		delete(my.Params, key)
	}
	if len(my.Params) == 0 {
		my.Params = nil
	}
	if v, ok := os.LookupEnv(EnvLocalZone); ok {
		if err := parseLocalZone(cfg, strings.TrimSpace(v)); err != nil {
			return nil, fmt.Errorf("lbd: invalid environment variable %s=%q: %v", EnvLocalZone, v, err)
		}
	}
	return cfg, nil
}

var errNoNodes = errors.New("lbd: the DSN lists no proxy: want user:pass@lb(host1:port1,host2:port2)/db, or a node source")

// staticList is the DSN's node list with its weights, roles, zones and groups, as a node source
// reports one.
func staticList(c *Config) []nodes.Node {
	out := make([]nodes.Node, len(c.Nodes))
	for i, a := range c.Nodes {
		out[i] = nodes.Node{Addr: a, Weight: c.Weights[a], Role: c.Roles[a], AZ: c.Zones[a], Groups: c.Groups[a]}
	}
	return out
}

// FormatDSN writes the Config back as a DSN that ParseDSN reads into an equal Config, as far as
// a DSN carries it: lbd parameters at their default value are left out, and what only code can
// set (Logger, Sorter, StatsInterval, the options' hooks) is not written.
func (c *Config) FormatDSN() string {
	my := c.MySQL.Clone()
	my.Net = c.Network
	if my.Net == "" {
		my.Net = Network
	}
	entries := make([]string, 0, len(c.Nodes)+len(c.SourceAddrs))
	for _, n := range staticList(c) {
		entries = append(entries, n.Entry())
	}
	my.Addr = strings.Join(append(entries, c.SourceAddrs...), ",")
	if my.Addr == "" {
		my.Addr = dsnparam.PlaceholderAddr
	}
	var b strings.Builder
	b.WriteString(strings.Replace(my.FormatDSN(), "("+dsnparam.PlaceholderAddr+")", "()", 1))
	sep := "?"
	if strings.Contains(b.String()[strings.LastIndexByte(b.String(), '/'):], "?") {
		sep = "&"
	}
	for _, p := range params {
		v, set := p.format(c)
		if !set {
			continue
		}
		b.WriteString(sep)
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
		sep = "&"
	}
	for _, k := range slices.Sorted(maps.Keys(c.SourceParams)) {
		b.WriteString(sep + k + "=" + url.QueryEscape(c.SourceParams[k]))
		sep = "&"
	}
	return b.String()
}
