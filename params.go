package lbd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lbd-go/lbd/internal/dsnparam"
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
		parse: func(c *Config, v string) error { return dsnparam.Seconds(v, &c.CheckHealthInterval) },
		format: func(c *Config) (string, bool) {
			return dsnparam.FormatSeconds(c.CheckHealthInterval, DefaultCheckHealthInterval)
		},
	},
	{
		name:  "checkHealthTimeoutMillis",
		parse: func(c *Config, v string) error { return dsnparam.Millis(v, &c.CheckHealthTimeout) },
		format: func(c *Config) (string, bool) {
			return dsnparam.FormatMillis(c.CheckHealthTimeout, DefaultCheckHealthTimeout)
		},
	},
	{
		name:  "checkBalanceIntervalSeconds",
		parse: func(c *Config, v string) error { return dsnparam.Seconds(v, &c.CheckBalanceInterval) },
		format: func(c *Config) (string, bool) {
			return dsnparam.FormatSeconds(c.CheckBalanceInterval, DefaultCheckBalanceInterval)
		},
	},
	{
		name:  "recoverCheckCount",
		parse: func(c *Config, v string) error { return dsnparam.PositiveInt(v, &c.RecoverCheckCount) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RecoverCheckCount), c.RecoverCheckCount != DefaultRecoverCheckCount
		},
	},
	{
		name:  "fatalErrorThreshold",
		parse: func(c *Config, v string) error { return dsnparam.PositiveInt(v, &c.FatalErrorThreshold) },
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.FatalErrorThreshold), c.FatalErrorThreshold != DefaultFatalErrorThreshold
		},
	},
	{
		name:  "fatalErrorWindowSeconds",
		parse: func(c *Config, v string) error { return dsnparam.Seconds(v, &c.FatalErrorWindow) },
		format: func(c *Config) (string, bool) {
			return dsnparam.FormatSeconds(c.FatalErrorWindow, DefaultFatalErrorWindow)
		},
	},
	{
		name: "warmupSeconds",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > dsnparam.MaxSeconds {
				return fmt.Errorf("must be a whole number of seconds from 0 (no slow start) to %d", dsnparam.MaxSeconds)
			}
			c.Warmup = time.Duration(n) * time.Second
			return nil
		},
		format: func(c *Config) (string, bool) { return dsnparam.FormatSeconds(c.Warmup, DefaultWarmup) },
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
		parse:  func(c *Config, v string) error { return dsnparam.Seconds(v, &c.BaseEjectionTime) },
		format: func(c *Config) (string, bool) { return dsnparam.FormatSeconds(c.BaseEjectionTime, 0) },
	},
	{
		name:   "logStats",
		parse:  func(c *Config, v string) error { return dsnparam.Bool(v, &c.LogStats) },
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
			return dsnparam.Millis(v, &c.FailoverTimeout)
		},
		format: func(c *Config) (string, bool) {
			return dsnparam.FormatMillis(c.FailoverTimeout, DefaultFailoverTimeout)
		},
	},
	{
		name: "maxFailoverWaiters",
		parse: func(c *Config, v string) error {
			return dsnparam.Bounded(v, dsnparam.MaxFailoverWaiters, &c.MaxFailoverWaiters)
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.MaxFailoverWaiters), c.MaxFailoverWaiters != DefaultMaxFailoverWaiters
		},
	},
	{
		name:  "retryReads",
		parse: func(c *Config, v string) error { return dsnparam.Bool(v, &c.RetryReads) },
		format: func(c *Config) (string, bool) {
			return strconv.FormatBool(c.RetryReads), !c.RetryReads // the default is on (DefaultRetryReads)
		},
	},
	{
		name: "retryBudgetPercent",
		parse: func(c *Config, v string) error {
			return dsnparam.Bounded(v, dsnparam.MaxRetryBudgetPercent, &c.RetryBudgetPercent)
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RetryBudgetPercent), c.RetryBudgetPercent != DefaultRetryBudgetPercent
		},
	},
	{
		name: "retryBudgetPerSecond",
		parse: func(c *Config, v string) error {
			return dsnparam.Bounded(v, dsnparam.MaxRetryBudgetPerSecond, &c.RetryBudgetPerSecond)
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(c.RetryBudgetPerSecond), c.RetryBudgetPerSecond != DefaultRetryBudgetPerSecond
		},
	},
	{
		name:   "singleWriter",
		parse:  func(c *Config, v string) error { return dsnparam.Bool(v, &c.SingleWriter) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.SingleWriter), c.SingleWriter },
	},
	{
		name:   "readWriteSplit",
		parse:  func(c *Config, v string) error { return dsnparam.Bool(v, &c.ReadWriteSplit) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.ReadWriteSplit), c.ReadWriteSplit },
	},
	{
		name: "maxReplicationLagSeconds",
		parse: func(c *Config, v string) error {
			if v == "0" {
				c.MaxReplicationLag = 0
				return nil
			}
			return dsnparam.Seconds(v, &c.MaxReplicationLag)
		},
		format: func(c *Config) (string, bool) { return dsnparam.FormatSeconds(c.MaxReplicationLag, 0) },
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
			return dsnparam.Millis(v, &c.ReadAfterWrite)
		},
		format: func(c *Config) (string, bool) { return dsnparam.FormatMillis(c.ReadAfterWrite, DefaultReadAfterWrite) },
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
			if err != nil || n < 0 || n > dsnparam.MaxCount {
				return fmt.Errorf("must be a whole number from 0 (no floor) to %d", dsnparam.MaxCount)
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
		parse:  func(c *Config, v string) error { return dsnparam.Bool(v, &c.PrimaryReads) },
		format: func(c *Config) (string, bool) { return strconv.FormatBool(c.PrimaryReads), c.PrimaryReads },
	},
	{
		name:   "routingHints",
		parse:  func(c *Config, v string) error { return dsnparam.Bool(v, &c.RoutingHints) },
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

func paramNames() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.name
	}
	return out
}

// isParam reports whether key is one of lbd's own parameters.
func isParam(key string) bool {
	_, ok := lookupParam(key)
	return ok
}
