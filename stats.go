package lbd

import (
	"slices"
	"time"

	"github.com/lbd-go/lbd/internal/inspect"
	"github.com/lbd-go/lbd/internal/logical"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/nodes"
)

// Stats is a snapshot of a Connector's nodes, taken by (*Connector).Stats.
type Stats struct {
	// Balance is the Connector's balance mode.
	Balance BalanceMode
	// Logical is how many connections database/sql holds open: logical connections in statement
	// mode; in connection mode they are the physical ones, and Logical equals Open().
	Logical int

	// Nodes lists every known node (up, down, and draining ones that still hold connections) in
	// the order they became known.
	Nodes []NodeStats

	// Recent lists the latest state changes over all nodes (at most 64), oldest first: what
	// happened and why, for a status page or a support ticket.
	Recent []Transition

	// ReadsToPrimaryAfterWrite counts the reads readWriteSplit sent to the primary because their
	// scope wrote less than readAfterWriteMillis before (readConsistency=time).
	ReadsToPrimaryAfterWrite uint64
	// Causal counts what readConsistency=gtid did.
	Causal CausalStats

	// FailoverWaiting is how many Connects wait now for a node their target accepts (a
	// switchover under way); FailoverRefused counts those that failed at once with
	// ErrFailoverWaitersFull because maxFailoverWaiters already waited.
	FailoverWaiting int
	FailoverRefused uint64

	// Retries counts what lbd ran again on its own and what the retry budget refused
	// (retryBudgetPercent, retryBudgetPerSecond).
	Retries RetryStats

	// BalancePolicy is the Connector's balance policy (balancePolicy).
	BalancePolicy BalancePolicy

	// LocalZone is the Connector's zone ("" when zones are off). ZoneLive counts that zone's
	// nodes up or down, ZoneActive those of them taking connections, and ZoneLocal is true
	// while picks stay in the zone (false while they spill to every zone).
	LocalZone            string
	ZoneLive, ZoneActive int
	ZoneLocal            bool

	// Group is the Connector's group (group; "" when none) and IsolatedGroups the groups its
	// default picks leave out (isolatedGroups).
	Group          string
	IsolatedGroups []string

	// Source is the node source's condition (see SourceStats); nil for a static list.
	Source *SourceStats
}

// Open returns the open physical connections over all nodes.
func (s Stats) Open() int {
	total := 0
	for _, n := range s.Nodes {
		total += n.Open
	}
	return total
}

// Node returns the entry for addr and whether there is one.
func (s Stats) Node(addr string) (NodeStats, bool) {
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n, true
		}
	}
	return NodeStats{}, false
}

// NodeStats describes one node. Open, Idle, State, LastProbe and LastError are current values;
// the counters are cumulative since the Connector was created. Nothing here contains a password.
type NodeStats struct {
	Addr    string     // "host:port"
	State   NodeState  // up, down or draining
	Standby bool       // probed, but taking no new connection (a source's fallback; see nodes.Node)
	Role    nodes.Role // what the node is for: from the source or the role check; RoleUnknown when neither says
	// RoleError is the latest failed role check ("" when the last one answered, or none runs).
	RoleError string
	// Lagging is true for a replica further behind its primary than maxReplicationLagSeconds
	// allows (or whose replication is stopped): it takes no connection or read until it catches
	// up. ReplicationLag is its latest lag (0 when not checked).
	Lagging        bool
	ReplicationLag time.Duration
	// LagFloor is true for a lagging replica that takes connections and reads all the same,
	// because fewer than minServingReplicas replicas would serve without it (the least lagging
	// are kept).
	LagFloor bool
	// Reads and Writes count the statements readWriteSplit ran on the node: those routed as
	// reads, and the others (0 without the split).
	Reads, Writes uint64

	Open int // open physical connections, including dials in progress (probe connection excluded)
	// ProbeConns counts the probe's own connections open to the node: 1 while the probe holds
	// one (0 between a failed probe and the next dial; briefly 2 while the probe of a node
	// listed again replaces the old one). The proxy sees Open + ProbeConns connections from
	// this Connector, once it has noticed the ones lbd closed.
	ProbeConns int
	// Idle counts, of Open, the connections not in use: idle in database/sql's pool (connection
	// mode), or not claimed by a checked-out logical connection (statement mode: parked on the
	// node, or kept for a pinned logical connection that sits in database/sql's pool).
	Idle int
	// InUse counts, of Open, the connections in use: checked out of database/sql's pool
	// (connection mode), or claimed by a checked-out logical connection (statement mode).
	InUse int

	Dials        uint64 // successful dials
	DialFailures uint64 // failed dials (refused, timed out, handshake failed)
	Retired      uint64 // connections retired (node down or draining, fatal error, rebalancing): the sum of RetiredBy
	// RetiredBy counts the retired connections by why lbd retired them, indexed by RetireReason.
	// Connections database/sql closes itself (SetConnMaxLifetime, SetConnMaxIdleTime, idle
	// surplus) are database/sql's count (sql.DBStats), not these.
	RetiredBy   [NumRetireReasons]uint64
	FatalErrors uint64 // errors the exception sorter judged fatal
	// PassiveSignals counts what the application's statements saw against the node (a lost
	// connection, a statement timeout, statements stalled while other nodes answered); each
	// that found the node up and ejection allowed brought a confirming probe forward.
	PassiveSignals uint64
	Transitions    uint64 // state changes
	// TransitionsBy counts the state changes by what decided them, indexed by TransitionCause.
	TransitionsBy [NumTransitionCauses]uint64
	Probes        uint64 // probes run
	ProbeFailures uint64 // probes failed

	// Weight is the node's weight from its source or the DSN (nodes.DefaultWeight when none
	// was given); Warmup is its slow-start progress, from 0 as it comes up to 1 once warm (1
	// for nodes listed at start and with slow start off); EffectiveWeight is what new
	// connections go by: Weight × max(Warmup, 0.1) × Speed.
	Weight          int
	Warmup          float64
	EffectiveWeight float64

	// Latency is the node's latency estimate: a moving average of its statements' round trips
	// over about half a second, decaying toward 0 while the node answers none; 0 before its
	// first statement. Speed is the factor balancePolicy=least-load scales EffectiveWeight by
	// for that latency, from 1/16 to 1 (1 under least-connections); see BalancePolicy.
	Latency time.Duration
	Speed   float64
	// Zone is the node's zone from its source ("" when none; see Config.LocalZone).
	Zone string
	// Groups are the node's groups from its source, in name order (nil when none; see InGroup).
	Groups []string

	LastProbe time.Duration // how long the latest probe took; 0 before the first
	LastError string        // the latest dial or probe failure held against the node ("" when none; access denied and other answers every proxy would give are not)
}

// Stats returns a snapshot of every node. It takes the node table's mutex briefly and
// allocates the result; it is meant for monitoring, not for every statement.
func (c *Connector) Stats() Stats {
	views := c.table.Snapshot(nil)
	now := time.Now() // latency estimates are on the monotonic clock (loadLoop)
	out := make([]NodeStats, len(views))
	for i, v := range views {
		pn := v.Node.Payload()
		n := nodeOf(pn)
		s := &out[i]
		*s = NodeStats{
			Addr: n.Addr(), State: NodeState(v.State), Standby: v.Standby, Role: v.Role, Lagging: v.Lagging, LagFloor: v.LagFloor, ReplicationLag: n.Lag(),
			Reads: n.splitReads.Load(), Writes: n.splitWrites.Load(), Open: v.Open, InUse: v.InUse,
			ProbeConns: n.ProbeConns(), Dials: v.Dials, DialFailures: v.DialFailures,
			FatalErrors: v.FatalErrors, PassiveSignals: v.Signals, Transitions: v.Transitions, TransitionsBy: v.TransitionsBy,
			Probes: v.Probes, ProbeFailures: v.ProbeFailures, LastProbe: v.LastProbe,
			Weight: v.Weight, Warmup: v.Warmth, EffectiveWeight: v.Effective,
		}
		for r := range s.RetiredBy {
			s.RetiredBy[r] = pn.RetiredBy(physical.Reason(r))
			s.Retired += s.RetiredBy[r]
		}
		if v.LastErr != nil {
			s.LastError = v.LastErr.Error()
		}
		if e := n.RoleErr(); e != nil {
			s.RoleError = e.Error()
		}
		s.Idle, _ = pn.ConnCounts()
		s.Latency, s.Speed = c.table.Latency(v.Node, now), v.Speed
		s.Zone = v.Zone
		s.Groups = nodes.SplitGroups(v.Groups)
		if c.cfg.Balance == BalanceConnection {
			s.InUse = max(s.Open-s.Idle, 0)
		}
	}
	waiting, refused := c.health.Waiting()
	st := Stats{Balance: c.cfg.Balance, Nodes: out, Recent: c.transitions.List(),
		ReadsToPrimaryAfterWrite: c.stmt.RYWReads(), Causal: CausalStats(c.stmt.CausalStats()),
		FailoverWaiting: int(waiting), FailoverRefused: refused, Retries: RetryStats(c.health.RetryStats())}
	st.BalancePolicy = c.cfg.BalancePolicy
	st.LocalZone = c.cfg.LocalZone
	st.ZoneLive, st.ZoneActive, st.ZoneLocal = c.table.Zones()
	st.Group, st.IsolatedGroups = c.cfg.Group, slices.Clone(c.cfg.IsolatedGroups)
	st.Source = c.sourceStats()
	st.Logical = st.Open()
	if c.cfg.Balance == BalanceStatement {
		st.Logical = int(c.stmt.Logical())
	}
	return st
}

// logStats logs one line per node (logStats=true, every stats interval).
func (c *Connector) logStats() {
	for _, n := range c.Stats().Nodes {
		c.cfg.Logger.Info("lbd stats",
			"node", n.Addr, "state", n.State.String(), "open", n.Open, "idle", n.Idle, "in_use", n.InUse,
			"dials", n.Dials, "dial_failures", n.DialFailures, "retired", n.Retired,
			"fatal_errors", n.FatalErrors, "probe_failures", n.ProbeFailures,
			"weight", n.Weight, "warmup", n.Warmup)
	}
}

// The cluster suites (internal/clustertest, a module of their own) read these facts through
// internal/inspect; see that package.
func init() {
	inspect.PreparedQueries = func(c any) map[string]int { return c.(*Connector).stmt.PreparedQueries() }
	inspect.ServerStatements = func(c any) int {
		total := 0
		for _, tn := range c.(*Connector).table.Nodes(nil) {
			for _, p := range tn.Payload().Conns() {
				total += len(p.Prepared)
			}
		}
		return total
	}
	inspect.Pinned = logical.Pinned
}
