// Package nodetable is lbd's node table: every known node with its state and counts, the pick
// indexes over the nodes that take new connections, the rules that move a node between states,
// and changes of the node set.
//
// The table does no I/O, starts no goroutine and reads no clock. The caller reports what it saw
// (a dial's or a probe's outcome, a fatal error and when it happened, a new node list) and the
// table applies its rules. State changes are handed to Config.OnTransition after the table's
// mutex is released; the caller logs them and retires connections.
//
// Each node carries a payload of type P: what the caller hangs off a node (in lbd: the node's
// go-sql-driver connector, its live connections, statement mode's idle list, the probe target).
// The table never looks inside it.
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
	// ProbeInterval is the time between scheduled probes of a node (lbd's
	// checkHealthInterval). Good probes count toward recovery only when at least
	// ProbeInterval/2 apart (see Probed). It must be positive.
	ProbeInterval time.Duration
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
	// OnTransition, when set, is told every state change once, after the table's mutex is
	// released, on the goroutine whose call caused it. It may call the table.
	OnTransition func(Transition[P])
}

// Table is the node table. Create one with New; it is safe for concurrent use.
type Table[P any] struct {
	mu      sync.Mutex
	nodes   map[string]*Node[P]
	order   []*Node[P]           // every known node in the order it became known
	byOpen  pick.Index[*Node[P]] // up, active nodes by open physical connections: where a new one goes
	byInUse pick.Index[*Node[P]] // the same nodes by physical connections in use: where statement mode binds
	// desired is the node list last asked for while part of it could not be applied (a
	// removal that would have left no up node); nil when everything asked for is applied.
	desired []string

	ejected int // nodes down by a passive ejection that have not come back up

	total atomic.Int64 // open physical connections over every node, dials in flight included
	ups   atomic.Int32 // nodes in the pick indexes

	cfg Config[P]
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
	case cfg.MaxEjectionPercent < 0 || cfg.MaxEjectionPercent > 100:
		return nil, fmt.Errorf("maxEjectionPercent is %d; it must be from 0 to 100", cfg.MaxEjectionPercent)
	case cfg.BaseEjectionTime < 0:
		return nil, fmt.Errorf("baseEjectionTime is %v; it must not be negative", cfg.BaseEjectionTime)
	}
	return &Table[P]{nodes: make(map[string]*Node[P]), cfg: cfg}, nil
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
	dialFailures int         // consecutive failed dials
	goodProbes   int         // consecutive good probes counted since the last failure or markdown
	lastGood     time.Time   // when the latest counted good probe ended
	everUp       bool        // false for a node added at run time that has not passed a probe yet
	standby      bool        // probed and tracked, but out of the pick indexes
	lastErr      error       // the latest failure held against the node
	fatalTimes   []time.Time // when the latest fatal errors happened, a ring of FatalThreshold entries
	fatalNext    int
	suspect      string    // the passive signal awaiting its confirming probe; "" when none
	suspectAt    time.Time // when it was noted
	ejected      bool      // down by a passive ejection, not yet back up
	ejections    int       // recent passive ejections: the multiplier of BaseEjectionTime
	holdUntil    time.Time // a passively ejected node stays down until then
	upSince      time.Time // when the node last came back up from a passive ejection

	// Cumulative counters, read without the mutex.
	dials, dialsFailed   atomic.Uint64
	probes, probesFailed atomic.Uint64
	fatalErrors          atomic.Uint64
	signals              atomic.Uint64 // passive signals noted against the node
	transitions          atomic.Uint64
	transitionsBy        [NumCauses]atomic.Uint64 // transitions by Cause
	lastProbe            atomic.Int64             // nanoseconds
}

// Addr returns the node's "host:port".
func (n *Node[P]) Addr() string { return n.addr }

// Payload returns what the caller hangs off the node; it never changes.
func (n *Node[P]) Payload() P { return n.payload }

// Transition is one state change of one node, reported once through Config.OnTransition.
type Transition[P any] struct {
	Node     *Node[P]
	From, To State
	Cause    Cause  // the signal that decided it (CauseProbe: an early probe would tell nothing new)
	Reason   string // why, in words fit for a log line
	Forgot   bool   // the draining node closed its last connection and left the table
}

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up and takes connections.
var ErrNoUpNodeLeft = errors.New("lbd: removal refused: it would leave no node up")

// errAwaitingProbe is the last error of a node added at run time until its first good probe.
var errAwaitingProbe = errors.New("added to the node list; waiting for its first good probe")

func (t *Table[P]) emit(tr []Transition[P]) {
	if t.cfg.OnTransition == nil {
		return
	}
	for _, x := range tr {
		t.cfg.OnTransition(x)
	}
}
