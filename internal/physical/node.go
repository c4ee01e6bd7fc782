package physical

import (
	"context"
	"database/sql/driver"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
)

// Table is the node table with physical nodes as its payload, and TableNode a node's handle in
// it.
type (
	Table     = nodetable.Table[*Node]
	TableNode = nodetable.Node[*Node]
)

// Hooks is what a node's connections ask of the Connector. The root gives one value per node
// at NewNode and gets it back with Node.Hooks.
type Hooks interface {
	// StatementError is told every error a statement returned that is not a protocol
	// violation, and returns the error the caller gets. nothingRan says the error proves that
	// the server ran none of the command (see Conn.nothingRan).
	StatementError(c *Conn, err error, nothingRan bool) error
	// Broken is told the protocol violation that broke c (the connection is closed already).
	Broken(c *Conn, err error)
	// CallerEnded is told, once per connection, that the context of a command on c ended while
	// the command ran (cause: context.Canceled or context.DeadlineExceeded): go-sql-driver cut
	// the connection. No error of c reaches StatementError from then on.
	CallerEnded(c *Conn, cause error)
	// RetryRead is told a read (the text query with args) that failed with err on c before
	// any row reached the caller, outside any transaction (Conn.MayRetryRead); err is what
	// StatementError returned. When it runs the read again elsewhere (ran), rows and rerr are
	// that run's answer for the caller; otherwise the caller gets err.
	RetryRead(ctx context.Context, c *Conn, query string, args []driver.NamedValue, err error) (rows driver.Rows, ran bool, rerr error)
	// RetryPrepare is told a prepare that failed with err on c, outside any transaction
	// (Conn.MayRetryRead), and reports whether database/sql should prepare again on another
	// connection (Conn.prepareFailed).
	RetryPrepare(c *Conn, err error) bool
	// Farewell is told the server error found waiting on c at its checkout, sent while c was
	// idle as the server closed it (see farewell.go). c is being dropped; database/sql moves
	// on to another connection.
	Farewell(c *Conn, err error)
	// Trace returns the statement tracing of the node's connections (trace.go); nil traces
	// nothing. NewNode asks once.
	Trace() *Trace
}

// Node is what this package hangs off one proxy: its go-sql-driver connector, its live
// connections, statement mode's idle list, and the counters its connections keep. Its state
// and counts are the table's (internal/nodetable); TN is its handle there. connsMu and freeMu
// are leaf locks like the table's mutex: nothing else is called while one is held, so no two of
// the three are ever held at once.
type Node struct {
	addr  string
	table *Table
	tn    *TableNode
	hooks Hooks
	trace *Trace // hooks.Trace(), nil when statements are not traced here
	// connector is go-sql-driver's for this node (network "lb", the node's address and TLS
	// server name). The dial ticket decides whether a connection counts: the application's
	// do, the probe's does not.
	connector driver.Connector
	// transport carries TLS and compression beneath go-sql-driver (connector negotiates
	// neither).
	transport Transport

	retiredBy [NumReasons]atomic.Uint64 // connections retired, by reason

	// Flight counts statements on the wire on this node and those answered, for passive
	// outlier detection (internal/health's stall loop reads it).
	Flight Flight

	// Replication is what statement mode's causal reads learned of the node's replication.
	Replication Replication

	// Live wrapped connections, for retiring them when the node goes down or is rebalanced;
	// nil until the first.
	connsMu sync.Mutex
	conns   map[*Conn]struct{}

	// Statement mode: physical connections parked idle, most recently returned last.
	freeMu sync.Mutex
	free   []parked
}

// Replication is what statement mode's causal reads (internal/logical, which alone uses it)
// learned of one node's replication from their waits there. Times are Unix nanoseconds,
// durations nanoseconds.
type Replication struct {
	// HeldUntil: after a wait timed out, no read waits here until then (0: reads may wait);
	// their reads go to the primary.
	HeldUntil atomic.Int64
	// CatchUp is how long the node has lately taken to apply a write: a read of a younger
	// write goes to the primary rather than waiting here, but for one read at Remeasure, which
	// checks the replica all the same (0: never measured).
	CatchUp, Remeasure atomic.Int64
}

// parked is an idle physical connection of statement mode and when it was parked.
type parked struct {
	c  *Conn
	at time.Time
}

// NewNode builds the node the table is adding as tn; it does no I/O (it runs as the table's
// Build, under the table's mutex). tr carries TLS and compression beneath connector, which must
// negotiate neither (NewTransport takes them out of its configuration).
func NewNode(table *Table, tn *TableNode, connector driver.Connector, tr Transport, hooks Hooks) *Node {
	return &Node{addr: tn.Addr(), table: table, tn: tn, connector: connector, transport: tr, hooks: hooks, trace: hooks.Trace()}
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return n.addr }

// TN is the node's handle in the node table.
func (n *Node) TN() *TableNode { return n.tn }

// Hooks returns the value the node was built with.
func (n *Node) Hooks() Hooks { return n.hooks }

// RetiredBy returns how many of the node's connections were retired for why.
func (n *Node) RetiredBy(why Reason) uint64 { return n.retiredBy[why].Load() }

// Flight counts the statements on the wire on one node and those answered. The Stall* fields
// belong to internal/health's stall loop goroutine alone; it writes Progress, which anyone may read.
type Flight struct {
	InFlight atomic.Int64
	Landed   atomic.Uint64
	// Progress is when the stall loop last saw the node make progress (or idle), Unix
	// nanoseconds; 0 before its first look.
	Progress atomic.Int64

	StallLanded  uint64 // Landed at the stall loop's last reading
	StallBackoff uint   // the stall threshold is doubled this many times
}

// depart counts one statement going on the wire.
func (f *Flight) depart() { f.InFlight.Add(1) }

// land counts the end of a statement departed earlier; one that ended with *errp answered by
// the server (nil, or a server error) is progress, one whose connection failed is not.
func (f *Flight) land(errp *error) {
	f.InFlight.Add(-1)
	if err := *errp; err == nil || err == driver.ErrSkip || IsServerAnswer(err) {
		f.Landed.Add(1)
	}
}

// depart counts a statement going on the wire on n and returns when it left, for land.
func (n *Node) depart() time.Time {
	n.Flight.depart()
	return time.Now()
}

// land counts the end of a statement that departed at start; one the server answered (nil, or
// a server error) is progress, and the round trip of one that succeeded a sample of n's latency
// estimate (the node table's Observe, on the monotonic clock: round trips are real time).
// Errors are no sample: a proxy that fails every statement at once would otherwise measure
// fastest and draw the most work.
func (n *Node) land(errp *error, start time.Time) {
	n.Flight.land(errp)
	if *errp == nil {
		now := time.Now()
		n.table.Observe(n.tn, now, now.Sub(start))
	}
}

func (n *Node) track(c *Conn) {
	n.connsMu.Lock()
	if n.conns == nil { // made at the first connection: a node that never has one costs no map
		n.conns = make(map[*Conn]struct{})
	}
	n.conns[c] = struct{}{}
	n.connsMu.Unlock()
}

func (n *Node) untrack(c *Conn) {
	n.connsMu.Lock()
	delete(n.conns, c)
	n.connsMu.Unlock()
}

// Conns copies the live connections, so that they can be looked at or retired without
// holding the registry's lock across I/O.
func (n *Node) Conns() []*Conn {
	n.connsMu.Lock()
	defer n.connsMu.Unlock()
	out := make([]*Conn, 0, len(n.conns))
	for c := range n.conns {
		out = append(out, c)
	}
	return out
}

// RetireAll marks every connection of the node retired: idle ones close at once, in-use ones
// at their next return to the pool. It returns how many closed at once.
func (n *Node) RetireAll(why Reason) int { return n.RetireBefore(why, ^uint64(0)) }

// RetireBefore is RetireAll for the connections opened before the node's state change
// numbered seq (the transition's Seq): a down transition handled after the node came back must
// not retire the connections opened since.
func (n *Node) RetireBefore(why Reason, seq uint64) int {
	closed := 0
	for _, c := range n.Conns() {
		if c.epoch < seq && c.Retire(why) {
			closed++
		}
	}
	return closed
}

// RetireSurplus retires up to max connections that are not retired yet: idle ones first,
// closed at once; then in-use ones, marked to close at their next return to the pool (never
// cut mid-statement). It returns how many it retired.
func (n *Node) RetireSurplus(max int) int {
	conns := n.Conns()
	done := 0
	for _, c := range conns {
		if done >= max {
			return done
		}
		if c.RetireIfIdle(Rebalance) {
			done++
		}
	}
	for _, c := range conns {
		if done >= max {
			break
		}
		if c.MarkRetired(Rebalance) {
			done++
		}
	}
	return done
}

// ConnCounts counts the node's connections that sit idle and those marked retired but still
// open (in use, closing at their return).
func (n *Node) ConnCounts() (idle, retiring int) {
	n.connsMu.Lock()
	defer n.connsMu.Unlock()
	for c := range n.conns {
		switch {
		case c.isIdle():
			idle++
		case c.retired.Load():
			retiring++
		}
	}
	return idle, retiring
}

// PushFree parks an idle physical connection on the node's free list (statement mode), at now.
func (n *Node) PushFree(c *Conn, now time.Time) {
	n.freeMu.Lock()
	n.free = append(n.free, parked{c, now})
	n.freeMu.Unlock()
}

// PopFree takes the most recently parked physical connection and claims it for use, skipping
// any that lbd closed while they sat there (retired). It returns nil when none is left.
func (n *Node) PopFree() *Conn {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	for len(n.free) > 0 {
		c := n.free[len(n.free)-1].c
		n.free[len(n.free)-1] = parked{}
		n.free = n.free[:len(n.free)-1]
		if c.Claim() {
			return c
		}
	}
	return nil
}

// PopOldestFree takes the physical connection that has been parked longest, if it was parked
// before the given time (any, when that is zero), and marks it closed (the caller closes it
// with ClosePhysical); nil when there is none.
func (n *Node) PopOldestFree(parkedBefore time.Time) *Conn {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	for len(n.free) > 0 {
		f := n.free[0]
		if !parkedBefore.IsZero() && !f.at.Before(parkedBefore) {
			return nil
		}
		copy(n.free, n.free[1:])
		n.free[len(n.free)-1] = parked{}
		n.free = n.free[:len(n.free)-1]
		if f.c.takeIdleToClose() {
			return f.c
		}
	}
	return nil
}

// FreeCount returns how many physical connections are parked (some may have closed since).
func (n *Node) FreeCount() int {
	n.freeMu.Lock()
	defer n.freeMu.Unlock()
	return len(n.free)
}
