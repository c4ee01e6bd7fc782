// Package nodetable is lbd's node table: every known node with its state and counts, the pick
// indexes over the nodes that take new connections, the rules that move a node between states,
// and changes of the node set.
//
// The table does no I/O, starts no goroutine and reads no clock. The caller reports what it saw
// (a dial's or a probe's outcome, a fatal error and when it happened, a new node list) and the
// table applies its rules. State changes are handed to Config.OnTransition after the table's
// mutex is released, one at a time and in the order the table made them; the caller logs them
// and retires connections.
//
// Each node carries a payload of type P: what the caller hangs off a node (in lbd: the physical
// node of internal/physical, with its go-sql-driver connector, its live connections and
// statement mode's idle list). The table never looks inside it.
//
// # Imports
//
// Imports run one way: the root package lbd → internal/logical → internal/physical →
// internal/nodetable → internal/pick. This package imports none of the layers above it
// (internal/testkit's TestImportsRunOneWay checks the rule).
//
// # Lock order
//
// The table has one mutex and it is a leaf. Its methods take it and release it before they
// return; while holding it they call no code of the caller but the build function of Start and
// SetNodes, which must neither block nor call the table. OnTransition runs with the mutex
// released. So a caller may call the table while holding locks of its own (lbd holds
// Connector.applyMu around SetNodes), and no lock of the caller is ever taken under the
// table's. No code outside this package takes the table's mutex or reads a node's state.
package nodetable

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/internal/pick"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// DialFailuresToDown is how many consecutive failed dials take an up node down (lb-driver's rule).
const DialFailuresToDown = 2

// Config is what a Table needs to apply its rules.
type Config[P any] struct {
	// RecoverCount is how many consecutive good probes bring a down node back up (lbd's
	// recoverCheckCount). A node added at run time that has never been up needs only one.
	// It must be at least 1.
	RecoverCount int
	// FatalThreshold fatal errors on one node within FatalWindow take it down (lbd's
	// fatalErrorThreshold and fatalErrorWindowSeconds). FatalThreshold must be at least 1 and
	// FatalWindow positive.
	FatalThreshold int
	FatalWindow    time.Duration
	// ProbeInterval is the time between scheduled probes of an up node (lbd's
	// checkHealthInterval). It must be positive.
	ProbeInterval time.Duration
	// RecoverSpacing is the least time between two good probes that both count toward a
	// recovery (see Probed): the early probes a markdown asks for, run back to back, must not
	// pass for one. 0 means ProbeInterval/2; it must not be negative.
	RecoverSpacing time.Duration
	// FlapWindow is the least time between two recoveries of a node by probes: a node probes
	// brought up is not brought up by probes again within it, so a proxy that passes probes
	// but keeps failing the application's statements cannot go up, down and up again within
	// it. 0 means no such bound; it must not be negative.
	FlapWindow time.Duration
	// Warmup is the slow-start window (lbd's warmupSeconds): a node that comes up by a probe
	// after it was added at run time or went down gets an effective weight rising from
	// WarmupFloor of its weight to all of it over Warmup, as the caller's Tick reports time
	// passing. Nodes trusted at start, or while no node is up, start warm. 0 turns slow start
	// off; it must not be negative.
	Warmup time.Duration
	// SlowStartAfterDown is the shortest outage after which a recovered node warms up: a node
	// probes bring back after it was down for less comes back at the weight it had (warm, or
	// its warm-up going on where it was), since holding back a proxy that was gone a few
	// seconds only leaves the others carrying its share. Nodes added at run time, and nodes
	// back from an ejection for the errors they answered while passing their probes (Eject),
	// always warm up. 0 warms up every recovery; it must not be negative.
	SlowStartAfterDown time.Duration
	// MaxEjectionPercent caps passive ejection (lbd's maxEjectionPercent): passive signals
	// may hold at most this share, in percent, of the active nodes (up, plus those passively
	// ejected) down at once, and at least one node whenever it is above 0, so that three
	// nodes at the default of 10 may still lose one; the last up node is never ejected. 0
	// turns passive ejection off. From 0 to 100. Envoy's max_ejection_percent and gRPC's
	// outlier detection cap ejection the same way.
	MaxEjectionPercent int
	// BaseEjectionTime is how long a passively ejected node stays down at least, times the
	// number of its recent ejections, up to MaxEjectionTime (lbd's baseEjectionTimeSeconds;
	// Envoy's base_ejection_time). Recovery also needs its good probes (see Probed). 0: no
	// hold beyond those. It must not be negative.
	BaseEjectionTime time.Duration
	// Rand returns a number in [0, n) (one outside is folded into it): where the turns among
	// n equally loaded nodes start when a batch of nodes is trusted at once (Start, and
	// SetNodes while no node takes connections). Each table drawing its own start spreads
	// many tables with few connections each over the nodes instead of piling them onto the
	// first listed (gRPC's round_robin starts at a random index too). It is called with the
	// table's mutex held and must not call the table. nil starts at the first listed node.
	Rand func(n int) int
	// Target says which roles Pick and PickInUse may choose (role.Any when zero). A node of a
	// role outside it stays probed and keeps its state; it takes no new connection.
	Target role.Target
	// RoleCheck says roles come from role checks (RoleChecked); the roles node sources report
	// then only seed a new node's role until its first check. Without it the sources' roles
	// are the roles.
	RoleCheck bool
	// MinServingReplicas is the lag floor (lbd's minServingReplicas): while fewer replicas than
	// this serve, the least lagging of the replicas SetLagging took out serve anyway (see
	// lagfloor.go). 0 keeps no floor; it must not be negative.
	MinServingReplicas int
	// SingleWriter keeps one primary at a time (lbd's singleWriter): of the nodes whose role
	// check, source or refusal says primary, the first in the table's order (the order the
	// nodes became known: a static list's order) that is up and not standby is the primary,
	// and the others are replicas, until that changes. The choice depends only on the nodes'
	// states and answers, not on history, so every table over the same list in the same order
	// picks the same writer (ProxySQL's max_writers=1 for Galera and Group Replication
	// hostgroups picks by a fixed order too).
	SingleWriter bool
	// PanicThreshold is the panic threshold in percent (lbd's panicThresholdPercent, Envoy's
	// panic_threshold): while some node is up but fewer than this share of the nodes are, the
	// down nodes that may be tried serve too (see threshold.go). 0 turns it off; from 0 to 100.
	PanicThreshold int
	// PanicSpacing is the least time between two panic-mode dials of one node (see
	// PanicPick). Zero lets a node be tried again as soon as its last panic dial ended.
	PanicSpacing time.Duration
	// OnTransition, when set, is told every state change once, after the table's mutex is
	// released, in the order the table made them: calls never overlap, and each runs on the
	// goroutine of some table call that made or followed the change (not always the one whose
	// call caused it). It may call the table; it should hand slow work to a goroutine of its
	// own, since the table call that runs it waits for it.
	OnTransition func(Transition[P])
	// LeastLoad makes the picks load-aware (lbd's balancePolicy=least-load): a node's
	// effective weight is also scaled by its speed factor, which TickLoad derives from the
	// latency estimates Observe keeps (see load.go). Without it the picks go by counts and
	// weights alone; the estimates are kept either way.
	LeastLoad bool
	// LocalZone is the client's zone (lbd's localZone). While at least ZoneMinUpPercent of the
	// nodes of that zone (nodes.Node.AZ) that are up or down take connections, and at least
	// one does, the picks choose among them alone, falling back to every zone only for a
	// target whose roles the local zone has no node of; below that, they choose among the
	// up nodes of every zone (see zones.go). "" turns zones off.
	LocalZone string
	// ZoneMinUpPercent is that share, from 1 to 100; 0 means DefaultZoneMinUpPercent.
	ZoneMinUpPercent int
	// Group is the group (nodes.Node.Groups) the picks that name none choose from (lbd's
	// group): "" for every node outside the Isolated groups. See groups.go.
	Group string
	// Isolated are the groups whose nodes the picks that name no group leave out (lbd's
	// isolatedGroups), while Group is "": a node in any of them is picked only by a pick that
	// names one of its groups.
	Isolated []string
}

// Table is the node table. Create one with New; it is safe for concurrent use.
type Table[P any] struct {
	mu    sync.Mutex
	nodes map[string]*Node[P]
	order []*Node[P] // every known node in the order it became known
	// The pick indexes, one per role: up, active nodes by open physical connections (where a
	// new one goes) and by physical connections in use (where statement mode binds). The
	// standby role's are always empty. Each role has four: local zone or not, full speed or
	// slowed by TickLoad (see slot); and each set of groups has numPickIndexes of them, the
	// nodes of no group the first (groups.go). They only grow.
	byOpen  []pick.Index[*Node[P]]
	byInUse []pick.Index[*Node[P]]
	active  int         // nodes in the byOpen indexes
	turns   []uint64    // picks per index, for sharing ties between roles (pickIn)
	tiers   [2]role.Set // Config.Target's tiers
	warming []*Node[P]  // nodes whose warm-up has not ended, in no order; see Tick
	// desired is the node list last asked for while part of it could not be applied (a
	// removal that would have left no up node); nil when everything asked for is applied.
	desired []string
	// downs holds the nodes in state down, for panic mode (Node.downAt is each one's index).
	downs []*Node[P]
	// failSeq numbers the failures held against nodes, so that "least recently failed" needs
	// no clock: a node's failSeq is that of its latest failure, 0 before any.
	failSeq uint64
	// pending holds the transitions made and not yet delivered, oldest first. deliverMu is
	// held by the one goroutine delivering them.
	pending   []Transition[P]
	queued    atomic.Int32 // len(pending), read without the mutex
	deliverMu sync.Mutex

	ejected int // nodes down by a passive ejection that have not come back up
	// panicking: some node is up, but fewer than Config.PanicThreshold percent (threshold.go).
	panicking bool
	// floorLag is the largest lag of a replica the lag floor keeps serving, nanoseconds
	// (lagfloor.go); floorBuf is its scratch list.
	floorLag atomic.Int64
	floorBuf []*Node[P]

	total   atomic.Int64 // open physical connections over every node, dials in flight included
	ups     atomic.Int32 // nodes in the pick indexes
	upNodes atomic.Int32 // nodes in state up, whatever their role or standby flag

	cfg Config[P]

	// The local zone's nodes in state up or down, and of them those in the pick indexes
	// (zones.go).
	zoneLive, zoneActive int

	groups groupTable // the sets of groups of the nodes (groups.go)

	// The windows of recent units of open and in-use connections (recent.go).
	recent [numKinds]recentRing[P]

	// TickLoad's scratch, reused; only its one caller touches them.
	loadNodes []*Node[P]
	loadSlow  []uint8
	loadEsts  []float64
	loadClear []bool
}

// New returns an empty table, or an error naming the setting of cfg that is out of range (by
// the name of lbd's DSN parameter that sets it).
func New[P any](cfg Config[P]) (*Table[P], error) {
	switch {
	case cfg.RecoverCount < 1:
		return nil, fmt.Errorf("recoverCheckCount is %d; it must be at least 1", cfg.RecoverCount)
	case cfg.FatalThreshold < 1:
		return nil, fmt.Errorf("fatalErrorThreshold is %d; it must be at least 1", cfg.FatalThreshold)
	case cfg.FatalWindow <= 0:
		return nil, fmt.Errorf("fatalErrorWindow is %v; it must be positive", cfg.FatalWindow)
	case cfg.ProbeInterval <= 0:
		return nil, fmt.Errorf("checkHealthInterval is %v; it must be positive", cfg.ProbeInterval)
	case cfg.RecoverSpacing < 0 || cfg.FlapWindow < 0:
		return nil, fmt.Errorf("recovery spacing %v and flap window %v must not be negative", cfg.RecoverSpacing, cfg.FlapWindow)
	case cfg.SlowStartAfterDown < 0:
		return nil, fmt.Errorf("slow start after down is %v; it must not be negative", cfg.SlowStartAfterDown)
	case cfg.Warmup < 0:
		return nil, fmt.Errorf("warmup is %v; it must not be negative", cfg.Warmup)
	case cfg.MaxEjectionPercent < 0 || cfg.MaxEjectionPercent > 100:
		return nil, fmt.Errorf("maxEjectionPercent is %d; it must be from 0 to 100", cfg.MaxEjectionPercent)
	case cfg.MinServingReplicas < 0:
		return nil, fmt.Errorf("minServingReplicas is %d; it must not be negative", cfg.MinServingReplicas)
	case cfg.PanicThreshold < 0 || cfg.PanicThreshold > 100:
		return nil, fmt.Errorf("panicThresholdPercent is %d; it must be from 0 to 100", cfg.PanicThreshold)
	case cfg.BaseEjectionTime < 0:
		return nil, fmt.Errorf("baseEjectionTime is %v; it must not be negative", cfg.BaseEjectionTime)
	case cfg.ZoneMinUpPercent < 0 || cfg.ZoneMinUpPercent > 100:
		return nil, fmt.Errorf("zoneMinUpPercent is %d; it must be from 1 to 100", cfg.ZoneMinUpPercent)
	}
	if err := checkGroupConfig(cfg.Group, cfg.Isolated); err != nil {
		return nil, err
	}
	t := &Table[P]{nodes: make(map[string]*Node[P]), cfg: cfg}
	t.tiers[0], t.tiers[1] = cfg.Target.Tiers()
	t.groups.init(cfg.Group, cfg.Isolated)
	t.growIndexesLocked(1)
	return t, nil
}

// Node is one node of a table: its address, the caller's payload, and the state and counts the
// table keeps for it. Counts live here, not in any snapshot, so they survive node-set changes:
// a node removed and listed again while its connections are still open keeps counting them.
// Its fields are the table's; the caller holds a *Node as a handle and reads it through the
// table's views.
type Node[P any] struct {
	addr    string
	payload P

	// Guarded by the table's mutex.
	byOpen       pick.Entry[*Node[P]] // open physical connections, dials in flight included
	byInUse      pick.Entry[*Node[P]] // physical connections in use (statement mode)
	state        State
	role         nodes.Role    // what the node is for; see Config.RoleCheck and Config.SingleWriter
	claimed      nodes.Role    // what its check, source or refusal says it is (role but for SingleWriter)
	class        uint8         // the node's set of groups (groups.go), next to role: slot reads both
	dialFailures int           // consecutive failed dials
	goodProbes   int           // consecutive good probes counted since the last failure or markdown
	recoveredAt  time.Time     // when probes last brought the node up (FlapWindow)
	lastGood     time.Time     // when the latest counted good probe ended
	everUp       bool          // false for a node added at run time that has not passed a probe yet
	standby      bool          // probed and tracked, but out of the pick indexes
	lagging      bool          // a replica behind its primary by more than the caller allows: out of the pick indexes
	lag          time.Duration // the replica's latest lag (NoteLag); lagKnown false: replication stopped
	lagKnown     bool
	floorServing bool        // lagging, but kept in the pick indexes by the lag floor
	refusedRead  bool        // refused a read as not the primary: out of the pick indexes until a good probe
	refusedAt    time.Time   // when refusedRead was set
	shutdown     bool        // announced its shutdown and has not come back up since: never a panic-mode candidate
	lastErr      error       // the latest failure held against the node
	fatalTimes   []time.Time // when the latest fatal errors happened, a ring of FatalThreshold entries
	fatalNext    int
	weight       int       // the source's weight, from 1 to nodes.MaxWeight (0 from a source reads as DefaultWeight)
	warmFrom     time.Time // when the current warm-up began; zero when the node started warm
	warmth       float64   // warm-up progress from 0 to 1 (1: warm), as of the latest Tick
	warmIdx      int       // place in Table.warming, -1 when not warming
	downFrom     time.Time // the first probe's end after the node went down; zero while up (SlowStartAfterDown)
	// failedAnswering: down by Eject (it failed statements while its probes passed), not yet
	// back up; it warms up when it returns, however short its outage.
	failedAnswering bool

	// Panic mode's bookkeeping, guarded by the table's mutex but stateNow and downSeq (written
	// with it held).
	stateNow  atomic.Int32  // state, for IsUp without the mutex
	downSeq   atomic.Uint64 // Seq of the node's latest transition to down or draining, for UpSince; 0 before any
	roleNow   atomic.Uint32 // role, for Role without the mutex (written with the mutex held)
	downAt    int           // index in Table.downs while down
	failSeq   uint64        // Table.failSeq of the latest failure held against the node; 0 before any
	panicBusy bool          // a panic-mode dial of the node is in flight
	panicAt   time.Time     // when the latest panic-mode dial of the node started
	// Below the panic threshold (threshold.go): panicIn says the down node is in the pick
	// indexes, panicServing the same without the mutex (for InRotation and UpSince), and
	// panicFailed that its latest dial failed, which keeps it out until its next probe result.
	panicIn      bool
	panicServing atomic.Bool
	panicFailed  bool

	suspect   string    // the passive signal awaiting its confirming probe; "" when none
	suspectAt time.Time // when it was noted
	ejected   bool      // down by a passive ejection, not yet back up
	ejections int       // recent passive ejections: the multiplier of BaseEjectionTime
	holdUntil time.Time // a passively ejected node stays down until then
	upSince   time.Time // when the node last came back up from a passive ejection

	// Cumulative counters, read without the mutex.
	dials, dialsFailed   atomic.Uint64
	probes, probesFailed atomic.Uint64
	fatalErrors          atomic.Uint64
	signals              atomic.Uint64 // passive signals noted against the node
	transitions          atomic.Uint64
	transitionsBy        [NumCauses]atomic.Uint64 // transitions by Cause; CauseRole counts role changes, which transitions does not
	lastProbe            atomic.Int64             // nanoseconds

	lat  latency // the latency estimate (load.go), written by Observe without the mutex
	slow uint8   // speed steps below full speed TickLoad gave the node (0: full speed); guarded by the mutex
	// overTicks counts TickLoad's calls in a row that asked for a lower speed factor
	// (SlowAfterTicks); guarded by the mutex.
	overTicks uint8

	zone  string // the node's zone from its source ("" when none); guarded by the mutex
	other bool   // zone is not Config.LocalZone (always false without one): see slot

	groupsNow atomic.Pointer[groupSet] // the node's set of groups, for InGroup without the mutex
}

// Addr returns the node's "host:port".
func (n *Node[P]) Addr() string { return n.addr }

// Epoch returns how many state changes the node has had, without the mutex: a caller stamps
// what it opens with it, to tell later whether it predates a transition (Transition.Seq).
func (n *Node[P]) Epoch() uint64 { return n.transitions.Load() }

// Payload returns what the caller hangs off the node; it never changes.
func (n *Node[P]) Payload() P { return n.payload }

// Transition is one state change of one node, reported once through Config.OnTransition.
type Transition[P any] struct {
	Node     *Node[P]
	From, To State
	Cause    Cause  // the signal that decided it (CauseProbe: an early probe would tell nothing new)
	Reason   string // why, in words fit for a log line
	// RoleFrom and RoleTo are the node's role before and after; they differ only for a role
	// change (Cause CauseRole), which leaves the state alone (From == To).
	RoleFrom, RoleTo nodes.Role
	// Seq numbers the node's state changes: the node's Epoch right after this one (0 for a
	// role change or a forgotten node). A connection opened at an Epoch at or above it was
	// opened after the change.
	Seq    uint64
	Forgot bool // the draining node closed its last connection and left the table
}

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up and takes connections.
var ErrNoUpNodeLeft = errors.New("lbd: removal refused: it would leave no node up")

// errAwaitingProbe is the last error of a node added at run time until its first good probe.
var errAwaitingProbe = errors.New("added to the node list; waiting for its first good probe")

// queueLocked adds x to the transitions to deliver.
func (t *Table[P]) queueLocked(x Transition[P]) {
	t.pending = append(t.pending, x)
	t.queued.Add(1)
}

// deliver hands the pending transitions to OnTransition, oldest first, with the mutex
// released. One goroutine delivers at a time; a call that finds another delivering leaves its
// transitions to it, and the deliverer looks again after letting go, so none is stranded. With
// nothing queued (the common case: Release, a good dial) it is one atomic load.
func (t *Table[P]) deliver() {
	for t.queued.Load() > 0 {
		if !t.deliverMu.TryLock() {
			return // the goroutine delivering sees what this call queued when it looks again
		}
		for {
			t.mu.Lock()
			if len(t.pending) == 0 {
				t.pending = nil // do not keep a burst's backing array for good
				t.mu.Unlock()
				break
			}
			x := t.pending[0]
			t.pending[0] = Transition[P]{}
			t.pending = t.pending[1:]
			t.queued.Add(-1)
			t.mu.Unlock()
			if t.cfg.OnTransition != nil {
				t.cfg.OnTransition(x)
			}
		}
		t.deliverMu.Unlock()
	}
}

// putStateLocked sets n's state, its lock-free copy and its place in the list of down nodes.
func (t *Table[P]) putStateLocked(n *Node[P], to State) {
	if n.state == Down && to != Down {
		last := t.downs[len(t.downs)-1]
		t.downs[n.downAt], last.downAt = last, n.downAt
		t.downs[len(t.downs)-1] = nil
		t.downs = t.downs[:len(t.downs)-1]
	}
	if to == Down && n.state != Down {
		n.downAt = len(t.downs)
		t.downs = append(t.downs, n)
	}
	switch {
	case n.state == Up && to != Up:
		t.upNodes.Add(-1)
	case n.state != Up && to == Up:
		t.upNodes.Add(1)
	}
	t.zoneStateLocked(n, n.state, to)
	n.state = to
	n.stateNow.Store(int32(to))
}

// failedLocked marks n as the node that failed most recently.
func (t *Table[P]) failedLocked(n *Node[P]) {
	t.failSeq++
	n.failSeq = t.failSeq
}

// IsUp reports whether n is in state up (standby or not), with one atomic load and no mutex:
// the check a checkout of a pooled connection makes. It reads the state a Snapshot taken
// before it returned would show, or a later one.
func (t *Table[P]) IsUp(n *Node[P]) bool { return State(n.stateNow.Load()) == Up }

// UpSince reports whether n is up (or served below the panic threshold: InRotation) and has not
// gone down or started draining since epoch, with
// two atomic loads and no mutex: the check a checkout of a pooled connection makes, epoch being
// the node's Epoch when the connection was opened. A connection opened before the node's
// latest down or draining transition is refused even once the node is up again, whether or not
// the caller has handled that transition yet (it retires such connections then: see
// Transition.Seq), so a handler running late cannot let a stale connection be handed out.
func (t *Table[P]) UpSince(n *Node[P], epoch uint64) bool {
	if bugCheckoutIgnoresState {
		return true
	}
	return t.InRotation(n) && (n.downSeq.Load() <= epoch || bugCheckoutIgnoresEpoch)
}

// Serves reports whether n's current role is one Config.Target accepts, with one atomic load
// and no mutex: a connection in use on a node that stopped serving the target (a demoted
// primary under target=primary) must not run its next statement there.
func (t *Table[P]) Serves(n *Node[P]) bool {
	return (t.tiers[0] | t.tiers[1]).Has(nodes.Role(n.roleNow.Load()))
}

// StateNow returns n's state with one atomic load, as IsUp reads it.
func (t *Table[P]) StateNow(n *Node[P]) State { return State(n.stateNow.Load()) }
