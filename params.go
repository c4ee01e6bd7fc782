package lbd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/role"
)

// param is one lbd DSN parameter: its name as lb-driver spells it, how to read it into a Config
// and how to write it back. Parameters are removed from the DSN before go-sql-driver sees it,
// because go-sql-driver sends every key it does not know to the server as `SET key=value`.
type param struct {
	name  string
	parse func(c *Config, value string) error
	// format returns the value to write and whether it differs from the default
	// (defaults are left out of a formatted DSN).
	format func(c *Config) (string, bool)
}

// params is the table of lbd's own DSN parameters. Names and defaults follow lb-driver.
var params = []param{
	{
		name: "balance",
		parse: func(c *Config, v string) (err error) {
			c.Balance, err = parseBalanceMode(v)
			return err
		},
		format: func(c *Config) (string, bool) { return c.Balance.String(), c.Balance != BalanceConnection },
	},
	{
		name:  "checkHealthIntervalSeconds",
		parse: func(c *Config, v string) error { return parseSeconds(v, &c.CheckHealthInterval) },
		format: func(c *Config) (string, bool) {
			return formatSeconds(c.CheckHealthInterval, DefaultCheckHealthInterval)
		},
	},
	{
		name:   "checkHealthTimeoutMillis",
		parse:  func(c *Config, v string) error { return parseMillis(v, &c.CheckHealthTimeout) },
		format: func(c *Config) (string, bool) { return formatMillis(c.CheckHealthTimeout, DefaultCheckHealthTimeout) },
	},
	{
		name:  "checkBalanceIntervalSeconds",
		parse: func(c *Config, v string) error { return parseSeconds(v, &c.CheckBalanceInterval) },
		format: func(c *Config) (string, bool) {
			return formatSeconds(c.CheckBalanceInterval, DefaultCheckBalanceInterval)
		},
	},
	{
		name:  "recoverCheckCount",
		parse: func(c *Config, v string) error { return parsePositiveInt(v, &c.RecoverCheckCount) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RecoverCheckCount), c.RecoverCheckCount != DefaultRecoverCheckCount
		},
	},
	{
		name:  "fatalErrorThreshold",
		parse: func(c *Config, v string) error { return parsePositiveInt(v, &c.FatalErrorThreshold) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.FatalErrorThreshold), c.FatalErrorThreshold != DefaultFatalErrorThreshold
		},
	},
	{
		name:   "fatalErrorWindowSeconds",
		parse:  func(c *Config, v string) error { return parseSeconds(v, &c.FatalErrorWindow) },
		format: func(c *Config) (string, bool) { return formatSeconds(c.FatalErrorWindow, DefaultFatalErrorWindow) },
	},
	{
		name: "warmupSeconds",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxSeconds {
				return fmt.Errorf("must be a whole number of seconds from 0 (no slow start) to %d", maxSeconds)
			}
			c.Warmup = time.Duration(n) * time.Second
			return nil
		},
		format: func(c *Config) (string, bool) { return formatSeconds(c.Warmup, DefaultWarmup) },
	},
	{
		name: "maxEjectionPercent",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100 {
				return fmt.Errorf("must be a whole number of percent from 0 to 100 (0 turns passive ejection off)")
			}
			c.MaxEjectionPercent = n
			return nil
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.MaxEjectionPercent), c.MaxEjectionPercent != DefaultMaxEjectionPercent
		},
	},
	{
		name:   "baseEjectionTimeSeconds",
		parse:  func(c *Config, v string) error { return parseSeconds(v, &c.BaseEjectionTime) },
		format: func(c *Config) (string, bool) { return formatSeconds(c.BaseEjectionTime, 0) },
	},
	{
		name:   "logStats",
		parse:  func(c *Config, v string) error { return parseBool(v, &c.LogStats) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.LogStats), c.LogStats },
	},
	{
		name: "exceptionSorter",
		parse: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("must name a registered exception sorter")
			}
			c.ExceptionSorter = v
			return nil
		},
		format: func(c *Config) (string, bool) {
			return c.ExceptionSorter, c.ExceptionSorter != "" && c.ExceptionSorter != DefaultExceptionSorter
		},
	},
	{
		name: "roleCheck",
		parse: func(c *Config, v string) error {
			if _, err := role.ParseCheck(v); err != nil {
				return errors.New(strings.TrimPrefix(err.Error(), "roleCheck="+strconv.Quote(v)+": "))
			}
			c.RoleCheck = v
			return nil
		},
		format: func(c *Config) (string, bool) { return c.RoleCheck, c.RoleCheck != "" && c.RoleCheck != "none" },
	},
	{
		name: "target",
		parse: func(c *Config, v string) error {
			t, err := role.ParseTarget(v)
			if err != nil {
				return errors.New("must be any, primary, prefer-primary, replica or prefer-replica")
			}
			c.Target = Target(t)
			return nil
		},
		format: func(c *Config) (string, bool) { return c.Target.String(), c.Target != TargetAny },
	},
	{
		name: "failoverTimeoutMillis",
		parse: func(c *Config, v string) error {
			if v == "0" {
				c.FailoverTimeout = 0
				return nil
			}
			return parseMillis(v, &c.FailoverTimeout)
		},
		format: func(c *Config) (string, bool) { return formatMillis(c.FailoverTimeout, DefaultFailoverTimeout) },
	},
	{
		name:  "maxFailoverWaiters",
		parse: func(c *Config, v string) error { return parseBounded(v, maxFailoverWaiters, &c.MaxFailoverWaiters) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.MaxFailoverWaiters), c.MaxFailoverWaiters != DefaultMaxFailoverWaiters
		},
	},
	{
		name:  "retryReads",
		parse: func(c *Config, v string) error { return parseBool(v, &c.RetryReads) },
		format: func(c *Config) (string, bool) {
			return strconv.FormatBool(c.RetryReads), !c.RetryReads // the default is on (DefaultRetryReads)
		},
	},
	{
		name:  "retryBudgetPercent",
		parse: func(c *Config, v string) error { return parseBounded(v, maxRetryBudgetPercent, &c.RetryBudgetPercent) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RetryBudgetPercent), c.RetryBudgetPercent != DefaultRetryBudgetPercent
		},
	},
	{
		name: "retryBudgetPerSecond",
		parse: func(c *Config, v string) error {
			return parseBounded(v, maxRetryBudgetPerSecond, &c.RetryBudgetPerSecond)
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RetryBudgetPerSecond), c.RetryBudgetPerSecond != DefaultRetryBudgetPerSecond
		},
	},
	{
		name:   "singleWriter",
		parse:  func(c *Config, v string) error { return parseBool(v, &c.SingleWriter) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.SingleWriter), c.SingleWriter },
	},
	{
		name:   "readWriteSplit",
		parse:  func(c *Config, v string) error { return parseBool(v, &c.ReadWriteSplit) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.ReadWriteSplit), c.ReadWriteSplit },
	},
	{
		name: "maxReplicationLagSeconds",
		parse: func(c *Config, v string) error {
			if v == "0" {
				c.MaxReplicationLag = 0
				return nil
			}
			return parseSeconds(v, &c.MaxReplicationLag)
		},
		format: func(c *Config) (string, bool) { return formatSeconds(c.MaxReplicationLag, 0) },
	},
	{
		name: "readConsistency",
		parse: func(c *Config, v string) error {
			if v != "time" && v != "gtid" {
				return errors.New("must be time or gtid")
			}
			c.ReadConsistency = v
			return nil
		},
		format: func(c *Config) (string, bool) { return c.ReadConsistency, c.ReadConsistency == "gtid" },
	},
	{
		name: "readAfterWriteMillis",
		parse: func(c *Config, v string) error {
			if v == "0" {
				c.ReadAfterWrite = 0
				return nil
			}
			return parseMillis(v, &c.ReadAfterWrite)
		},
		format: func(c *Config) (string, bool) { return formatMillis(c.ReadAfterWrite, DefaultReadAfterWrite) },
	},
	{
		name: "statusURL",
		parse: func(c *Config, v string) error {
			if err := health.CheckStatusTemplate(v); err != nil {
				return errors.New(err.Error())
			}
			c.StatusURL = v
			return nil
		},
		format: func(c *Config) (string, bool) { return c.StatusURL, c.StatusURL != "" },
	},
	{
		name: "panicThresholdPercent",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100 {
				return fmt.Errorf("must be a whole number of percent from 0 to 100 (0 turns it off)")
			}
			c.PanicThresholdPercent = n
			return nil
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.PanicThresholdPercent), c.PanicThresholdPercent != DefaultPanicThresholdPercent
		},
	},
	{
		name: "minServingReplicas",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxCount {
				return fmt.Errorf("must be a whole number from 0 (no floor) to %d", maxCount)
			}
			c.MinServingReplicas = n
			return nil
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.MinServingReplicas), c.MinServingReplicas != DefaultMinServingReplicas
		},
	},
	{
		// lb-driver uses it to choose what unsupported JDBC methods do; database/sql has no such
		// methods, so lbd accepts the known values and ignores them.
		name: "unsupportedMethodBehavior",
		parse: func(c *Config, v string) error {
			if v != "throwException" && v != "ignoreCall" {
				return fmt.Errorf("must be throwException or ignoreCall (it has no effect in lbd)")
			}
			c.UnsupportedMethodBehavior = v
			return nil
		},
		format: func(c *Config) (string, bool) {
			return c.UnsupportedMethodBehavior, c.UnsupportedMethodBehavior != ""
		},
	},
	{
		name:   "primaryReads",
		parse:  func(c *Config, v string) error { return parseBool(v, &c.PrimaryReads) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.PrimaryReads), c.PrimaryReads },
	},
	{
		name:   "routingHints",
		parse:  func(c *Config, v string) error { return parseBool(v, &c.RoutingHints) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.RoutingHints), c.RoutingHints },
	},
	{
		name: "balancePolicy",
		parse: func(c *Config, v string) (err error) {
			c.BalancePolicy, err = parseBalancePolicy(v)
			return err
		},
		format: func(c *Config) (string, bool) {
			return c.BalancePolicy.String(), c.BalancePolicy != DefaultBalancePolicy
		},
	},
	{
		name:   "localZone",
		parse:  func(c *Config, v string) error { return parseLocalZone(c, v) },
		format: func(c *Config) (string, bool) { return c.LocalZone, c.LocalZone != "" },
	},
	{
		name:   "group",
		parse:  func(c *Config, v string) error { return parseGroup(c, v) },
		format: func(c *Config) (string, bool) { return c.Group, c.Group != "" },
	},
	{
		name:   "isolatedGroups",
		parse:  func(c *Config, v string) error { return parseIsolatedGroups(c, v) },
		format: func(c *Config) (string, bool) { return strings.Join(c.IsolatedGroups, ","), len(c.IsolatedGroups) > 0 },
	},
	{
		name: "zoneMinUpPercent",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				return errors.New("must be a whole number from 1 to 100")
			}
			c.ZoneMinUpPercent = n
			return nil
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.ZoneMinUpPercent), c.ZoneMinUpPercent != DefaultZoneMinUpPercent
		},
	},
}

// lookupParam finds a parameter by exact name.
func lookupParam(name string) (*param, bool) {
	for i := range params {
		if params[i].name == name {
			return &params[i], true
		}
	}
	return nil, false
}

// unknownParamError explains a DSN key that neither lbd nor the DSN's own node source reads
// (sourceParams are that source's parameter names), or returns nil for a key that may be a
// session variable. The order matters: a key that differs only in letter case from one of this
// network's names is a typo of it, even when another network has a name in the same letters
// (configServerApikey in an lbremote DSN means configServerApiKey); a key that is exactly
// another network's parameter is reported as such, even when it is also a near miss of one of
// this network's names; then come near misses of this network's names; last, a key that spells
// another network's parameter with other letter case.
func unknownParamError(key, network string, sourceParams []string) error {
	if right, ok := caseVariant(key, append(paramNames(), sourceParams...)); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q?", key, right)
	}
	// go-sql-driver has taken the keys it reads, so a case variant or near miss of one of its
	// names is a typo too: it would go to every proxy as a SET and fail with 1193.
	if right, ok := caseVariant(key, driverParams); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean go-sql-driver's %q?", key, right)
	}
	if right, ok := nearMiss(key, driverParams); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean go-sql-driver's %q?", key, right)
	}
	if other, exact := otherNetworksParam(key); exact {
		return fmt.Errorf("lbd: DSN parameter %q is read by the node source of another network, not by %s(...)", other, network)
	}
	if right, ok := nearMiss(key, append(paramNames(), sourceParams...)); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q?", key, right)
	}
	if other, ok := caseVariant(key, allSourceParams()); ok {
		return fmt.Errorf("lbd: unknown DSN parameter %q: did you mean %q? That one is read by the node source of another network, not by %s(...)", key, other, network)
	}
	return nil
}

// driverParams are go-sql-driver's own DSN parameters (v1.10.1, its parseDSNParams).
var driverParams = []string{
	"allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
	"allowOldPasswords", "checkConnLiveness", "clientFoundRows", "charset", "collation",
	"columnsWithAlias", "compress", "connectionAttributes", "interpolateParams", "loc",
	"maxAllowedPacket", "multiStatements", "parseTime", "readTimeout", "rejectReadOnly",
	"serverPubKey", "strict", "timeTruncate", "timeout", "tls", "writeTimeout",
}

// caseVariant returns the name among names that key spells with other letter case, so that a
// typo such as `checkhealthintervalseconds` is an error instead of a `SET` sent to every proxy.
func caseVariant(key string, names []string) (string, bool) {
	for _, p := range names {
		if p != key && strings.EqualFold(p, key) {
			return p, true
		}
	}
	return "", false
}

// nearMiss returns the name among names that key misses by one or two letters
// (checkHealthIntervalSecond). Such a key would go to every proxy as a SET and fail each
// connection with 1193; saying so at parse time is better. Keys shorter than 8 bytes are left
// alone: session variables are snake_case and far from lbd's long camelCase names, but short
// ones can be close by chance.
func nearMiss(key string, names []string) (string, bool) {
	if len(key) < 8 {
		return "", false
	}
	for _, p := range names {
		if editDistance(strings.ToLower(p), strings.ToLower(key)) <= 2 {
			return p, true
		}
	}
	return "", false
}

func paramNames() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.name
	}
	return out
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Upper bounds of numeric parameters: far beyond any sensible setting, well inside what a
// time.Duration or an allocation can hold.
const (
	maxSeconds = 366 * 24 * 3600 // a year
	maxMillis  = 3600 * 1000     // an hour
	maxCount   = 1000
	// maxFailoverWaiters bounds maxFailoverWaiters: far above any pool, below anything that
	// could overflow.
	maxFailoverWaiters = 1_000_000
	// maxRetryBudgetPercent lets retries be up to ten times the statements; beyond that a
	// budget bounds nothing.
	maxRetryBudgetPercent = 1000
	// maxRetryBudgetPerSecond bounds retryBudgetPerSecond as maxFailoverWaiters bounds its own.
	maxRetryBudgetPerSecond = 1_000_000
)

// parseBounded reads a whole number from 0 to limit into n.
func parseBounded(v string, limit int, n *int) error {
	x, err := strconv.Atoi(v)
	if err != nil || x < 0 || x > limit {
		return fmt.Errorf("must be a whole number from 0 to %d", limit)
	}
	*n = x
	return nil
}

func parseSeconds(v string, d *time.Duration) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > maxSeconds {
		return fmt.Errorf("must be a whole number of seconds from 1 to %d", maxSeconds)
	}
	*d = time.Duration(n) * time.Second
	return nil
}

func parseMillis(v string, d *time.Duration) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > maxMillis {
		return fmt.Errorf("must be a whole number of milliseconds from 1 to %d", maxMillis)
	}
	*d = time.Duration(n) * time.Millisecond
	return nil
}

func parsePositiveInt(v string, n *int) error {
	i, err := strconv.Atoi(v)
	if err != nil || i <= 0 || i > maxCount {
		return fmt.Errorf("must be a whole number from 1 to %d", maxCount)
	}
	*n = i
	return nil
}

func parseBool(v string, b *bool) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	*b = x
	return nil
}

// formatSeconds writes d in whole seconds, rounding a sub-second option value up so that the
// written DSN never asks for a shorter interval than the one configured.
func formatSeconds(d, def time.Duration) (string, bool) {
	s := (d + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(s), 10), d != def
}

func formatMillis(d, def time.Duration) (string, bool) {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10), d != def
}
