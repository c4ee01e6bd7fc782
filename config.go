package lbd

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/internal/dsnparam"
	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/sqlclass"
	"github.com/lbd-go/lbd/nodes"
)

// Config is a Connector's whole configuration: go-sql-driver's settings, the node list and
// lbd's own parameters from the DSN, and the settings only code can give (Logger, Sorter,
// StatsInterval and what the With... options set). Build one with ParseDSN and change it in
// code or through Options; the zero value is not usable. (*Connector).Config reports the
// configuration the Connector runs with, after options, defaults and clamps.
type Config struct {
	// MySQL holds every setting go-sql-driver understands (user, password, database, timeouts,
	// TLS, parseTime, ...). Its Net is Network and its Addr the comma-joined node list; lbd's own
	// parameters are not in MySQL.Params.
	MySQL *mysql.Config

	// Network is the DSN's network: Network ("lb") for a static proxy list, or the name of a
	// registered node source such as "lbremote", "lbetcd" or "lbdns".
	Network string

	// Nodes are the proxies' "host:port" addresses for network "lb", in DSN order, without
	// duplicates. It is empty for a source network, and may be empty for "lb()" when the
	// Connector gets a source through WithSource.
	Nodes []string

	// Weights holds the weight of each entry of Nodes written "host:port*weight" (from 1 to
	// nodes.MaxWeight), keyed by its canonical address; a node not in it has the default weight,
	// nodes.DefaultWeight. New connections go by weighted least-connections: a node of weight 2
	// holds twice the connections of a node of weight 1.
	Weights map[string]int
	// Roles holds the role of each entry of Nodes written "host:port#role" or
	// "host:port*weight#role" (nodes.RolePrimary, RoleReplica or RoleStandby), keyed by its
	// canonical address; a node not in it has an unknown role. Without a RoleCheck these are
	// the nodes' roles, which Target picks by; with one, the check's answers replace them.
	Roles map[string]nodes.Role
	// Zones holds the zone of each entry of Nodes written "host:port~zone" (after its weight
	// and role, if any), keyed by its canonical address; a node not in it has no zone. See
	// LocalZone.
	Zones map[string]string
	// Groups holds the groups of each entry of Nodes written "host:port+group" (several:
	// "host:port+group1+group2", after its weight and role, before its zone), keyed by its
	// canonical address, as nodes.Node.Groups spells them; a node not in it belongs to none.
	// See Group and InGroup.
	Groups map[string]string
	// SourceAddrs are the address entries of a source network (config-servers, etcd endpoints,
	// a DNS name), trimmed, in DSN order; the source validates them.
	SourceAddrs []string
	// SourceParams are the DSN parameters the source network claims (see nodes.Register), kept
	// out of the driver's session parameters.
	SourceParams map[string]string

	// Balance is what lbd balances: new connections (BalanceConnection, the default) or every
	// checkout of a pooled connection (BalanceStatement); DSN parameter balance, option
	// WithBalance.
	Balance BalanceMode
	// BalancePolicy is how a pick weighs the up nodes: LeastLoad (work in flight × latency
	// estimate) or LeastConnections (counts alone); DSN parameter balancePolicy, option
	// WithBalancePolicy, default DefaultBalancePolicy.
	BalancePolicy BalancePolicy
	// LocalZone is the client's zone (localZone, or the environment variable LBD_LOCAL_ZONE,
	// which replaces it when set; "" turns zones off). While at least ZoneMinUpPercent of the
	// local zone's listed proxies take connections, and at least one does, picks stay there;
	// below, they spread over the up proxies of every zone (see docs/reference.md, localZone).
	LocalZone string
	// ZoneMinUpPercent is that share, from 1 to 100 (zoneMinUpPercent, default 50).
	ZoneMinUpPercent int
	// Group keeps the picks whose context chooses no group (InGroup) to the nodes of this
	// group (group; "" the default; option WithGroup). See docs/reference.md, group.
	Group string
	// IsolatedGroups keeps the nodes of these groups out of the picks whose context chooses no
	// group, while Group is "" (isolatedGroups, comma-separated; option WithIsolatedGroups):
	// an analytics replica takes only the statements that choose its group.
	IsolatedGroups []string

	// CheckHealthInterval is how often each node is probed (checkHealthIntervalSeconds, default
	// 5 s; option WithCheckHealthInterval).
	CheckHealthInterval time.Duration
	// CheckHealthTimeout bounds one probe (checkHealthTimeoutMillis, default 3000 ms; option
	// WithCheckHealthTimeout). A Connector caps it at CheckHealthInterval: a probe never runs
	// longer than the time between two probes.
	CheckHealthTimeout time.Duration
	// CheckBalanceInterval is how often pooled connections are evened out over the up nodes
	// (checkBalanceIntervalSeconds, default 10 s; option WithCheckBalanceInterval).
	CheckBalanceInterval time.Duration
	// RecoverCheckCount is how many consecutive good probes bring a down node back up
	// (recoverCheckCount, default 2, from 1 to 1000; option WithRecoverCheckCount).
	RecoverCheckCount int
	// FatalErrorThreshold fatal errors on one node within FatalErrorWindow take the node down
	// (fatalErrorThreshold, default 3, from 1 to 1000; fatalErrorWindowSeconds, default 10 s;
	// options WithFatalErrorThreshold and WithFatalErrorWindow). One fatal error only retires
	// its own connection.
	FatalErrorThreshold int
	FatalErrorWindow    time.Duration
	// Warmup is the slow-start window (warmupSeconds, default DefaultWarmup; option
	// WithWarmup): a node added at run time, recovered after an outage of at least
	// SlowStartAfterDown, or back from an ejection for its error rate, receives its share of new connections gradually, its weight rising
	// from 10% to all of it over Warmup, and the rebalancer moves connections into it at that
	// pace, at most a third of its fair share per round. Nodes listed at start, and nodes back
	// from a shorter outage, do not warm up.
	// 0 turns slow start off (also the meaning of the zero value in a Config built in code).
	Warmup time.Duration
	// MaxEjectionPercent caps passive outlier ejection (maxEjectionPercent, default 10, from 0
	// to 100): what the application's own statements see (a lost connection, a statement
	// timeout, statements stalled on one proxy while the others answer) brings that proxy's
	// probe forward under a short deadline, and a failed answer takes it down, but at most
	// this share of the proxies, and at least one, may be down that way at once, and never
	// the last one up. 0 turns passive ejection off (Envoy's max_ejection_percent).
	MaxEjectionPercent int
	// BaseEjectionTime is how long a passively ejected proxy stays down at least, times its
	// recent ejections, up to 300 s (baseEjectionTimeSeconds; Envoy's base_ejection_time). 0,
	// the default, means DefaultBaseEjectionTime: a first ejection holds a proxy no longer
	// than the recovery schedule keeps a down proxy out anyway (about a second), and repeated
	// ones hold it two, three, … seconds, so a proxy that keeps failing backs off.
	BaseEjectionTime time.Duration
	// PanicThresholdPercent is the panic threshold (panicThresholdPercent, default
	// DefaultPanicThresholdPercent, from 0 to 100; Envoy's panic_threshold): while some proxy
	// is up but fewer than this share of the proxies are, the health verdict is not trusted to
	// pile the load onto the few up, and new connections (and statement-mode checkouts) spread
	// by least connections over the down proxies as well: those not standby, not announced
	// shutdown, of a role the target accepts. A down proxy whose dial fails sits out until its
	// next probe. The down proxies stay down and probed; once the share is back at the
	// threshold they take nothing again. The share counts the proxies up and taking
	// connections among those and the down ones that may be tried. With no proxy up, panic
	// mode's spaced single dials apply whatever this says. 0 turns it off (also the meaning of
	// the zero value in a Config built in code).
	PanicThresholdPercent int
	// LogStats logs one line per node every StatsInterval through Logger (logStats, default
	// false).
	LogStats bool
	// StatsInterval is how often LogStats logs (default DefaultStatsInterval; option
	// WithStatsInterval). A DSN cannot carry it.
	StatsInterval time.Duration
	// ExceptionSorter names the registered exception sorter (exceptionSorter, default "mysql").
	// Sorter, when set, is used instead.
	ExceptionSorter string
	// Sorter decides which errors are fatal to a connection (option WithExceptionSorter). nil
	// means the sorter registered under ExceptionSorter; a Connector's Config reports the one
	// it uses. A DSN cannot carry it.
	Sorter exception.Sorter
	// Logger receives node state changes, warnings and LogStats lines (option WithLogger).
	// nil means slog.Default(); a Connector's Config reports the one it uses. Passwords never
	// appear in what lbd logs. A DSN cannot carry it.
	Logger *slog.Logger
	// RoleCheck finds each node's role on its probe connection after the health query
	// (roleCheck: "none", the default, leaves roles to the node source; "mysql" reads
	// @@global.read_only, for MySQL and MariaDB; "oceanbase" reads the tenant's role from
	// oceanbase.DBA_OB_TENANTS; "tidb" makes every node a primary without asking; "galera"
	// makes a node a primary while it is Synced in the primary component and a standby
	// otherwise (wsrep_ready, wsrep_cluster_status, wsrep_local_state); "group-replication"
	// reads the member's MEMBER_ROLE and MEMBER_STATE from
	// performance_schema.replication_group_members: an ONLINE PRIMARY is a primary, an ONLINE
	// SECONDARY a replica, any other member a standby; or a SELECT of your own returning one row
	// and one column: primary, replica, standby, 0 or 1). A standby takes no new connection,
	// whatever the target.
	RoleCheck string
	// SingleWriter keeps one primary at a time (singleWriter, default false; option
	// WithSingleWriter): of the nodes the role check (or the node source) calls primary, the
	// first in the node list that is up is the primary and the others serve as replicas; when
	// it goes down or stops being a primary, the next one takes over, and it takes the role
	// back when it returns. For clusters where every node takes writes — roleCheck=galera,
	// group-replication in multi-primary mode — so that writes meet on one node and do not
	// fail each other's certification (Galera's deadlock error 1213 on a conflict between
	// nodes), as ProxySQL's max_writers=1 does for its Galera and Group Replication
	// hostgroups. Every application must list the nodes in the same order to pick the same
	// writer.
	SingleWriter bool
	// Target says which roles new connections may go to (target, default TargetAny; option
	// WithTarget).
	Target Target
	// FailoverTimeout is how long a Connect waits for a node its Target accepts when none is up,
	// for instance during a switchover (failoverTimeoutMillis, default DefaultFailoverTimeout;
	// 0 fails at once; option WithFailoverTimeout). The caller's context cuts it shorter.
	FailoverTimeout time.Duration
	// MaxFailoverWaiters bounds how many Connects wait for a node at once (maxFailoverWaiters,
	// default DefaultMaxFailoverWaiters; option WithMaxFailoverWaiters): one more fails at once
	// with ErrFailoverWaitersFull. 0 lets none wait.
	MaxFailoverWaiters int
	// RetryReads runs a read once more on another node when its node failed it before any
	// row reached the caller (retryReads, default DefaultRetryReads: on; option WithRetryReads); see
	// WithRetryReads for which reads and failures. Each such run is taken from the retry
	// budget.
	RetryReads bool
	// RetryBudgetPercent and RetryBudgetPerSecond bound what lbd runs again on its own (read
	// retries, dials to nodes marked down, waits for a switchover, statements a demoted
	// primary refused): over any 10 s, at most RetryBudgetPercent retries per 100 statements
	// answered plus RetryBudgetPerSecond per second (retryBudgetPercent, default
	// DefaultRetryBudgetPercent; retryBudgetPerSecond, default DefaultRetryBudgetPerSecond;
	// option WithRetryBudget). See ErrRetryBudget.
	RetryBudgetPercent   int
	RetryBudgetPerSecond int
	// ReadWriteSplit sends, in statement mode, the reads a replica may run to replicas and the
	// primary alike and everything else to the primary (readWriteSplit, default false; option
	// WithReadWriteSplit). It needs balance=statement and roles (roleCheck, or roles from the
	// node source). See ReadAfterWrite.
	ReadWriteSplit bool
	// ReadAfterWrite is how long after a write a scope's reads go to the primary with
	// ReadWriteSplit (readAfterWriteMillis, default DefaultReadAfterWrite; 0 turns
	// read-your-writes off). See ReadYourWrites for scopes.
	ReadAfterWrite time.Duration
	// MaxReplicationLag is how far a replica may be behind its primary and still take
	// connections and reads (maxReplicationLagSeconds; 0, the default, does not check). A
	// replica further behind, or whose replication is stopped, takes none until it catches up,
	// unless MinServingReplicas keeps it; reads go to the other replicas and the primary. It
	// needs a role check that finds replicas (roleCheck=mysql or a custom one) or replicas from
	// the node source.
	MaxReplicationLag time.Duration
	// MinServingReplicas is the lag floor (minServingReplicas, default
	// DefaultMinServingReplicas, from 0 to 1000): while fewer replicas than this are up and
	// within MaxReplicationLag, the least lagging of the replicas beyond it (with a known lag:
	// a stopped replication never qualifies) keep taking connections and reads, so that a burst
	// of lag on every replica does not send every read to the primary at once. Stats shows
	// them Lagging and LagFloor. Reads that must see a write stay protected: with
	// readConsistency=time a scope's reads go to the primary for ReadAfterWrite or for the
	// kept replica's lag plus a second, whichever is longer; with gtid they wait on the replica
	// for the write's position or run on the primary. 0 keeps no floor (also the meaning of the
	// zero value in a Config built in code). Vitess's min_number_serving_vttablets (default 2)
	// and ProxySQL's refusal to shun the last lagging replicas are the precedents.
	MinServingReplicas int
	// ReadConsistency is how ReadWriteSplit keeps read-your-writes (readConsistency): "time"
	// (the default) sends a scope's reads to the primary for ReadAfterWrite after its write;
	// "gtid" records the GTID position each write reached and runs a later read of the scope on
	// its replica once the replica applied it, waiting there for at most ReadAfterWrite (and no
	// longer than the replica lately took to catch up), on the primary otherwise (with RoleCheck
	// "galera", by Galera's WSREP_LAST_WRITTEN_GTID and
	// WSREP_SYNC_WAIT_UPTO_GTID, which waits whole seconds: ReadAfterWrite rounded down; once it
	// answers, a causal read on the node, wsrep_sync_wait for one statement, makes sure the
	// node has committed the write, not just begun to). See ReadYourWrites for scopes.
	ReadConsistency string
	// RoutingHints lets a statement's text choose its side of ReadWriteSplit (routingHints,
	// default false; option WithRoutingHints): a text that begins, after nothing but white space,
	// with /* lbd:primary */ goes to the primary, as under OnPrimary; one that begins with
	// /* lbd:replica */ goes to a replica (the primary when none is up) if the split would let it
	// run on one at all (a read proven replica-safe, outside a transaction, past its scope's
	// read-your-writes window), and to the primary otherwise: a hint never sends a write to a
	// replica. Nothing else is a hint (a hint after the first token, in a string, misspelt, in an
	// executable comment /*! */ or an optimizer hint /*+ */). It needs ReadWriteSplit. An
	// application that builds SQL text from user input lets that user write a hint: see the
	// reference's routingHints entry.
	RoutingHints bool
	// PrimaryReads lets ReadWriteSplit send reads proven replica-safe to the primary as to any
	// replica, by load (primaryReads, default false; option WithPrimaryReads). By default such
	// reads go to the replicas while one serves (up, within lag, of the target) and to the
	// primary only when none does: a split is turned on to take reads off the primary.
	// MaxScale's readwritesplit has the same default (master_accept_reads=false). It needs
	// ReadWriteSplit.
	PrimaryReads bool
	// StatusURL is an HTTP status URL to ask on every probe of each node besides its SQL probe
	// (statusURL; "" the default, asks none): a template in which {host} stands for the node's
	// host and {port} for its SQL port, such as TiDB's "http://{host}:10080/status" (in a DSN,
	// write each '/' as %2F: go-sql-driver takes a bare '/' for the start of the database
	// name). A 2xx answer passes; any other answer drains the node at once, as
	// ER_SERVER_SHUTDOWN does (CauseShutdown); no answer within checkHealthTimeoutMillis fails
	// the probe. Redirects are not followed. The HTTP check lives in package statuscheck, so
	// that programs without it do not link net/http: a program that sets StatusURL imports it
	// (import _ "github.com/lbd-go/lbd/statuscheck"), or NewConnector refuses the Config.
	StatusURL string
	// UnsupportedMethodBehavior is accepted for lb-driver compatibility and has no effect: Go's
	// database/sql has none of the JDBC methods it governs.
	UnsupportedMethodBehavior string

	// What follows is set only through options, as go-sql-driver keeps what its BeforeConnect
	// and TimeTruncate options set: test hooks and a live object, not settings to print or
	// reuse.

	// clock drives lbd's loops (WithClock); nil means the wall clock.
	clock clock.Clock
	// jitter returns a duration in [0, max) that staggers the first probes (WithJitter); nil
	// means a random one.
	jitter func(max time.Duration) time.Duration
	// randN returns a number in [0, n): where the Connector's turns among equally loaded
	// proxies start (WithRand); nil means pickStart.
	randN func(n int) int
	// source is the node source given with WithSource. A source can be started once, so it is
	// not a setting a Config could hand to a second Connector: the Connector takes it out of
	// its own configuration and owns it (Close closes it).
	source nodes.Source
	// credentials gives the user and password of each new physical connection and probe
	// connection (WithCredentials); nil means MySQL.User and MySQL.Passwd.
	credentials CredentialsFunc
	// statements is told of every statement (WithStatementObserver); nil observes none.
	statements StatementObserver
}

// DefaultStatsInterval is how often logStats=true logs (lb-driver logs every minute).
const DefaultStatsInterval = time.Minute

// cloneConfig is a deep copy of cfg as far as a Config owns its values: the go-sql-driver
// settings, lists and maps are copied; Logger, Sorter and the option-only hooks are shared.
func cloneConfig(cfg *Config) *Config {
	cp := *cfg
	cp.MySQL = cfg.MySQL.Clone()
	cp.Nodes = slices.Clone(cfg.Nodes)
	cp.Weights = maps.Clone(cfg.Weights)
	cp.Roles = maps.Clone(cfg.Roles)
	cp.Zones = maps.Clone(cfg.Zones)
	cp.Groups = maps.Clone(cfg.Groups)
	cp.IsolatedGroups = slices.Clone(cfg.IsolatedGroups)
	cp.SourceAddrs = slices.Clone(cfg.SourceAddrs)
	cp.SourceParams = maps.Clone(cfg.SourceParams)
	return &cp
}

// settle makes c the configuration a Connector runs with: it fills what nil means (Logger,
// Sorter, clock, jitter), caps CheckHealthTimeout at CheckHealthInterval, and checks every
// setting a Config built or changed in code could have out of range. It is the one place
// where lbd's settings get defaults and clamps after ParseDSN and the options. Errors name the
// DSN parameter or option, and what to do.
func (c *Config) settle() error {
	if c.MySQL == nil {
		return errors.New("lbd: Config has no go-sql-driver settings (MySQL is nil); build one with ParseDSN")
	}
	if c.Balance != BalanceConnection && c.Balance != BalanceStatement {
		return fmt.Errorf("lbd: invalid Balance %v: must be BalanceConnection or BalanceStatement", c.Balance)
	}
	if c.BalancePolicy != LeastConnections && c.BalancePolicy != LeastLoad {
		return fmt.Errorf("lbd: invalid BalancePolicy %v: must be LeastLoad or LeastConnections", c.BalancePolicy)
	}
	for _, d := range []struct {
		name, where string
		value       time.Duration
	}{
		{"checkHealthInterval", "DSN parameter checkHealthIntervalSeconds, option WithCheckHealthInterval", c.CheckHealthInterval},
		{"checkHealthTimeout", "DSN parameter checkHealthTimeoutMillis, option WithCheckHealthTimeout", c.CheckHealthTimeout},
		{"checkBalanceInterval", "DSN parameter checkBalanceIntervalSeconds, option WithCheckBalanceInterval", c.CheckBalanceInterval},
		{"fatalErrorWindow", "DSN parameter fatalErrorWindowSeconds, option WithFatalErrorWindow", c.FatalErrorWindow},
		{"statsInterval", "option WithStatsInterval", c.StatsInterval},
	} {
		if d.value <= 0 {
			return fmt.Errorf("lbd: %s is %v; it must be positive (%s; ParseDSN sets the default)", d.name, d.value, d.where)
		}
	}
	for _, n := range []struct {
		name, where string
		value       int
	}{
		{"recoverCheckCount", "DSN parameter recoverCheckCount, option WithRecoverCheckCount", c.RecoverCheckCount},
		{"fatalErrorThreshold", "DSN parameter fatalErrorThreshold, option WithFatalErrorThreshold", c.FatalErrorThreshold},
	} {
		if n.value < 1 || n.value > dsnparam.MaxCount {
			return fmt.Errorf("lbd: %s is %d; it must be from 1 to %d (%s)", n.name, n.value, dsnparam.MaxCount, n.where)
		}
	}
	if c.Warmup < 0 || c.Warmup > dsnparam.MaxSeconds*time.Second {
		return fmt.Errorf("lbd: warmup is %v; it must be from 0 (off) to %d s (DSN parameter warmupSeconds, option WithWarmup)", c.Warmup, dsnparam.MaxSeconds)
	}
	for i, addr := range c.Nodes {
		if err := nodes.CheckAddr(addr); err != nil {
			return fmt.Errorf("lbd: Nodes[%d]: %w (ParseDSN reads them from user:pass@lb(host1:port1,host2:port2)/db)", i, err)
		}
	}
	for addr, w := range c.Weights {
		if !slices.Contains(c.Nodes, addr) {
			return fmt.Errorf("lbd: Weights names %q, which is not in Nodes; weigh only listed proxies", addr)
		}
		if w < 1 || w > nodes.MaxWeight {
			return fmt.Errorf("lbd: Weights[%q] is %d; it must be from 1 to %d (write the proxy as host:port*weight)", addr, w, nodes.MaxWeight)
		}
	}
	for addr, r := range c.Roles {
		if !slices.Contains(c.Nodes, addr) {
			return fmt.Errorf("lbd: Roles names %q, which is not in Nodes; give roles only to listed proxies", addr)
		}
		if r == nodes.RoleUnknown || r >= nodes.NumRoles {
			return fmt.Errorf("lbd: Roles[%q] is %s; it must be nodes.RolePrimary, RoleReplica or RoleStandby (write the proxy as host:port#role; leave it out of Roles when its role is not known)", addr, r)
		}
	}
	if c.PanicThresholdPercent < 0 || c.PanicThresholdPercent > 100 {
		return fmt.Errorf("lbd: panicThresholdPercent is %d; it must be from 0 to 100 (DSN parameter panicThresholdPercent; 0 turns it off)", c.PanicThresholdPercent)
	}
	for addr, z := range c.Zones {
		if !slices.Contains(c.Nodes, addr) {
			return fmt.Errorf("lbd: Zones names %q, which is not in Nodes; give zones only to listed proxies", addr)
		}
		if err := nodes.CheckZone(z); err != nil {
			return fmt.Errorf("lbd: Zones[%q]: %w (write the proxy as host:port~zone)", addr, err)
		}
	}
	if err := c.checkGroups(); err != nil {
		return err
	}
	if c.LocalZone != "" {
		if err := nodes.CheckZone(c.LocalZone); err != nil {
			return fmt.Errorf("lbd: LocalZone: %w (DSN parameter localZone, environment variable %s)", err, EnvLocalZone)
		}
	}
	if c.ZoneMinUpPercent < 1 || c.ZoneMinUpPercent > 100 {
		return fmt.Errorf("lbd: zoneMinUpPercent is %d; it must be from 1 to 100 (DSN parameter zoneMinUpPercent)", c.ZoneMinUpPercent)
	}
	if c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100 {
		return fmt.Errorf("lbd: maxEjectionPercent is %d; it must be from 0 to 100 (DSN parameter maxEjectionPercent; 0 turns passive ejection off)", c.MaxEjectionPercent)
	}
	if c.BaseEjectionTime < 0 || c.BaseEjectionTime > dsnparam.MaxSeconds*time.Second {
		return fmt.Errorf("lbd: baseEjectionTime is %v; it must be from 0 (%v) to %d s (DSN parameter baseEjectionTimeSeconds)", c.BaseEjectionTime, DefaultBaseEjectionTime, dsnparam.MaxSeconds)
	}
	if c.BaseEjectionTime == 0 {
		c.BaseEjectionTime = DefaultBaseEjectionTime
	}
	c.CheckHealthTimeout = min(c.CheckHealthTimeout, c.CheckHealthInterval)
	if c.FailoverTimeout < 0 {
		return fmt.Errorf("lbd: failoverTimeout is %v; it must not be negative (DSN parameter failoverTimeoutMillis, option WithFailoverTimeout)", c.FailoverTimeout)
	}
	if c.MaxFailoverWaiters < 0 || c.MaxFailoverWaiters > dsnparam.MaxFailoverWaiters {
		return fmt.Errorf("lbd: maxFailoverWaiters is %d; it must be from 0 to %d (DSN parameter maxFailoverWaiters, option WithMaxFailoverWaiters)", c.MaxFailoverWaiters, dsnparam.MaxFailoverWaiters)
	}
	if c.RetryBudgetPercent < 0 || c.RetryBudgetPercent > dsnparam.MaxRetryBudgetPercent {
		return fmt.Errorf("lbd: retryBudgetPercent is %d; it must be from 0 to %d (DSN parameter retryBudgetPercent, option WithRetryBudget)", c.RetryBudgetPercent, dsnparam.MaxRetryBudgetPercent)
	}
	if c.RetryBudgetPerSecond < 0 || c.RetryBudgetPerSecond > dsnparam.MaxRetryBudgetPerSecond {
		return fmt.Errorf("lbd: retryBudgetPerSecond is %d; it must be from 0 to %d (DSN parameter retryBudgetPerSecond, option WithRetryBudget)", c.RetryBudgetPerSecond, dsnparam.MaxRetryBudgetPerSecond)
	}
	rs, err := c.parseRoleSettings()
	if err != nil {
		return err
	}
	if c.ReadWriteSplit && c.Balance != BalanceStatement {
		return errors.New("lbd: readWriteSplit=true needs balance=statement: in connection mode a pooled connection stays on one proxy for many statements, reads and writes alike")
	}
	if err := c.checkRoleSources(rs); err != nil {
		return err
	}
	if c.ReadWriteSplit && sqlclass.ServerSchema(c.MySQL.DBName) {
		return fmt.Errorf("lbd: readWriteSplit=true with the default database %s, whose tables differ from server to server: an unqualified table there cannot be told from one of another database, so a read of it could run on a replica; name an application database in the DSN and qualify %s's tables", c.MySQL.DBName, c.MySQL.DBName)
	}
	if c.PrimaryReads && !c.ReadWriteSplit {
		return errors.New("lbd: primaryReads=true needs readWriteSplit=true (and balance=statement): it says whether the split's reads may go to the primary")
	}
	if c.RoutingHints && !c.ReadWriteSplit {
		return errors.New("lbd: routingHints=true needs readWriteSplit=true (and balance=statement): a hint chooses between the split's primary and replicas")
	}
	switch c.ReadConsistency {
	case "", "time":
	case "gtid":
		if !c.ReadWriteSplit {
			return errors.New("lbd: readConsistency=gtid needs readWriteSplit=true (and balance=statement): it decides which replica reads wait")
		}
	default:
		return fmt.Errorf("lbd: invalid readConsistency %q: want time or gtid", c.ReadConsistency)
	}
	if c.StatusURL != "" {
		if err := health.CheckStatusTemplate(c.StatusURL); err != nil {
			return fmt.Errorf("lbd: statusURL %q %v", c.StatusURL, err)
		}
	}
	if c.MinServingReplicas < 0 || c.MinServingReplicas > dsnparam.MaxCount {
		return fmt.Errorf("lbd: minServingReplicas is %d; it must be from 0 (no floor) to %d (DSN parameter minServingReplicas)", c.MinServingReplicas, dsnparam.MaxCount)
	}
	if c.MaxReplicationLag < 0 {
		return fmt.Errorf("lbd: maxReplicationLag is %v; it must not be negative (DSN parameter maxReplicationLagSeconds; 0 does not check)", c.MaxReplicationLag)
	}
	if rs.check == role.Galera {
		// Galera nodes apply writes through the cluster, not through replication: no replica
		// status to read a lag from.
		if c.MaxReplicationLag > 0 {
			return errors.New("lbd: maxReplicationLagSeconds reads SHOW REPLICA STATUS, which a Galera node does not have: leave it 0; roleCheck=galera already takes a node that is not Synced out")
		}
	}
	if c.ReadAfterWrite < 0 {
		return fmt.Errorf("lbd: readAfterWrite is %v; it must not be negative (DSN parameter readAfterWriteMillis, option WithReadAfterWrite)", c.ReadAfterWrite)
	}
	if c.Sorter == nil {
		s, ok := exception.Lookup(c.ExceptionSorter)
		if !ok {
			return fmt.Errorf("lbd: invalid DSN parameter exceptionSorter=%q: no sorter registered under that name (registered: %s)",
				c.ExceptionSorter, strings.Join(exception.Names(), ", "))
		}
		c.Sorter = s
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.clock == nil {
		c.clock = clock.Real
	}
	if c.jitter == nil {
		c.jitter = func(max time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(max))) }
	}
	if c.randN == nil {
		c.randN = pickStart
	}
	return nil
}

// checkRoleSources refuses a configuration whose roles can never meet what it asks of them: the
// read/write split (whose writes need a primary) or target=primary / target=replica, with no
// way for any node to get the role. Roles come from a role check, from the static list's
// host:port#role, or from a node source's documents (lbremote, lbetcd; a source given with
// WithSource may carry them too), so only a static list, or a source that says it gives no
// roles (lbdns), without a role check is judged: the list must name the role the
// configuration needs, and such a source cannot. roleCheck=tidb makes every node a primary, so
// it can never serve target=replica; nor can roleCheck=galera or oceanbase, which find no
// replica (role.Check.Finds), unless SingleWriter makes replicas of the primaries but one.
func (c *Config) checkRoleSources(rs roleSettings) error {
	needs, why := nodes.RoleUnknown, ""
	switch {
	case c.ReadWriteSplit:
		needs, why = nodes.RolePrimary, "readWriteSplit=true sends writes to the primary"
	case c.Target == TargetPrimary:
		needs, why = nodes.RolePrimary, "target=primary connects only to primaries"
	case c.Target == TargetReplica:
		needs, why = nodes.RoleReplica, "target=replica connects only to replicas"
	default:
		return nil
	}
	// singleWriter=true makes replicas of every primary but one.
	replicasOfPrimaries := c.SingleWriter && needs == nodes.RoleReplica
	if f := rs.check.Fixed(); f != nodes.RoleUnknown {
		if f != needs && !(replicasOfPrimaries && f == nodes.RolePrimary) {
			return fmt.Errorf("lbd: %s, but roleCheck=%s makes every node a %s: use another target or role check", why, rs.check.Name(), f)
		}
		return nil
	}
	if rs.check.Query() != "" && !rs.check.Finds(needs) && !(replicasOfPrimaries && rs.check.Finds(nodes.RolePrimary)) {
		fix := "use another target or role check"
		if needs == nodes.RoleReplica && rs.check.Finds(nodes.RolePrimary) {
			fix += ", or singleWriter=true to make replicas of the primaries but one"
		}
		return fmt.Errorf("lbd: %s, but roleCheck=%s never finds a %s: %s", why, rs.check.Name(), needs, fix)
	}
	if rs.check.Query() != "" || c.source != nil {
		return nil // the role check or the source may report the role at run time
	}
	if c.Network != Network && c.Network != "" {
		if f, ok := nodes.Lookup(c.Network); !ok || !f.NoRoles {
			return nil // the source of that network may report the roles
		}
		return fmt.Errorf("lbd: %s, but the %s source gives no node a role: set roleCheck (mysql, oceanbase, tidb, galera, group-replication or a SELECT)", why, c.Network)
	}
	for _, r := range c.Roles {
		if r == needs {
			return nil
		}
	}
	if len(c.Roles) == 0 {
		return fmt.Errorf("lbd: %s, but nothing gives a node a role: set roleCheck (mysql, oceanbase, tidb, galera, group-replication or a SELECT), or write the roles in the list as host:port#primary and host:port#replica", why)
	}
	return fmt.Errorf("lbd: %s, but no node of the list is a %s and roleCheck is none: mark one as host:port#%s, or set roleCheck to find the roles at run time", why, needs, needs)
}

// pickBase and pickSeq give pickStart its draws: a random point per process, and how many
// draws this process has made.
var (
	pickBase = rand.Uint64()
	pickSeq  atomic.Uint64
)

// pickStart is the default of WithRand: where a Connector's turns among n equally loaded
// proxies start. Across processes (a fleet of application instances) the start is uniformly
// random, as gRPC's round_robin starts at a random index; within one process successive
// Connectors start at successive proxies from there, so thirty Connectors of one connection
// each over three proxies hold exactly ten each rather than a random split (independent draws
// would leave a proxy outside 10 ± 4 in about one process of five).
func pickStart(n int) int { return int((pickBase + pickSeq.Add(1)) % uint64(n)) }
