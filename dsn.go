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
		my, err = mysql.ParseDSN(withPlaceholderAddr(dsn))
		emptyAddr = true
	}
	if err != nil {
		if q := strings.LastIndexByte(dsn, '?'); q >= 0 && strings.Contains(dsn[q:], "/") {
			// go-sql-driver takes the last '/' for the start of the database name, so a bare
			// '/' in a value (etcdKey=/lbd/x) breaks the DSN; its own message does not say so.
			return nil, fmt.Errorf("lbd: %w (a parameter value holds '/': write it as %%2F, e.g. etcdKey=%%2Flbd%%2Fschemas%%2Forders)", err)
		}
		if perr := driverParamError(dsn); perr != nil {
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
		if cfg.Nodes, cfg.Weights, cfg.Roles, cfg.Zones, cfg.Groups, err = parseNodes(my.Addr); err != nil {
			return nil, err
		}
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
			if err := unknownParamError(key, my.Net, source.Params); err != nil {
				return nil, err
			}
			if isCamelCase(key) {
				return nil, fmt.Errorf("lbd: unknown DSN parameter %q: neither lbd nor go-sql-driver reads it, and server variables are snake_case (a node source's parameter needs its network in the DSN and its package imported)", key)
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

// isCamelCase reports a name with a lower-case letter followed by an upper-case one
// (etcdKey). MySQL and MariaDB name their variables in snake_case, so such a key left over
// after lbd and go-sql-driver took theirs is a parameter nobody reads, and go-sql-driver would
// send it as a SET that fails every connection with 1193.
func isCamelCase(name string) bool {
	for i := 1; i < len(name); i++ {
		if name[i-1] >= 'a' && name[i-1] <= 'z' && name[i] >= 'A' && name[i] <= 'Z' {
			return true
		}
	}
	return false
}

var errNoNodes = errors.New("lbd: the DSN lists no proxy: want user:pass@lb(host1:port1,host2:port2)/db, or a node source")

// placeholderAddr stands in for an empty address list while go-sql-driver parses the DSN.
const placeholderAddr = "placeholder.invalid:1"

// withPlaceholderAddr puts placeholderAddr into an empty "net()" or bare "net" address part,
// found the way go-sql-driver finds it: the last '@' before the last '/'.
func withPlaceholderAddr(dsn string) string {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return dsn
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	netPart := strings.TrimSuffix(dsn[at+1:slash], "()")
	if strings.ContainsAny(netPart, "()") {
		return dsn
	}
	return dsn[:at+1] + netPart + "(" + placeholderAddr + ")" + dsn[slash:]
}

// parseNodes splits the address list of an lb(...) DSN into validated, canonical host:port
// entries (see nodes.Canonical), the weights of the entries written host:port*weight, the
// roles of those written host:port#role or host:port*weight#role, the zones of those ending in
// ~zone and the groups of those with +group (each nil when no entry has one).
func parseNodes(addrs string) (list []string, weights map[string]int, roles map[string]nodes.Role, zones, groups map[string]string, err error) {
	if err := nodes.CheckCount(strings.Count(addrs, ",") + 1); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("lbd: proxy list: %w", err)
	}
	seen := make(map[string]bool)
	for raw := range strings.SplitSeq(addrs, ",") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			return nil, nil, nil, nil, nil, checkNodeAddr(entry)
		}
		n, err := nodes.ParseEntry(entry)
		if err != nil {
			return nil, nil, nil, nil, nil, fmt.Errorf("lbd: proxy list: %w", err)
		}
		if seen[n.Addr] {
			return nil, nil, nil, nil, nil, fmt.Errorf("lbd: proxy %q is listed twice", n.Addr)
		}
		seen[n.Addr] = true
		list = append(list, n.Addr)
		if n.Weight != 0 {
			if weights == nil {
				weights = make(map[string]int)
			}
			weights[n.Addr] = n.Weight
		}
		if n.Role != nodes.RoleUnknown {
			if roles == nil {
				roles = make(map[string]nodes.Role)
			}
			roles[n.Addr] = n.Role
		}
		if n.AZ != "" {
			if zones == nil {
				zones = make(map[string]string)
			}
			zones[n.Addr] = n.AZ
		}
		if n.Groups != "" {
			if groups == nil {
				groups = make(map[string]string)
			}
			groups[n.Addr] = n.Groups
		}
	}
	if groups != nil {
		if err := nodes.CheckGroupSets(staticList(&Config{Nodes: list, Groups: groups})); err != nil {
			return nil, nil, nil, nil, nil, fmt.Errorf("lbd: proxy list: %w", err)
		}
	}
	return list, weights, roles, zones, groups, nil
}

// staticList is the DSN's node list with its weights, roles, zones and groups, as a node source
// reports one.
func staticList(c *Config) []nodes.Node {
	out := make([]nodes.Node, len(c.Nodes))
	for i, a := range c.Nodes {
		out[i] = nodes.Node{Addr: a, Weight: c.Weights[a], Role: c.Roles[a], AZ: c.Zones[a], Groups: c.Groups[a]}
	}
	return out
}

// checkNodeAddr accepts "host:port" and "[v6addr]:port" with a port from 1 to 65535.
func checkNodeAddr(addr string) error {
	if addr == "" {
		return fmt.Errorf("lbd: empty entry in the proxy list (check for a stray comma)")
	}
	if err := nodes.CheckAddr(addr); err != nil {
		return fmt.Errorf("lbd: proxy list: %w", err)
	}
	return nil
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
		my.Addr = placeholderAddr
	}
	var b strings.Builder
	b.WriteString(strings.Replace(my.FormatDSN(), "("+placeholderAddr+")", "()", 1))
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

// driverParamError finds the go-sql-driver parameter of dsn whose value go-sql-driver refuses
// and returns an error naming it and saying what to write, or nil. go-sql-driver's own errors
// name only the value (`time: missing unit in duration "5"` for timeout=5). Each parameter is
// parsed alone, after the last '?', where no password is.
func driverParamError(dsn string) error {
	q := strings.LastIndexByte(dsn, '?')
	if q < 0 || q < strings.LastIndexByte(dsn, '/') {
		return nil // no parameters, or the '?' is in the password
	}
	for kv := range strings.SplitSeq(dsn[q+1:], "&") {
		key, raw, _ := strings.Cut(kv, "=")
		if _, lbdParam := lookupParam(key); key == "" || lbdParam || strings.ContainsAny(key, "@:()/") {
			continue
		}
		if _, err := mysql.ParseDSN("/?" + kv); err != nil {
			value, uerr := url.QueryUnescape(raw)
			if uerr != nil {
				value = raw
			}
			return fmt.Errorf("lbd: invalid DSN parameter %s=%q (go-sql-driver's): %v%s", key, value, err, driverParamHint(key))
		}
	}
	return nil
}

// driverParamHint says how to write a value of go-sql-driver's parameter key.
func driverParamHint(key string) string {
	switch key {
	case "timeout", "readTimeout", "writeTimeout":
		return "; write a duration with its unit, e.g. " + key + "=5s or " + key + "=500ms"
	case "allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
		"allowOldPasswords", "checkConnLiveness", "clientFoundRows", "columnsWithAlias", "compress",
		"interpolateParams", "multiStatements", "parseTime", "rejectReadOnly":
		return "; write " + key + "=true or " + key + "=false"
	case "maxAllowedPacket":
		return "; write a whole number of bytes (0: ask the server)"
	case "loc":
		return "; write a time zone name such as UTC, Local or Asia%2FShanghai (a '/' as %2F)"
	}
	return "; see go-sql-driver's documentation of " + key
}
