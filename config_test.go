package lbd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/dsnparam"
	"github.com/lbd-go/lbd/nodes"
)

// quietConnector builds a Connector on a node nobody listens on, with its first probe and
// rebalancing round an hour away, so that nothing it does during a test touches the network.
func quietConnector(t *testing.T, dsn string, opts ...Option) *Connector {
	t.Helper()
	base := []Option{
		WithLogger(slog.New(slog.DiscardHandler)),
		WithCheckBalanceInterval(time.Hour),
		WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
	c, err := NewConnector(dsn, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fixedSorter judges nothing fatal; tests use it to tell their sorter from the registered ones.
type fixedSorter struct{}

func (fixedSorter) IsFatal(error) bool { return false }

// Options write into the Connector's Config, so Config reports what runs, not what the DSN said.
func TestConfigReportsOptions(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	c := quietConnector(t, "u:p@lb(127.0.0.1:1)/db?recoverCheckCount=3",
		WithCheckHealthInterval(time.Hour), WithRecoverCheckCount(7), WithFatalErrorThreshold(9),
		WithFatalErrorWindow(time.Minute), WithStatsInterval(time.Second), WithBalance(BalanceStatement),
		WithExceptionSorter(fixedSorter{}), WithLogger(logger), WithWarmup(0))
	got := c.Config()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"CheckHealthInterval", got.CheckHealthInterval, time.Hour},
		{"CheckHealthTimeout", got.CheckHealthTimeout, DefaultCheckHealthTimeout},
		{"CheckBalanceInterval", got.CheckBalanceInterval, time.Hour},
		{"RecoverCheckCount", got.RecoverCheckCount, 7},
		{"FatalErrorThreshold", got.FatalErrorThreshold, 9},
		{"FatalErrorWindow", got.FatalErrorWindow, time.Minute},
		{"StatsInterval", got.StatsInterval, time.Second},
		{"Balance", got.Balance, BalanceStatement},
		{"Warmup", got.Warmup, time.Duration(0)},
		{"Sorter", got.Sorter, exception.Sorter(fixedSorter{})},
		{"Logger", got.Logger, logger},
	} {
		if tc.got != tc.want {
			t.Errorf("Config().%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.ExceptionSorter() != (fixedSorter{}) {
		t.Errorf("ExceptionSorter() = %T, want the one WithExceptionSorter gave", c.ExceptionSorter())
	}
	if got := c.Stats().Balance; got != BalanceStatement {
		t.Errorf("Stats().Balance = %v, want statement", got)
	}
}

// Without options, Config reports the DSN's settings with the defaults a Connector fills in.
func TestConfigReportsDefaults(t *testing.T) {
	c, err := NewConnector("u:p@lb(127.0.0.1:1)/db?checkHealthIntervalSeconds=3600")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Config()
	if got.Logger != slog.Default() {
		t.Errorf("Config().Logger = %p, want slog.Default()", got.Logger)
	}
	if want, _ := exception.Lookup(DefaultExceptionSorter); got.Sorter != want {
		t.Errorf("Config().Sorter = %T, want the one registered as %q", got.Sorter, DefaultExceptionSorter)
	}
	if got.Warmup != DefaultWarmup {
		t.Errorf("Config().Warmup = %v, want %v", got.Warmup, DefaultWarmup)
	}
	if got.StatsInterval != DefaultStatsInterval || got.CheckHealthInterval != time.Hour {
		t.Errorf("Config() = stats %v, health %v; want %v, 1h", got.StatsInterval, got.CheckHealthInterval, DefaultStatsInterval)
	}
}

// The probe timeout is capped at the probe interval, wherever each comes from, and Config
// reports the capped value.
func TestConfigCapsProbeTimeoutAtInterval(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  string
		opts []Option
		want time.Duration
	}{
		{"option interval below DSN timeout", "u:p@lb(127.0.0.1:1)/db?checkHealthTimeoutMillis=3000",
			[]Option{WithCheckHealthInterval(time.Second)}, time.Second},
		{"option timeout above DSN interval", "u:p@lb(127.0.0.1:1)/db?checkHealthIntervalSeconds=2",
			[]Option{WithCheckHealthTimeout(time.Hour)}, 2 * time.Second},
		{"DSN timeout above DSN interval", "u:p@lb(127.0.0.1:1)/db?checkHealthIntervalSeconds=1&checkHealthTimeoutMillis=5000",
			nil, time.Second},
		{"timeout below interval stays", "u:p@lb(127.0.0.1:1)/db",
			[]Option{WithCheckHealthTimeout(250 * time.Millisecond)}, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := quietConnector(t, tc.dsn, tc.opts...)
			if got := c.Config().CheckHealthTimeout; got != tc.want {
				t.Fatalf("Config().CheckHealthTimeout = %v, want %v", got, tc.want)
			}
		})
	}
}

// Options act on the Connector's copy: the Config handed in is not changed, and the reported
// Config builds an equal Connector.
func TestOptionsLeaveTheGivenConfigAlone(t *testing.T) {
	cfg, err := ParseDSN("u:p@lb(127.0.0.1:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	before := describe(cfg)
	c, err := NewConnectorFromConfig(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithRecoverCheckCount(5),
		WithCheckHealthInterval(time.Hour), WithBalance(BalanceStatement))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if after := describe(cfg); after != before {
		t.Fatalf("NewConnectorFromConfig changed its Config:\n%s\n%s", before, after)
	}
	again, err := NewConnectorFromConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if a, b := describe(c.Config()), describe(again.Config()); a != b {
		t.Fatalf("a Connector built from another's Config runs differently:\n%s\n%s", a, b)
	}
}

// describe shows every field of c, the go-sql-driver settings as their DSN.
func describe(c *Config) string {
	cp := *c
	cp.MySQL = nil
	return c.MySQL.FormatDSN() + " " + fmt.Sprintf("%#v", plainConfig(cp))
}

// The last option wins over the DSN and over earlier options.
func TestLaterOptionWins(t *testing.T) {
	c := quietConnector(t, "u:p@lb(127.0.0.1:1)/db?balance=statement&recoverCheckCount=4",
		WithRecoverCheckCount(6), WithBalance(BalanceConnection), WithRecoverCheckCount(8))
	if got := c.Config(); got.RecoverCheckCount != 8 || got.Balance != BalanceConnection {
		t.Fatalf("Config() = recover %d, balance %v; want 8, connection", got.RecoverCheckCount, got.Balance)
	}
}

// A Config built or changed in code has each setting checked once, with an error that names
// the DSN parameter and the option.
func TestConfigSettingsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"health interval", func(c *Config) { c.CheckHealthInterval = 0 }, "checkHealthInterval is 0s; it must be positive (DSN parameter checkHealthIntervalSeconds, option WithCheckHealthInterval"},
		{"health timeout", func(c *Config) { c.CheckHealthTimeout = -time.Millisecond }, "checkHealthTimeout is -1ms"},
		{"balance interval", func(c *Config) { c.CheckBalanceInterval = 0 }, "checkBalanceInterval is 0s"},
		{"stats interval", func(c *Config) { c.StatsInterval = 0 }, "statsInterval is 0s; it must be positive (option WithStatsInterval"},
		{"recover too high", func(c *Config) { c.RecoverCheckCount = dsnparam.MaxCount + 1 }, "recoverCheckCount is 1001; it must be from 1 to 1000"},
		{"threshold", func(c *Config) { c.FatalErrorThreshold = -1 }, "fatalErrorThreshold is -1"},
		{"balance", func(c *Config) { c.Balance = 7 }, "invalid Balance BalanceMode(7)"},
		{"zone unlisted", func(c *Config) { c.Zones = map[string]string{"127.0.0.2:1": "az1"} }, `Zones names "127.0.0.2:1", which is not in Nodes`},
		{"zone name", func(c *Config) { c.Zones = map[string]string{"127.0.0.1:1": "a z"} }, `Zones["127.0.0.1:1"]: nodes: zone "a z"`},
		{"local zone", func(c *Config) { c.LocalZone = "a/z" }, `LocalZone: nodes: zone "a/z"`},
		{"zone share", func(c *Config) { c.ZoneMinUpPercent = 0 }, "zoneMinUpPercent is 0; it must be from 1 to 100"},
		{"balance policy", func(c *Config) { c.BalancePolicy = 9 }, "invalid BalancePolicy BalancePolicy(9): must be LeastLoad or LeastConnections"},
		{"sorter name", func(c *Config) { c.ExceptionSorter = "nosuch" }, `exceptionSorter="nosuch": no sorter registered`},
		{"warmup", func(c *Config) { c.Warmup = -time.Second }, "warmup is -1s; it must be from 0 (off)"},
		{"weight range", func(c *Config) { c.Weights = map[string]int{"127.0.0.1:1": 0} }, `Weights["127.0.0.1:1"] is 0; it must be from 1 to 65535`},
		{"weight unlisted", func(c *Config) { c.Weights = map[string]int{"127.0.0.2:1": 2} }, `Weights names "127.0.0.2:1", which is not in Nodes`},
		{"role unknown", func(c *Config) { c.Roles = map[string]nodes.Role{"127.0.0.1:1": nodes.RoleUnknown} }, `Roles["127.0.0.1:1"] is unknown; it must be nodes.RolePrimary, RoleReplica or RoleStandby`},
		{"role out of range", func(c *Config) { c.Roles = map[string]nodes.Role{"127.0.0.1:1": 9} }, `Roles["127.0.0.1:1"] is unknown`},
		{"role unlisted", func(c *Config) { c.Roles = map[string]nodes.Role{"127.0.0.2:1": nodes.RolePrimary} }, `Roles names "127.0.0.2:1", which is not in Nodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseDSN("u:p@lb(127.0.0.1:1)/db")
			if err != nil {
				t.Fatal(err)
			}
			tc.set(cfg)
			c, err := NewConnectorFromConfig(cfg)
			if err == nil {
				c.Close()
				t.Fatalf("NewConnectorFromConfig accepted the setting; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The settings only code can give (a logger, a sorter, the test hooks, a source) do not break
// printing a Config, and a source's own fields never show.
func TestConfigWithCodeOnlySettingsPrints(t *testing.T) {
	src := &secretSource{apiKey: testAPIKey}
	cfg, err := ParseDSN("app:" + testPassword + "@lb()/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Option{
		WithLogger(slog.New(slog.DiscardHandler)), WithExceptionSorter(fixedSorter{}), WithSource(src),
		WithJitter(func(time.Duration) time.Duration { return 0 }),
	} {
		if err := opt(cfg); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	for way, s := range map[string]string{
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", *cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"%s": cfg.String(), "json": string(js), "slog": cfg.LogValue().String(),
	} {
		if !strings.Contains(s, "lb()/db") && !strings.Contains(s, "lbd.Config{") {
			t.Errorf("%s printed a Config as %q: neither its DSN nor its fields", way, s)
		}
		for _, secret := range []string{testPassword, testAPIKey} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows the secret %q:\n%s", way, secret, s)
			}
		}
	}
}

// secretSource is a node source holding a credential, as a config-server source does.
type secretSource struct{ apiKey string }

func (*secretSource) Start(context.Context, func(nodes.Set)) (nodes.Set, error) {
	return nodes.Set{}, errors.New("secretSource does not start")
}
func (*secretSource) Close() error { return nil }

func TestWithWarmup(t *testing.T) {
	cfg, err := ParseDSN("u:p@lb(127.0.0.1:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	if err := WithWarmup(-time.Second)(cfg); err == nil || !strings.Contains(err.Error(), "WithWarmup: -1s is negative; 0 turns slow start off") {
		t.Fatalf("WithWarmup(-1s) = %v, want an error saying 0 turns it off", err)
	}
	if err := WithWarmup(2 * time.Minute)(cfg); err != nil || cfg.Warmup != 2*time.Minute {
		t.Fatalf("WithWarmup(2m) = %v, Warmup %v", err, cfg.Warmup)
	}
	if !strings.Contains(cfg.FormatDSN(), "warmupSeconds=120") {
		t.Fatalf("FormatDSN() = %q, want warmupSeconds=120", cfg.FormatDSN())
	}
}

// Configurations whose roles can never meet what they ask are refused at construction, with
// one line that names the parameter and the fix; those that can work are accepted.
func TestRolesThatCanNeverBeMetAreRefused(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		wantErr string // "" accepts
	}{
		{"u:p@lb(127.0.0.1:1,127.0.0.1:2)/db?balance=statement&readWriteSplit=true", "nothing gives a node a role: set roleCheck"},
		{"u:p@lb(127.0.0.1:1)/db?target=primary", "nothing gives a node a role"},
		{"u:p@lb(127.0.0.1:1#replica,127.0.0.1:2#replica)/db?balance=statement&readWriteSplit=true", "no node of the list is a primary"},
		{"u:p@lb(127.0.0.1:1#primary)/db?target=replica", "no node of the list is a replica and roleCheck is none: mark one as host:port#replica"},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=tidb", "roleCheck=tidb makes every node a primary"},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=galera", "roleCheck=galera never finds a replica: use another target or role check, or singleWriter=true"},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=oceanbase", "roleCheck=oceanbase never finds a replica"},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=galera&singleWriter=true", ""},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=tidb&singleWriter=true", ""},
		{"u:p@lb(127.0.0.1:1)/db?target=replica&roleCheck=group-replication", ""},
		{"u:p@lb(127.0.0.1:1)/db?balance=statement&readWriteSplit=true&roleCheck=galera", ""},
		{"u:p@lb(127.0.0.1:1)/db?roleCheck=galera&maxReplicationLagSeconds=5", "a Galera node does not have: leave it 0"},
		{"u:p@lb(127.0.0.1:1)/db?balance=statement&readWriteSplit=true&roleCheck=galera&singleWriter=true&readConsistency=gtid", ""},
		{"u:p@lb(127.0.0.1:1,127.0.0.1:2)/db?balance=statement&readWriteSplit=true&roleCheck=mysql", ""},
		{"u:p@lb(127.0.0.1:1#primary,127.0.0.1:2)/db?balance=statement&readWriteSplit=true", ""},
		{"u:p@lb(127.0.0.1:1)/db?balance=statement&readWriteSplit=true&roleCheck=tidb", ""},
		{"u:p@lb(127.0.0.1:1)/db?target=prefer-primary", ""}, // falls back to nodes of unknown role
		{"u:p@lb(127.0.0.1:1)/db?target=primary&roleCheck=SELECT role FROM t", ""},
	} {
		c, err := NewConnector(tc.dsn, WithLogger(slog.New(slog.DiscardHandler)))
		if c != nil {
			c.Close()
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v; want it accepted", tc.dsn, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v; want one containing %q", tc.dsn, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: a multi-line error %q", tc.dsn, err)
		}
	}
}

// The split cannot see an unqualified table of the default database, so a DSN whose database
// is a schema whose tables differ from server to server would send "SELECT * FROM user" or
// "SELECT * FROM processlist" to a replica: it is refused at construction.
func TestSplitRefusesAPerServerDefaultDatabase(t *testing.T) {
	for _, db := range []string{"mysql", "information_schema", "PERFORMANCE_SCHEMA", "sys"} {
		dsn := "u:p@lb(127.0.0.1:1#primary,127.0.0.1:2#replica)/" + db + "?balance=statement&readWriteSplit=true"
		c, err := NewConnector(dsn, WithLogger(slog.New(slog.DiscardHandler)))
		if c != nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), db) {
			t.Errorf("%s: error %v; want a refusal naming %s", dsn, err, db)
		}
	}
	c, err := NewConnector("u:p@lb(127.0.0.1:1#primary,127.0.0.1:2#replica)/app?balance=statement&readWriteSplit=true", WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("an application database: %v", err)
	}
	c.Close()
}
