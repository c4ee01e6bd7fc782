package lbd

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// dsnCases is the one table of DSN cases shared by the parser test, the reformat test and the
// fuzz seed corpus.
var dsnCases = []struct {
	name    string
	dsn     string
	wantErr string // substring of the error; "" = must parse
	check   func(t *testing.T, c *Config)
}{
	{
		name: "defaults",
		dsn:  "root:secret@lb(10.0.0.1:2883,10.0.0.2:2883)/orders",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:2883", "10.0.0.2:2883")
			eq(t, "user", c.MySQL.User, "root")
			eq(t, "password", c.MySQL.Passwd, "secret")
			eq(t, "db", c.MySQL.DBName, "orders")
			eq(t, "health interval", c.CheckHealthInterval, DefaultCheckHealthInterval)
			eq(t, "health timeout", c.CheckHealthTimeout, DefaultCheckHealthTimeout)
			eq(t, "balance interval", c.CheckBalanceInterval, DefaultCheckBalanceInterval)
			eq(t, "recover", c.RecoverCheckCount, DefaultRecoverCheckCount)
			eq(t, "fatal threshold", c.FatalErrorThreshold, DefaultFatalErrorThreshold)
			eq(t, "fatal window", c.FatalErrorWindow, DefaultFatalErrorWindow)
			eq(t, "logStats", c.LogStats, false)
			eq(t, "sorter", c.ExceptionSorter, DefaultExceptionSorter)
			eq(t, "balance", c.Balance, BalanceConnection)
			eq(t, "max ejection percent", c.MaxEjectionPercent, DefaultMaxEjectionPercent)
			eq(t, "base ejection time (0: the probe interval)", c.BaseEjectionTime, time.Duration(0))
		},
	},
	{
		name: "passive outlier detection settings",
		dsn:  "u:p@lb(10.0.0.1:1)/db?maxEjectionPercent=50&baseEjectionTimeSeconds=30",
		check: func(t *testing.T, c *Config) {
			eq(t, "max ejection percent", c.MaxEjectionPercent, 50)
			eq(t, "base ejection time", c.BaseEjectionTime, 30*time.Second)
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:1)/db?maxEjectionPercent=50&baseEjectionTimeSeconds=30")
		},
	},
	{
		name: "galera with one writer",
		dsn:  "u:p@lb(10.0.0.1:1,10.0.0.2:1)/db?roleCheck=galera&singleWriter=true",
		check: func(t *testing.T, c *Config) {
			eq(t, "role check", c.RoleCheck, "galera")
			eq(t, "single writer", c.SingleWriter, true)
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:1,10.0.0.2:1)/db?roleCheck=galera&singleWriter=true")
		},
	},
	{name: "single writer not a bool", dsn: "u:p@lb(10.0.0.1:1)/db?singleWriter=one", wantErr: `singleWriter="one"`},
	{name: "group replication role check", dsn: "u:p@lb(10.0.0.1:1)/db?roleCheck=group-replication", check: func(t *testing.T, c *Config) {
		eq(t, "role check", c.RoleCheck, "group-replication")
	}},
	{
		name: "passive outlier detection off",
		dsn:  "u:p@lb(10.0.0.1:1)/db?maxEjectionPercent=0",
		check: func(t *testing.T, c *Config) {
			eq(t, "max ejection percent", c.MaxEjectionPercent, 0)
		},
	},
	{name: "go-sql-driver duration without unit", dsn: "u:p@lb(10.0.0.1:1)/db?timeout=5", wantErr: `DSN parameter timeout="5" (go-sql-driver's): time: missing unit in duration "5"; write a duration with its unit, e.g. timeout=5s`},
	{name: "go-sql-driver bool", dsn: "u:p@lb(10.0.0.1:1)/db?checkHealthIntervalSeconds=5&parseTime=yes", wantErr: `DSN parameter parseTime="yes" (go-sql-driver's)`},
	{name: "go-sql-driver time zone", dsn: "u:p@lb(10.0.0.1:1)/db?loc=Nowhere%2FAtAll", wantErr: `DSN parameter loc="Nowhere/AtAll"`},
	{name: "base ejection time zero", dsn: "u:p@lb(10.0.0.1:1)/db?baseEjectionTimeSeconds=0", wantErr: "baseEjectionTimeSeconds"},
	{name: "max ejection percent above 100", dsn: "u:p@lb(10.0.0.1:1)/db?maxEjectionPercent=101", wantErr: "maxEjectionPercent"},
	{name: "max ejection percent negative", dsn: "u:p@lb(10.0.0.1:1)/db?maxEjectionPercent=-1", wantErr: "from 0 to 100"},
	{name: "base ejection time not a number", dsn: "u:p@lb(10.0.0.1:1)/db?baseEjectionTimeSeconds=5s", wantErr: "baseEjectionTimeSeconds"},
	{
		name: "statement balancing",
		dsn:  "u:p@lb(10.0.0.1:1,10.0.0.2:2)/db?parseTime=true&balance=statement&checkHealthIntervalSeconds=7",
		check: func(t *testing.T, c *Config) {
			eq(t, "balance", c.Balance, BalanceStatement)
			eq(t, "health interval", c.CheckHealthInterval, 7*time.Second)
			eq(t, "parseTime", c.MySQL.ParseTime, true)
			if !strings.Contains(c.FormatDSN(), "balance=statement") {
				t.Errorf("FormatDSN() = %q lost balance=statement", c.FormatDSN())
			}
		},
	},
	{
		name: "weights and warm-up",
		dsn:  "u:p@lb(10.0.0.1:2883*3,[fd00::1]:2883, db.example:1*1)/db?warmupSeconds=90",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:2883", "[fd00::1]:2883", "db.example:1")
			eq(t, "weights", fmt.Sprint(c.Weights), "map[10.0.0.1:2883:3 db.example:1:1]")
			eq(t, "warmup", c.Warmup, 90*time.Second)
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:2883*3,[fd00::1]:2883,db.example:1*1)/db?warmupSeconds=90")
		},
	},
	{
		name: "warm-up off",
		dsn:  "u:p@lb(10.0.0.1:1)/db?warmupSeconds=0",
		check: func(t *testing.T, c *Config) {
			eq(t, "warmup", c.Warmup, time.Duration(0))
			eq(t, "weights", c.Weights == nil, true)
		},
	},
	{
		name: "roles",
		dsn:  "u:p@lb(10.0.0.1:2883#primary, [fd00::1]:2883*3#Replica,db.example:1,10.0.0.4:1*2)/db?target=primary",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:2883", "[fd00::1]:2883", "db.example:1", "10.0.0.4:1")
			eq(t, "roles", fmt.Sprint(c.Roles), "map[10.0.0.1:2883:primary [fd00::1]:2883:replica]")
			eq(t, "weights", fmt.Sprint(c.Weights), "map[10.0.0.4:1:2 [fd00::1]:2883:3]")
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:2883#primary,[fd00::1]:2883*3#replica,db.example:1,10.0.0.4:1*2)/db?target=primary")
		},
	},
	{name: "role unknown word", dsn: "u:p@lb(10.0.0.1:1#writer)/db", wantErr: `has role "writer", want primary, replica or standby after '#'`},
	{name: "role empty", dsn: "u:p@lb(10.0.0.1:1#)/db", wantErr: `has role ""`},
	{name: "role before weight", dsn: "u:p@lb(10.0.0.1:1#replica*2)/db", wantErr: "write the weight first: host:port*weight#role"},
	{name: "role duplicate", dsn: "u:p@lb(10.0.0.1:1#primary,10.0.0.1:01#replica)/db", wantErr: "listed twice"},
	{name: "weight zero", dsn: "u:p@lb(10.0.0.1:1*0)/db", wantErr: `has weight "0", want a whole number from 1 to 65535 after '*'`},
	{name: "weight too large", dsn: "u:p@lb(10.0.0.1:1*65536)/db", wantErr: `has weight "65536"`},
	{name: "weight not a number", dsn: "u:p@lb(10.0.0.1:1*2.5)/db", wantErr: `has weight "2.5"`},
	{name: "weight signed", dsn: "u:p@lb(10.0.0.1:1*+2)/db", wantErr: `has weight "+2"`},
	{name: "weight empty", dsn: "u:p@lb(10.0.0.1:1*)/db", wantErr: `has weight ""`},
	{name: "weight twice", dsn: "u:p@lb(10.0.0.1:1*2*3)/db", wantErr: `has weight "2*3"`},
	{name: "weight without port", dsn: "u:p@lb(10.0.0.1*2)/db", wantErr: "is not host:port"},
	{name: "weighted duplicate", dsn: "u:p@lb(10.0.0.1:1*2,10.0.0.1:01)/db", wantErr: "listed twice"},
	{name: "warm-up negative", dsn: "u:p@lb(10.0.0.1:1)/db?warmupSeconds=-1", wantErr: "warmupSeconds"},
	{name: "warm-up fraction", dsn: "u:p@lb(10.0.0.1:1)/db?warmupSeconds=1.5", wantErr: "from 0 (no slow start)"},
	{
		name: "connection balancing spelt out",
		dsn:  "u:p@lb(10.0.0.1:1)/db?balance=connection",
		check: func(t *testing.T, c *Config) {
			eq(t, "balance", c.Balance, BalanceConnection)
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:1)/db") // the default is left out
		},
	},
	{
		name: "lbd parameters are taken out, driver parameters pass through",
		dsn: "u:p@lb(a.example:3306,b.example:3306)/db?parseTime=true&checkHealthIntervalSeconds=7" +
			"&checkBalanceIntervalSeconds=20&recoverCheckCount=4&logStats=true&checkHealthTimeoutMillis=500" +
			"&fatalErrorThreshold=5&fatalErrorWindowSeconds=30&exceptionSorter=mysql" +
			"&unsupportedMethodBehavior=ignoreCall&timeout=2s&readTimeout=10s&time_zone=%27%2B00%3A00%27",
		check: func(t *testing.T, c *Config) {
			eq(t, "health interval", c.CheckHealthInterval, 7*time.Second)
			eq(t, "balance interval", c.CheckBalanceInterval, 20*time.Second)
			eq(t, "health timeout", c.CheckHealthTimeout, 500*time.Millisecond)
			eq(t, "recover", c.RecoverCheckCount, 4)
			eq(t, "fatal threshold", c.FatalErrorThreshold, 5)
			eq(t, "fatal window", c.FatalErrorWindow, 30*time.Second)
			eq(t, "logStats", c.LogStats, true)
			eq(t, "unsupportedMethodBehavior", c.UnsupportedMethodBehavior, "ignoreCall")
			eq(t, "parseTime", c.MySQL.ParseTime, true)
			eq(t, "timeout", c.MySQL.Timeout, 2*time.Second)
			eq(t, "readTimeout", c.MySQL.ReadTimeout, 10*time.Second)
			if len(c.MySQL.Params) != 1 || c.MySQL.Params["time_zone"] != "'+00:00'" {
				t.Errorf("session params = %v, want only time_zone", c.MySQL.Params)
			}
		},
	},
	{
		name: "IPv6 nodes",
		dsn:  "u:p@lb([fd00::3]:2883,[::1]:3306,10.0.0.1:2883)/db",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "[fd00::3]:2883", "[::1]:3306", "10.0.0.1:2883")
		},
	},
	{
		name: "password with @ , ) / and :",
		dsn:  "app:p@ss,w)r/d:x@lb(10.0.0.1:1,10.0.0.2:2)/db",
		check: func(t *testing.T, c *Config) {
			eq(t, "password", c.MySQL.Passwd, "p@ss,w)r/d:x")
			wantNodes(t, c, "10.0.0.1:1", "10.0.0.2:2")
		},
	},
	{
		name: "spaces around entries are trimmed",
		dsn:  "u@lb(10.0.0.1:1, 10.0.0.2:2)/db",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:1", "10.0.0.2:2")
			eq(t, "password", c.MySQL.Passwd, "")
		},
	},
	{
		name: "single node, no database",
		dsn:  "u:p@lb(db.example:2883)/",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "db.example:2883")
			eq(t, "db", c.MySQL.DBName, "")
		},
	},
	{
		name: "empty list: the nodes come from a source option",
		dsn:  "u:p@lb()/db?parseTime=true",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c)
			eq(t, "parseTime", c.MySQL.ParseTime, true)
			eq(t, "formatted", c.FormatDSN(), "u:p@lb()/db?parseTime=true")
		},
	},
	{name: "unregistered source network", dsn: "u:p@lbetcd(e1:2379)/db", wantErr: `import _ "github.com/lbd-go/lbd/nodes/etcd"`},
	{name: "camelCase key nobody reads", dsn: "u:p@lb(10.0.0.1:1)/db?etcdKey=x", wantErr: `unknown DSN parameter "etcdKey"`},
	{name: "unescaped slash", dsn: "u:p@lb(10.0.0.1:1)/db?x=a/b", wantErr: "lbd: invalid DSN: did you forget to escape"},
	{name: "stray comma", dsn: "u:p@lb(10.0.0.1:1,,10.0.0.2:2)/db", wantErr: "empty entry"},
	{name: "missing port", dsn: "u:p@lb(10.0.0.1,10.0.0.2:2)/db", wantErr: `"10.0.0.1" is not host:port`},
	{name: "bad port", dsn: "u:p@lb(10.0.0.1:http)/db", wantErr: "want a number from 1 to 65535"},
	{name: "port zero", dsn: "u:p@lb(10.0.0.1:0)/db", wantErr: "want a number from 1 to 65535"},
	{name: "port too large", dsn: "u:p@lb(10.0.0.1:70000)/db", wantErr: "want a number from 1 to 65535"},
	{name: "no host", dsn: "u:p@lb(:3306)/db", wantErr: "has no host"},
	{name: "bare IPv6", dsn: "u:p@lb(fd00::3:2883)/db", wantErr: "IPv6 needs [addr]:port"},
	{name: "duplicate node", dsn: "u:p@lb(10.0.0.1:1,10.0.0.1:1)/db", wantErr: "listed twice"},
	{name: "wrong network", dsn: "u:p@tcp(10.0.0.1:1)/db", wantErr: `network is "tcp", want "lb"`},
	{name: "no slash", dsn: "u:p@lb(10.0.0.1:1)", wantErr: "invalid DSN"},
	{name: "bad interval", dsn: "u:p@lb(10.0.0.1:1)/db?checkHealthIntervalSeconds=abc", wantErr: `checkHealthIntervalSeconds="abc"`},
	{name: "zero interval", dsn: "u:p@lb(10.0.0.1:1)/db?checkBalanceIntervalSeconds=0", wantErr: "checkBalanceIntervalSeconds"},
	{name: "negative recover", dsn: "u:p@lb(10.0.0.1:1)/db?recoverCheckCount=-1", wantErr: "recoverCheckCount"},
	{name: "overflowing interval", dsn: "u:p@lb(10.0.0.1:1)/db?checkHealthIntervalSeconds=18446744074", wantErr: "checkHealthIntervalSeconds"},
	{name: "overflowing window", dsn: "u:p@lb(10.0.0.1:1)/db?fatalErrorWindowSeconds=9223372037", wantErr: "fatalErrorWindowSeconds"},
	{name: "huge threshold", dsn: "u:p@lb(10.0.0.1:1)/db?fatalErrorThreshold=1000000000000000", wantErr: "from 1 to 1000"},
	{name: "huge timeout", dsn: "u:p@lb(10.0.0.1:1)/db?checkHealthTimeoutMillis=99999999999", wantErr: "checkHealthTimeoutMillis"},
	{name: "bad balance", dsn: "u:p@lb(10.0.0.1:1)/db?balance=statment", wantErr: `balance="statment"`},
	{name: "misspelt balance", dsn: "u:p@lb(10.0.0.1:1)/db?Balance=statement", wantErr: `did you mean "balance"`},
	{name: "bad bool", dsn: "u:p@lb(10.0.0.1:1)/db?logStats=yes", wantErr: `logStats="yes": must be true or false`},
	{name: "empty sorter", dsn: "u:p@lb(10.0.0.1:1)/db?exceptionSorter=", wantErr: "exceptionSorter"},
	{
		// '~' passes go-sql-driver's DSN parser inside lb(...), which splits only on '@', '/',
		// '(' and ')'; each zone reaches Config.Zones, and FormatDSN writes it back.
		name: "zones and the local zone",
		dsn:  "u:p@lb(10.0.0.1:2883*2#replica~az1,[fd00::1]:2883~us-east-1a,10.0.0.3:2883)/db?localZone=az1&zoneMinUpPercent=60",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:2883", "[fd00::1]:2883", "10.0.0.3:2883")
			eq(t, "zones", fmt.Sprint(c.Zones), "map[10.0.0.1:2883:az1 [fd00::1]:2883:us-east-1a]")
			eq(t, "weights", fmt.Sprint(c.Weights), "map[10.0.0.1:2883:2]")
			eq(t, "roles", fmt.Sprint(c.Roles), "map[10.0.0.1:2883:replica]")
			eq(t, "localZone", c.LocalZone, "az1")
			eq(t, "zoneMinUpPercent", c.ZoneMinUpPercent, 60)
			for _, want := range []string{"lb(10.0.0.1:2883*2#replica~az1,[fd00::1]:2883~us-east-1a,10.0.0.3:2883)", "localZone=az1", "zoneMinUpPercent=60"} {
				if !strings.Contains(c.FormatDSN(), want) {
					t.Errorf("FormatDSN() = %q lost %s", c.FormatDSN(), want)
				}
			}
		},
	},
	{
		// '+' passes go-sql-driver's DSN parser inside lb(...) as '~' does (groups_test.go's
		// TestGroupsSurviveGoSQLDriver parses it there and back); each node's groups reach
		// Config.Groups, and FormatDSN writes them back.
		name: "groups and the default group",
		dsn:  "u:p@lb(10.0.0.1:2883*2#replica+analytics~az1,[fd00::1]:2883+reporting+analytics,10.0.0.3:2883)/db?group=analytics",
		check: func(t *testing.T, c *Config) {
			wantNodes(t, c, "10.0.0.1:2883", "[fd00::1]:2883", "10.0.0.3:2883")
			eq(t, "groups", fmt.Sprint(c.Groups), "map[10.0.0.1:2883:analytics [fd00::1]:2883:reporting+analytics]")
			eq(t, "zones", fmt.Sprint(c.Zones), "map[10.0.0.1:2883:az1]")
			eq(t, "group", c.Group, "analytics")
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:2883*2#replica+analytics~az1,[fd00::1]:2883+reporting+analytics,10.0.0.3:2883)/db?group=analytics")
		},
	},
	{
		name: "isolated groups",
		dsn:  "u:p@lb(10.0.0.1:1,10.0.0.2:1+bi,10.0.0.3:1+etl)/db?isolatedGroups=bi,%20etl",
		check: func(t *testing.T, c *Config) {
			eq(t, "isolated", strings.Join(c.IsolatedGroups, " "), "bi etl")
			eq(t, "formatted", c.FormatDSN(), "u:p@lb(10.0.0.1:1,10.0.0.2:1+bi,10.0.0.3:1+etl)/db?isolatedGroups=bi%2Cetl")
		},
	},
	{name: "group in upper case", dsn: "u:p@lb(10.0.0.1:1+BI)/db", wantErr: `group "BI" has an upper-case letter; write group names in lower case ("bi")`},
	{name: "group empty", dsn: "u:p@lb(10.0.0.1:1+)/db", wantErr: `group "" must be 1 to 32 characters`},
	{name: "group after the zone", dsn: "u:p@lb(10.0.0.1:1~az1+bi)/db", wantErr: "write the zone last: host:port*weight#role+group~zone"},
	{name: "group before the role", dsn: "u:p@lb(10.0.0.1:1+bi#replica)/db", wantErr: "has its groups before its weight or role"},
	{name: "group parameter bad", dsn: "u:p@lb(10.0.0.1:1)/db?group=a.b", wantErr: `group="a.b": group "a.b" has the character '.'`},
	{name: "bad zone", dsn: "u:p@lb(10.0.0.1:1~az/1)/db", wantErr: `zone "az/1" has the character '/'`},
	{name: "zone with a space", dsn: "u:p@lb(10.0.0.1:1~az%201)/db", wantErr: `zone "az%201" has the character '%'`},
	{name: "bad localZone", dsn: "u:p@lb(10.0.0.1:1)/db?localZone=a%20z", wantErr: `localZone="a z": nodes: zone "a z" has the character ' '`},
	{name: "zoneMinUpPercent 0", dsn: "u:p@lb(10.0.0.1:1)/db?zoneMinUpPercent=0", wantErr: "zoneMinUpPercent"},
	{name: "bad balancePolicy", dsn: "u:p@lb(10.0.0.1:1)/db?balancePolicy=least-latency", wantErr: `balancePolicy="least-latency": must be least-load or least-connections`},
	{
		name: "balance policy least-connections",
		dsn:  "u:p@lb(10.0.0.1:1)/db?balance=statement&balancePolicy=least-connections",
		check: func(t *testing.T, c *Config) {
			eq(t, "balancePolicy", c.BalancePolicy, LeastConnections)
			if !strings.Contains(c.FormatDSN(), "balancePolicy=least-connections") {
				t.Errorf("FormatDSN() = %q lost balancePolicy=least-connections", c.FormatDSN())
			}
		},
	},
	{
		name: "balance policy default",
		dsn:  "u:p@lb(10.0.0.1:1)/db?balancePolicy=least-load",
		check: func(t *testing.T, c *Config) {
			eq(t, "balancePolicy", c.BalancePolicy, DefaultBalancePolicy)
			if strings.Contains(c.FormatDSN(), "balancePolicy") {
				t.Errorf("FormatDSN() = %q writes the default balancePolicy", c.FormatDSN())
			}
		},
	},
	{name: "bad unsupportedMethodBehavior", dsn: "u:p@lb(10.0.0.1:1)/db?unsupportedMethodBehavior=explode", wantErr: "unsupportedMethodBehavior"},
	{name: "misspelt parameter", dsn: "u:p@lb(10.0.0.1:1)/db?checkhealthintervalseconds=5", wantErr: `did you mean "checkHealthIntervalSeconds"`},
	{name: "near-miss parameter", dsn: "u:p@lb(10.0.0.1:1)/db?checkHealthIntervalSecond=5", wantErr: `did you mean "checkHealthIntervalSeconds"`},
	{name: "bare slash in a value", dsn: "u:p@lb(10.0.0.1:1)/db?sql_mode=/x", wantErr: `write it as %2F`},
	{name: "go-sql-driver parameter in lower case", dsn: "u:p@lb(10.0.0.1:1)/db?parsetime=true", wantErr: `did you mean go-sql-driver's "parseTime"?`},
	{name: "go-sql-driver parameter in other case", dsn: "u:p@lb(10.0.0.1:1)/db?readtimeout=1s", wantErr: `did you mean go-sql-driver's "readTimeout"?`},
	{name: "go-sql-driver parameter near miss", dsn: "u:p@lb(10.0.0.1:1)/db?multiStatement=true", wantErr: `did you mean go-sql-driver's "multiStatements"?`},
	{name: "session variable passes", dsn: "u:p@lb(10.0.0.1:1)/db?sql_mode=%27ANSI%27&transaction_isolation=%27READ-COMMITTED%27"},
	{name: "bad driver parameter", dsn: "u:p@lb(10.0.0.1:1)/db?parseTime=maybe", wantErr: "invalid DSN"},
	{name: "secret not in parameter error", dsn: "u:hunter2@lb(10.0.0.1:1)/db?logStats=2", wantErr: "logStats"},

	// A source parameter in the wrong letter case or a letter off is a typo of this network's
	// name, not a parameter of another network (lbdsnone and lbdsntwo are registered below).
	{name: "source parameter in other letter case", dsn: "u:p@lbdsnone(cs:1)/db?dsnOneApikey=k", wantErr: `unknown DSN parameter "dsnOneApikey": did you mean "dsnOneApiKey"?`},
	{name: "source parameter all lower case", dsn: "u:p@lbdsnone(cs:1)/db?dsnoneschema=s", wantErr: `did you mean "dsnOneSchema"?`},
	{name: "source parameter a letter off", dsn: "u:p@lbdsnone(cs:1)/db?dsnOneApiKy=k", wantErr: `did you mean "dsnOneApiKey"?`},
	{name: "lbd parameter in other case on a source network", dsn: "u:p@lbdsnone(cs:1)/db?LogStats=true", wantErr: `did you mean "logStats"?`},
	{name: "parameter of another source network", dsn: "u:p@lbdsnone(cs:1)/db?dsnTwoKey=k", wantErr: `DSN parameter "dsnTwoKey" is read by the node source of another network, not by lbdsnone(...)`},
	{name: "exact parameter of another network near one of this network's", dsn: "u:p@lbdsnone(cs:1)/db?dsnOneApiKeys=k", wantErr: `"dsnOneApiKeys" is read by the node source of another network`},
	{name: "source parameter on a static list", dsn: "u:p@lb(10.0.0.1:1)/db?dsnOneApiKey=k", wantErr: `"dsnOneApiKey" is read by the node source of another network, not by lb(...)`},
	{name: "another network's parameter in other letter case", dsn: "u:p@lb(10.0.0.1:1)/db?dsnOneApikey=k", wantErr: `"dsnOneApikey": did you mean "dsnOneApiKey"? That one is read by the node source of another network, not by lb(...)`},
}

// Two source networks for the parameter-name cases above. dsnOneApiKeys belongs to lbdsntwo on
// purpose: it is one letter off lbdsnone's dsnOneApiKey.
func init() {
	newNone := func(nodes.SourceConfig) (nodes.Source, error) { return nodes.StaticAddrs("10.0.0.1:1"), nil }
	nodes.Register("lbdsnone", nodes.SourceFactory{Params: []string{"dsnOneSchema", "dsnOneApiKey"}, Secrets: []string{"dsnOneApiKey"}, New: newNone})
	nodes.Register("lbdsntwo", nodes.SourceFactory{Params: []string{"dsnTwoKey", "dsnOneApiKeys"}, New: newNone})
}

func TestParseDSN(t *testing.T) {
	for _, tc := range dsnCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseDSN(tc.dsn)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseDSN(%q) succeeded, want error containing %q", tc.dsn, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				assertNoSecret(t, tc.dsn, err.Error())
				return
			}
			if err != nil {
				t.Fatalf("ParseDSN(%q): %v", tc.dsn, err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
			for k := range c.MySQL.Params {
				if _, ok := lookupParam(k); ok {
					t.Errorf("lbd parameter %q left in the driver's params", k)
				}
			}
		})
	}
}

// TestFormatDSNRoundTrip checks that formatting a parsed DSN and parsing it again gives the same
// Config, and that formatting is stable.
func TestFormatDSNRoundTrip(t *testing.T) {
	for _, tc := range dsnCases {
		if tc.wantErr != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			roundTrip(t, tc.dsn)
		})
	}
}

func roundTrip(t *testing.T, dsn string) {
	t.Helper()
	c1, err := ParseDSN(dsn)
	if err != nil {
		return
	}
	out1 := c1.FormatDSN()
	c2, err := ParseDSN(out1)
	if err != nil {
		t.Fatalf("ParseDSN(FormatDSN(%q)) = %q: %v", dsn, out1, err)
	}
	out2 := c2.FormatDSN()
	if out1 != out2 {
		t.Fatalf("formatting is not stable:\n%s\n%s", out1, out2)
	}
	if c1.MySQL.FormatDSN() != c2.MySQL.FormatDSN() ||
		strings.Join(c1.Nodes, ",") != strings.Join(c2.Nodes, ",") ||
		fmt.Sprint(c1.Weights) != fmt.Sprint(c2.Weights) || fmt.Sprint(c1.Roles) != fmt.Sprint(c2.Roles) || c1.Warmup != c2.Warmup ||
		c1.CheckHealthInterval != c2.CheckHealthInterval || c1.CheckHealthTimeout != c2.CheckHealthTimeout ||
		c1.CheckBalanceInterval != c2.CheckBalanceInterval || c1.RecoverCheckCount != c2.RecoverCheckCount ||
		c1.FatalErrorThreshold != c2.FatalErrorThreshold || c1.FatalErrorWindow != c2.FatalErrorWindow ||
		c1.LogStats != c2.LogStats || c1.ExceptionSorter != c2.ExceptionSorter ||
		c1.UnsupportedMethodBehavior != c2.UnsupportedMethodBehavior || c1.Balance != c2.Balance {
		t.Fatalf("round trip changed the config:\n%+v\n%+v", c1, c2)
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, tc := range dsnCases {
		f.Add(tc.dsn)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		c, err := ParseDSN(dsn)
		if err != nil {
			return
		}
		if len(c.Nodes) == 0 && len(c.SourceAddrs) == 0 && !strings.Contains(c.FormatDSN(), c.Network+"()/") {
			t.Fatalf("ParseDSN(%q) lost its node list: %q", dsn, c.FormatDSN())
		}
		roundTrip(t, dsn)
	})
}

func TestConfigStringHidesPassword(t *testing.T) {
	c, err := ParseDSN("app:hunter2@lb(10.0.0.1:1,10.0.0.2:2)/db?logStats=true")
	if err != nil {
		t.Fatal(err)
	}
	s := c.String()
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "app:***@lb(") {
		t.Fatalf("String() = %q, want the password masked", s)
	}
	if !strings.Contains(c.FormatDSN(), "hunter2") {
		t.Fatalf("FormatDSN must keep the password: %q", c.FormatDSN())
	}
}

func wantNodes(t *testing.T, c *Config, want ...string) {
	t.Helper()
	if strings.Join(c.Nodes, ",") != strings.Join(want, ",") || (len(want) == 0 && c.Nodes != nil) {
		t.Errorf("nodes = %v, want %v", c.Nodes, want)
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// assertNoSecret fails when text contains the DSN's password.
func assertNoSecret(t *testing.T, dsn, text string) {
	t.Helper()
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon > at {
		return
	}
	if pw := dsn[colon+1 : at]; len(pw) >= 3 && strings.Contains(text, pw) {
		t.Errorf("%q contains the password", text)
	}
}

// A DSN that lists no node and names no source is refused at once, with what to write instead.
func TestNoNodesAndNoSource(t *testing.T) {
	if _, err := NewConnector("u:p@lb()/db", WithLogger(discardLogger())); !errors.Is(err, errNoNodes) {
		t.Fatalf("no nodes and no source: %v, want errNoNodes", err)
	}
}

// TestLocalZoneFromTheEnvironment: LBD_LOCAL_ZONE replaces localZone when set, and set but
// empty turns zones off, so that machines in several zones share one DSN.
func TestLocalZoneFromTheEnvironment(t *testing.T) {
	const dsn = "u:p@lb(10.0.0.1:1~az1,10.0.0.2:1~az2)/db?localZone=az1"
	for _, c := range []struct{ env, want string }{{"az2", "az2"}, {"", ""}, {" az3 ", "az3"}} {
		t.Setenv(EnvLocalZone, c.env)
		cfg, err := ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.LocalZone != c.want {
			t.Errorf("%s=%q: LocalZone %q, want %q", EnvLocalZone, c.env, cfg.LocalZone, c.want)
		}
	}
	t.Setenv(EnvLocalZone, "a z")
	if _, err := ParseDSN(dsn); err == nil || !strings.Contains(err.Error(), EnvLocalZone) {
		t.Errorf("a bad %s: ParseDSN = %v, want an error naming it", EnvLocalZone, err)
	}
}
