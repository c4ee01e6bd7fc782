package nodetable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/nodes"
)

// The model checker: a breadth-first search over every sequence of events the table takes, up
// to a bounded depth, from a small cluster, driving the real Table methods and checking the
// invariants below after every event. States are deduplicated by a key over everything that
// decides what the table and the model do next (modelKey), so a state reached by two
// sequences is expanded once. Breadth first, the first violation found has a shortest
// sequence, which the failure prints.
//
// The events: a probe's answer, good or failed; a dial, good or failed; a fatal error; a
// passive signal confirmed by a failed probe (an outlier); a role check answering the other
// role; the source listing a node or no longer listing it (it then drains); the pool closing a
// connection; the clock moving one step; the handler taking a transition; and in the second
// set (modelEventsAll) the standby flag, lag, a refused read and a cleared signal. The
// invariants, each with the source of its rule: lastUpNodeNeverRemoved,
// noConnectionOnADownNode, retireExactlyTheOlder, recoveryNeedsConfirmations,
// ejectionWithinCap, panicOnlyWhenNoNodeIsUp, warmupWithinBounds, countsAgree.
//
// The model stands in for lbd's caller where the table relies on it: it opens and closes
// connections (stamped with their node's Epoch, as internal/physical stamps them), hands
// transitions to a handler that runs late, as lbd's per-Connector goroutine does (event
// "handle"), retires a node's connections older than a down or draining transition's Seq, as
// physical.Node.RetireBefore does, and checks a pooled connection out only when it is not
// retired and the table's UpSince says its node is up and has not gone down since the
// connection was opened, as physical.Conn.enter does.

// modelStep is the clock's step: half the probe interval, so that two good probes at one time
// count once toward recovery and two one step apart count twice.
const modelStep = time.Second

// modelConfig is the table the checker explores: recovery by two spaced probes, fatal bursts of
// two within one step, passive ejection of up to 67% (two of three nodes, never the last up)
// with a hold of two steps (longer than the spacing of two good probes, so the hold is what
// decides), warm-up over two steps, panic dials one step apart. Short windows keep the number
// of distinct states small; each rule still meets the time both sides of its window.
func modelConfig() Config[*payload] {
	return Config[*payload]{
		RecoverCount:       2,
		FatalThreshold:     2,
		FatalWindow:        modelStep,
		ProbeInterval:      2 * modelStep,
		Warmup:             2 * modelStep,
		MaxEjectionPercent: 67,
		BaseEjectionTime:   2 * modelStep,
		FlapWindow:         2 * modelStep,
		PanicSpacing:       modelStep,
		RoleCheck:          true,
	}
}

// modelT0 is the model's time when a run starts; messages give times as offsets from it.
var modelT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// modelConnsPerNode bounds the connections the model opens on one node.
const modelConnsPerNode = 1

// modelAddrs are the nodes: the first two listed at start, the third added by an event.
var modelAddrs = [...]string{"a:1", "b:1", "c:1"}

// modelStart is how many of modelAddrs are listed at start (trusted, as Start trusts them).
const modelStart = 2

// eventKind is one kind of event the table takes.
type eventKind uint8

const (
	evProbeOK     eventKind = iota // a scheduled or early probe answered (Probed)
	evProbeFail                    // a probe failed (Probed)
	evDialOK                       // a dial of the node gave a connection (Pick or PanicPick, then Dialed/PanicDialed)
	evDialFail                     // a dial of the node failed (then Release)
	evFatal                        // a connection of the node hit a fatal error (Fatal)
	evOutlier                      // a passive signal whose confirming probe failed (Suspect, Confirmed)
	evRole                         // a role check answered the other role: primary <-> standby (RoleChecked)
	evAdd                          // the source lists the node again or for the first time (SetNodes)
	evRemove                       // the source stops listing the node: it drains (SetNodes)
	evClose                        // the pool closes the node's oldest connection (Release)
	evStandby                      // the source flips the node's standby flag (SetNodes)
	evLag                          // the replica falls behind or catches up (SetLagging)
	evRefusedRead                  // the node refused a read as not the primary (RefusedRead)
	evConfirmOK                    // a passive signal whose confirming probe answered (Suspect, Confirmed)
	numNodeEvents                  // the kinds above are events of one node; the ones below are not
	evAdvance                      // the clock moves one step, the caller ticks (Tick)
	evHandle                       // lbd's transition handler takes the oldest transition
)

var eventNames = [...]string{"probe-ok", "probe-fail", "dial-ok", "dial-fail", "fatal", "outlier",
	"role", "add", "remove", "close", "standby", "lag", "refused-read", "signal-cleared"}

// event is one event of a sequence: a kind, and for a node event the node's index in
// modelAddrs.
type event struct {
	kind eventKind
	node uint8
}

func (e event) String() string {
	switch e.kind {
	case evAdvance:
		return fmt.Sprintf("advance %v", modelStep)
	case evHandle:
		return "handle-transition"
	}
	return eventNames[e.kind] + " " + modelAddrs[e.node]
}

// modelEvents lists the events of the core kinds (those before evStandby), in the order the
// search tries them; modelEventsAll adds the kinds that take a node out of the picks without a
// state change (standby flag, lag, refused read) and a passive signal cleared by its probe.
func modelEvents() []event { return eventsOf(evStandby) }

func modelEventsAll() []event { return eventsOf(numNodeEvents) }

func eventsOf(kinds eventKind) []event {
	var evs []event
	for k := range kinds {
		for i := range modelAddrs {
			evs = append(evs, event{kind: k, node: uint8(i)})
		}
	}
	return append(evs, event{kind: evAdvance}, event{kind: evHandle})
}

// manualClock is a clock.Clock that moves only when told: the model's time. The table reads no
// clock; lbd passes it clock.Clock's Now, and the model passes this one's.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time                     { return c.now }
func (c *manualClock) NewTimer(time.Duration) clock.Timer { panic("the model sets no timer") }

var _ clock.Clock = (*manualClock)(nil)

// mconn is one connection the model opened, idle in the pool: the invariants ask whether a
// checkout would hand it out.
type mconn struct {
	node    *Node[*payload]
	epoch   uint64 // the node's Epoch when it was opened
	born    int    // the model's delivery count when it was opened
	retired bool
}

// nodeSpec is what the model records of one node from the outside, to judge the table by: the
// rules' inputs since the node's latest markdown.
type nodeSpec struct {
	everUp     bool        // trusted at start or brought up since it was (last) listed
	goods      []time.Time // good probes counted since the latest markdown or failed probe
	seen       []time.Time // every good probe since then, counted or not (for messages)
	downAt     time.Time   // when it last went down
	ejectedAt  time.Time   // when a passive ejection took it down; zero when it was not
	upByProbe  time.Time   // when a probe last brought it up; zero before
	lastDownAt int         // the model's delivery count at its latest down or draining transition
}

// modelRun is one replay of a sequence on a fresh table.
type modelRun struct {
	tab     *Table[*payload]
	clk     *manualClock
	rules   Config[*payload] // the rules the invariants judge by
	listed  []string
	standby map[string]bool // the standby flags of the listed nodes
	conns   []*mconn
	spec    map[*Node[*payload]]*nodeSpec
	// delivered holds the transitions delivered during the current event; queue those the
	// handler has not taken yet, with the delivery count at which each was delivered.
	delivered  []Transition[*payload]
	queue      []queued
	deliveries int
	before     modelBefore       // the table as the current event found it
	seen       []*modelViolation // violations the event itself saw (a pick, a retirement)
	drained    bool              // the event made a node draining
	// checking says the invariants are checked after each event: off while a run replays a
	// sequence the search has checked already.
	checking bool
	views    []View[*payload] // the table's views after the event, for the invariants
	keyBuf   []byte
}

type queued struct {
	x  Transition[*payload]
	at int
}

// modelBefore is what the invariants need of the state before an event.
type modelBefore struct {
	active  int // nodes that took connections
	ejected int // nodes down by a passive ejection
}

var errModelProbe = errors.New("probe failed")

// newModelRun starts a run on a table configured with cfg, judged by the rules of rules (cfg,
// but where a test gives the invariants a rule the table does not apply, to see them fail).
func newModelRun(cfg, rules Config[*payload]) *modelRun {
	r := &modelRun{clk: &manualClock{now: modelT0}, rules: rules, standby: map[string]bool{},
		spec: make(map[*Node[*payload]]*nodeSpec)}
	cfg.OnTransition = func(x Transition[*payload]) {
		r.delivered = append(r.delivered, x)
	}
	tab, err := New(cfg)
	if err != nil {
		panic(err)
	}
	r.tab = tab
	list := make([]nodes.Node, modelStart)
	for i := range list {
		list[i] = nodes.Node{Addr: modelAddrs[i], Role: nodes.RolePrimary}
		r.listed = append(r.listed, modelAddrs[i])
	}
	if err := tab.Start(list, build); err != nil {
		panic(err)
	}
	for _, n := range tab.Nodes(nil) {
		r.spec[n] = &nodeSpec{everUp: true}
	}
	return r
}

// node returns the table's node for addr, nil when the table has none.
func (r *modelRun) node(addr string) *Node[*payload] {
	r.tab.mu.Lock()
	defer r.tab.mu.Unlock()
	return r.tab.nodes[addr]
}

func (r *modelRun) specOf(n *Node[*payload]) *nodeSpec {
	s := r.spec[n]
	if s == nil {
		s = &nodeSpec{}
		r.spec[n] = s
	}
	return s
}

// others returns the table's nodes but n: the skip list that makes a pick choose n or none.
func (r *modelRun) others(n *Node[*payload]) []*Node[*payload] {
	var skip []*Node[*payload]
	for _, x := range r.tab.Nodes(nil) {
		if x != n {
			skip = append(skip, x)
		}
	}
	return skip
}

func (r *modelRun) connsOf(addr string) []*mconn {
	var out []*mconn
	for _, c := range r.conns {
		if c.node.addr == addr {
			out = append(out, c)
		}
	}
	return out
}

// apply runs one event; it reports false when the event cannot happen in this state (it is
// then not explored).
func (r *modelRun) apply(e event) bool {
	if r.checking {
		r.before = r.observeBefore()
	}
	r.seen, r.drained = r.seen[:0], false
	now := r.clk.Now()
	var addr string
	var n *Node[*payload]
	if e.kind < numNodeEvents {
		addr = modelAddrs[e.node]
		n = r.node(addr)
	}
	switch e.kind {
	case evProbeOK, evProbeFail:
		if n == nil {
			return false
		}
		var err error
		if e.kind == evProbeFail {
			err = errModelProbe
		}
		r.noteProbe(n, now, err)
		r.tab.Probed(n, now, err, 0)
	case evDialOK, evDialFail:
		if n == nil || len(r.connsOf(addr)) >= modelConnsPerNode && e.kind == evDialOK {
			return false
		}
		return r.dial(n, now, e.kind == evDialOK)
	case evFatal:
		if n == nil || len(r.connsOf(addr)) == 0 {
			return false
		}
		r.tab.Fatal(n, now, errors.New("connection reset by peer"))
	case evOutlier:
		if n == nil || !r.tab.Suspect(n, now, "statements stalled") {
			return false
		}
		r.tab.Confirmed(n, now, errors.New("confirming probe not answered"), 0)
	case evRole:
		if n == nil {
			return false
		}
		to := nodes.RoleStandby
		if r.tab.Role(n) == nodes.RoleStandby {
			to = nodes.RolePrimary
		}
		r.tab.RoleChecked(n, to, nil)
	case evAdd, evRemove, evStandby:
		listed := slices.Contains(r.listed, addr)
		switch {
		case e.kind == evAdd && !listed:
			r.listed = append(r.listed, addr)
		case e.kind == evRemove && listed && len(r.listed) > 1:
			r.listed = slices.DeleteFunc(r.listed, func(a string) bool { return a == addr })
			delete(r.standby, addr)
		case e.kind == evStandby && listed:
			r.standby[addr] = !r.standby[addr]
		default:
			return false
		}
		list := make([]nodes.Node, len(r.listed))
		for i, a := range r.listed {
			list[i] = nodes.Node{Addr: a, Role: nodes.RolePrimary, Standby: r.standby[a]}
		}
		added, err := r.tab.SetNodes(list, build)
		if err != nil && !errors.Is(err, ErrNoUpNodeLeft) {
			panic(err)
		}
		for _, a := range added {
			s := r.specOf(a)
			s.everUp, s.goods, s.seen = r.tab.State(a) == Up, nil, nil
			s.upByProbe = time.Time{}
			if !s.everUp {
				s.downAt = now
			}
		}
	case evLag:
		if n == nil {
			return false
		}
		r.tab.mu.Lock()
		lagging := n.lagging
		r.tab.mu.Unlock()
		r.tab.SetLagging(n, !lagging)
	case evRefusedRead:
		if n == nil || !r.tab.RefusedRead(n, now) {
			return false
		}
	case evConfirmOK:
		if n == nil || !r.tab.Suspect(n, now, "statements stalled") {
			return false
		}
		r.noteProbe(n, now, nil)
		r.tab.Confirmed(n, now, nil, 0)
	case evClose:
		cs := r.connsOf(addr)
		if len(cs) == 0 {
			return false
		}
		r.closeConn(cs[0])
	case evAdvance:
		r.clk.now = now.Add(modelStep)
		r.tab.Tick(r.clk.Now())
	case evHandle:
		if len(r.queue) == 0 {
			return false
		}
		r.handle()
	}
	return true
}

// dial opens a connection on n as lbd's Connect does: the normal pick, or while no node takes
// connections the panic pick, each told to choose n or nothing. It reports false when neither
// chose n.
func (r *modelRun) dial(n *Node[*payload], now time.Time, ok bool) bool {
	skip := r.others(n)
	panicDial := false
	got := r.tab.Pick(skip)
	if got == nil {
		active := r.tab.Ups()
		got = r.tab.PanicPick(skip, now)
		if got != nil && active > 0 {
			r.seen = append(r.seen, &modelViolation{"PanicOnlyWhenNoNodeIsUp",
				fmt.Sprintf("PanicPick chose %s while %d nodes took connections", got.addr, active)})
		}
		panicDial = true
	} else if st := r.tab.State(got); st != Up {
		r.seen = append(r.seen, &modelViolation{"NoConnectionOnADownNode", fmt.Sprintf("Pick chose %s, which is %v", got.addr, st)})
	}
	if got == nil {
		return false
	}
	if got != n {
		panic("a pick chose a node the skip list excluded")
	}
	if !ok {
		r.tab.Release(n)
		r.tab.Dialed(n, errors.New("connection refused"))
		if panicDial {
			r.tab.PanicDialed(n, errors.New("connection refused"))
		}
		return true
	}
	if panicDial {
		r.tab.PanicDialed(n, nil)
	}
	r.conns = append(r.conns, &mconn{node: n, epoch: n.Epoch(), born: r.deliveries})
	r.tab.Dialed(n, nil)
	return true
}

func (r *modelRun) closeConn(c *mconn) {
	r.conns = slices.DeleteFunc(r.conns, func(x *mconn) bool { return x == c })
	r.tab.Release(c.node)
}

// noteProbe records a probe's answer in the model's own account of recovery: good probes
// since the latest markdown, counted when at least RecoverSpacing after the previous counted one
// (rules.go, Probed); a failed probe starts the count again.
func (r *modelRun) noteProbe(n *Node[*payload], now time.Time, err error) {
	s := r.specOf(n)
	if err != nil {
		s.goods, s.seen = nil, nil
		return
	}
	s.seen = append(s.seen, now)
	if len(s.goods) == 0 || now.Sub(s.goods[len(s.goods)-1]) >= r.rules.recoverSpacing() {
		s.goods = append(s.goods, now)
	}
}

// handle is lbd's transition handler taking the oldest transition: a down or draining one
// retires the node's connections older than its Seq (physical.Node.RetireBefore), closing them.
func (r *modelRun) handle() {
	q := r.queue[0]
	r.queue = r.queue[1:]
	x := q.x
	if x.Forgot || x.Cause == CauseRole || x.To == Up {
		return
	}
	for _, c := range slices.Clone(r.conns) {
		if c.node != x.Node {
			continue
		}
		older := c.epoch < x.Seq
		if v := retireExactlyTheOlder(x, c, q.at, older); v != nil {
			r.seen = append(r.seen, &modelViolation{"RetireExactlyTheOlderConnections", v.Error()})
		}
		if older {
			c.retired = true
			r.closeConn(c)
		}
	}
}

// retireExactlyTheOlder: a down or draining transition, handled however late, retires exactly
// its node's connections opened before it: a connection opened before is retired (else it
// outlives the markdown), and one opened after, once the node came back, is not (else a
// connection checked out meanwhile fails with a bad connection). Source: Transition.Seq and
// Node.Epoch in table.go, physical.Node.RetireBefore. The model knows which connections came
// first by when they were opened and when the transition was delivered (at).
func retireExactlyTheOlder(x Transition[*payload], c *mconn, at int, older bool) error {
	switch before := c.born < at; {
	case before && !older:
		return fmt.Errorf("%s's %v transition (Seq %d) leaves a connection opened before it (epoch %d) open", x.Node.addr, x.To, x.Seq, c.epoch)
	case !before && older:
		return fmt.Errorf("%s's %v transition (Seq %d), handled late, retires a connection opened after it (epoch %d)", x.Node.addr, x.To, x.Seq, c.epoch)
	}
	return nil
}

// modelViolation is an invariant the table broke.
type modelViolation struct {
	invariant string
	detail    string
}

func (v *modelViolation) Error() string { return v.invariant + ": " + v.detail }

// check takes the transitions the event delivered into the model's records and, when the run
// is checking, checks every invariant.
func (r *modelRun) check() *modelViolation {
	if r.checking && len(r.seen) > 0 {
		return r.seen[0]
	}
	now := r.clk.Now()
	for _, x := range r.delivered {
		r.deliveries++
		r.queue = append(r.queue, queued{x: x, at: r.deliveries})
		if x.Forgot || x.Cause == CauseRole {
			continue
		}
		s := r.specOf(x.Node)
		if r.checking {
			if v := r.checkTransition(x, s, now); v != nil {
				return v
			}
		}
		switch x.To {
		case Down:
			s.goods, s.seen, s.downAt, s.lastDownAt = nil, nil, now, r.deliveries
			s.ejectedAt = time.Time{}
			if x.Cause == CausePassive {
				s.ejectedAt = now
			}
		case Draining:
			s.lastDownAt = r.deliveries
			r.drained = true
		case Up:
			s.everUp, s.ejectedAt = true, time.Time{}
			if x.Cause == CauseProbe {
				s.upByProbe = now
			}
		}
	}
	r.delivered = r.delivered[:0]
	if !r.checking {
		return nil
	}
	r.views = r.tab.Snapshot(r.views[:0])
	for _, inv := range modelInvariants {
		if v := inv.check(r); v != nil {
			return &modelViolation{inv.name, v.Error()}
		}
	}
	return nil
}

// checkTransition checks the rules of one state change against the state before the event.
func (r *modelRun) checkTransition(x Transition[*payload], s *nodeSpec, now time.Time) *modelViolation {
	switch {
	case x.To == Up && x.From == Down && x.Cause == CauseProbe:
		if v := recoveryNeedsConfirmations(r, x, s, now); v != nil {
			return &modelViolation{"RecoveryNeedsConfirmations", v.Error()}
		}
	case x.To == Up && x.Cause == CausePanic:
		if r.before.active != 0 {
			return &modelViolation{"PanicOnlyWhenNoNodeIsUp",
				fmt.Sprintf("%s came up by a panic-mode dial while %d nodes took connections", x.Node.addr, r.before.active)}
		}
	case x.To == Up:
		return &modelViolation{"RecoveryNeedsConfirmations",
			fmt.Sprintf("%s came up from %v by %v, which is no way up", x.Node.addr, x.From, x.Cause)}
	case x.To == Down && x.Cause == CausePassive:
		if v := ejectionWithinCap(r, x); v != nil {
			return &modelViolation{"EjectionsWithinCap", v.Error()}
		}
	}
	return nil
}

// recoveryNeedsConfirmations: a down node comes back up by probes only after RecoverCount
// consecutive good probes since it went down (one for a node added at run time that has never
// been up), each counted only when at least RecoverSpacing after the previous counted one, so
// the early probes a fatal-error markdown asks for, run back to back, never pass for a
// recovery; a passively ejected node also waits out at least BaseEjectionTime; and probes bring
// a node up at most once per FlapWindow. Source: Probed in rules.go (the rules' comment there),
// Config.RecoverCount, Config.FlapWindow, and the hold in passive.go.
func recoveryNeedsConfirmations(r *modelRun, x Transition[*payload], s *nodeSpec, now time.Time) error {
	need := r.rules.RecoverCount
	if !s.everUp {
		need = 1
	}
	if len(s.goods) < need {
		return fmt.Errorf("%s came up at %s after good probes at %s since it went down at %s, of which %d counted; want %d, each at least %v after the one counted before",
			x.Node.addr, fmtTime(now), fmtTimes(s.seen), fmtTime(s.downAt), len(s.goods), need, r.rules.recoverSpacing())
	}
	if x.Cause == CauseProbe && !s.upByProbe.IsZero() && now.Sub(s.upByProbe) < r.rules.FlapWindow {
		return fmt.Errorf("%s came up by probes at %s, %v after probes last brought it up, within the flap window of %v",
			x.Node.addr, fmtTime(now), now.Sub(s.upByProbe), r.rules.FlapWindow)
	}
	if !s.ejectedAt.IsZero() && now.Sub(s.ejectedAt) < r.rules.BaseEjectionTime {
		return fmt.Errorf("%s came up %v after its passive ejection, before the hold of %v", x.Node.addr, now.Sub(s.ejectedAt), r.rules.BaseEjectionTime)
	}
	return nil
}

// fmtTime gives t as the offset from the run's start: "t+3s".
func fmtTime(t time.Time) string { return "t+" + t.Sub(modelT0).String() }

func fmtTimes(ts []time.Time) string {
	var b []string
	for _, t := range ts {
		b = append(b, fmtTime(t))
	}
	return "[" + strings.Join(b, " ") + "]"
}

// ejectionWithinCap: a passive ejection happens only while fewer than max(1,
// (active+ejected)×MaxEjectionPercent/100) nodes are passively ejected, and never takes the
// last node that takes connections. Source: Config.MaxEjectionPercent and mayEjectLocked in
// passive.go.
func ejectionWithinCap(r *modelRun, x Transition[*payload]) error {
	b := r.before
	allowed := max(1, (b.active+b.ejected)*r.rules.MaxEjectionPercent/100)
	if b.ejected >= allowed || b.active <= 1 {
		return fmt.Errorf("%s ejected while %d nodes were ejected (cap %d at %d%%) and %d took connections",
			x.Node.addr, b.ejected, allowed, r.rules.MaxEjectionPercent, b.active)
	}
	return nil
}

// observeBefore counts, from the table's views, what the invariants compare an event against.
func (r *modelRun) observeBefore() modelBefore {
	var b modelBefore
	r.views = r.tab.Snapshot(r.views[:0])
	for _, v := range r.views {
		if r.takesConnections(v) {
			b.active++
		}
		if v.State == Down && !r.specOf(v.Node).ejectedAt.IsZero() {
			b.ejected++
		}
	}
	return b
}

// takesConnections reports whether a view's node is one a pick may choose under Target any:
// up, not standby by its flag or its role, not lagging, not out for a refused read (which no
// view shows, so it is read from the node).
func (r *modelRun) takesConnections(v View[*payload]) bool {
	r.tab.mu.Lock()
	refused := v.Node.refusedRead
	r.tab.mu.Unlock()
	return v.State == Up && !v.Standby && v.Role != nodes.RoleStandby && !v.Lagging && !refused
}

// modelInvariant is one invariant checked after every event.
type modelInvariant struct {
	name  string
	check func(*modelRun) error
}

var modelInvariants = []modelInvariant{
	{"LastUpNodeNeverRemoved", lastUpNodeNeverRemoved},
	{"NoConnectionOnADownNode", noConnectionOnADownNode},
	{"PanicOnlyWhenNoNodeIsUp", panicOnlyWhenNoNodeIsUp},
	{"WarmupWithinBounds", warmupWithinBounds},
	{"CountsAgree", countsAgree},
}

// lastUpNodeNeverRemoved: removals never leave the table without a listed node that is up and
// takes connections: a node that is not listed is draining only if some listed node is up and
// active, or was when it started draining; a removal that would leave none waits
// (ErrNoUpNodeLeft) and stays pending. Source: SetNodes's doc comment and applyRemovalsLocked
// in set.go.
func lastUpNodeNeverRemoved(r *modelRun) error {
	views := r.views
	upListed := 0
	draining := 0
	for _, v := range views {
		if slices.Contains(r.listed, v.Addr()) && r.takesConnections(v) {
			upListed++
		}
		if v.State == Draining {
			draining++
		}
	}
	if r.drained && upListed == 0 {
		return fmt.Errorf("a removal drained a node and left no listed node up and taking connections (listed %v, %d draining)", r.listed, draining)
	}
	return nil
}

// noConnectionOnADownNode: no connection is handed out on a node after its down (or
// draining) transition. A pick returns only up nodes outside panic mode (Pick's doc comment);
// a checkout, which hands out a pooled connection only when IsUp says its node is up
// (physical.Conn.enter), finds IsUp false from the moment the table shows the node down or
// draining (IsUp's doc comment); and a connection opened before the node's latest down or
// draining transition is never handed out again: it is retired when the handler takes the
// transition (Transition.Seq, Node.Epoch), and until then the node is not up, as the design's
// promise reads: "after it recovers no stale connection is handed out" (docs/design.md,
// Retire).
func noConnectionOnADownNode(r *modelRun) error {
	for _, v := range r.views {
		if r.tab.IsUp(v.Node) != (v.State == Up) {
			return fmt.Errorf("IsUp(%s) is %v while its state is %v", v.Addr(), r.tab.IsUp(v.Node), v.State)
		}
	}
	if p := r.tab.Pick(nil); p != nil {
		st := r.tab.State(p)
		r.tab.Release(p)
		if st != Up {
			return fmt.Errorf("Pick chose %s, which is %v", p.addr, st)
		}
	}
	for _, c := range r.conns {
		if c.retired || !r.tab.UpSince(c.node, c.epoch) {
			continue // the checkout refuses it (physical.Conn.enter)
		}
		if r.node(c.node.addr) != c.node {
			return fmt.Errorf("a connection of %s, which left the table, would be handed out", c.node.addr)
		}
		if st := r.tab.State(c.node); st != Up {
			return fmt.Errorf("a connection of %s, which is %v, would be handed out (its transition not handled yet)", c.node.addr, st)
		}
		if s := r.specOf(c.node); c.born < s.lastDownAt {
			return fmt.Errorf("a connection of %s opened before its latest down transition would be handed out (opened at epoch %d, node now at %d)",
				c.node.addr, c.epoch, c.node.Epoch())
		}
	}
	return nil
}

// panicOnlyWhenNoNodeIsUp: panic mode, a dial of a down node and its coming up without
// probes, starts only while no node takes connections (PanicPick returns nil otherwise, and a
// panic-mode success brings its node up only then). Source: panic.go's comment, PanicPick and
// PanicDialed. The transitions are checked in checkTransition, the picks in dial; this checks
// that a panic pick finds nothing while a node takes connections.
func panicOnlyWhenNoNodeIsUp(r *modelRun) error {
	if r.tab.Ups() == 0 {
		return nil
	}
	if p := r.tab.PanicPick(nil, r.clk.Now().Add(time.Hour)); p != nil {
		r.tab.PanicDialed(p, errModelProbe)
		r.tab.Release(p)
		return fmt.Errorf("PanicPick chose %s while %d nodes took connections", p.addr, r.tab.Ups())
	}
	return nil
}

// warmupWithinBounds: a node's warm-up progress stays within [0, 1], no further along than the
// time since a probe last brought it up allows, and its effective weight is its weight times
// max(warm-up, WarmupFloor), so between WarmupFloor of its weight and all of it. Source:
// Config.Warmup, weights.go.
func warmupWithinBounds(r *modelRun) error {
	now := r.clk.Now()
	for _, v := range r.views {
		if v.Warmth < 0 || v.Warmth > 1 {
			return fmt.Errorf("%s's warm-up is %v, outside [0, 1]", v.Addr(), v.Warmth)
		}
		want := float64(v.Weight) * max(v.Warmth, WarmupFloor)
		if math.Abs(v.Effective-want) > 1e-9 || v.Effective < WarmupFloor*float64(v.Weight)-1e-9 || v.Effective > float64(v.Weight)+1e-9 {
			return fmt.Errorf("%s's effective weight is %v at warm-up %v and weight %d", v.Addr(), v.Effective, v.Warmth, v.Weight)
		}
		s := r.specOf(v.Node)
		if !s.upByProbe.IsZero() && r.rules.Warmup > 0 {
			if limit := float64(now.Sub(s.upByProbe)) / float64(r.rules.Warmup); v.Warmth > limit+1e-9 {
				return fmt.Errorf("%s is %v warm %v after a probe brought it up, more than the %v the warm-up allows",
					v.Addr(), v.Warmth, now.Sub(s.upByProbe), min(limit, 1))
			}
		}
	}
	return nil
}

// countsAgree: the lock-free counts agree with the states: Ups is the number of nodes that take
// connections, UpNodes the number in state up, Total the connections the model holds open.
// Source: the doc comments of Ups, UpNodes and Total in counts.go.
func countsAgree(r *modelRun) error {
	ups, upNodes := 0, 0
	for _, v := range r.views {
		if r.takesConnections(v) {
			ups++
		}
		if v.State == Up {
			upNodes++
		}
	}
	if r.tab.Ups() != ups || r.tab.UpNodes() != upNodes || r.tab.Total() != int64(len(r.conns)) {
		return fmt.Errorf("Ups %d (want %d), UpNodes %d (want %d), Total %d (want %d)",
			r.tab.Ups(), ups, r.tab.UpNodes(), upNodes, r.tab.Total(), len(r.conns))
	}
	return nil
}

// modelKey hashes everything that decides what the table and the model do next: per node, in
// the table's order, its state and flags, its counters toward the rules, and every time it
// keeps as an age from now, clamped where an older time acts the same; the model's
// connections, queued transitions and its own records. Two runs with one key behave the same
// under every further sequence.
func (r *modelRun) modelKey(seed maphash.Seed) uint64 {
	now := r.clk.Now()
	age := func(t time.Time, limit time.Duration) int64 {
		if t.IsZero() {
			return -1
		}
		a := now.Sub(t)
		if a > limit {
			return -2
		}
		return int64(a)
	}
	buf := r.keyBuf[:0]
	if buf == nil {
		buf = make([]byte, 0, 1024)
	}
	w := func(vals ...int64) {
		for _, v := range vals {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
		}
	}
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	cfg := r.tab.cfg // the windows the table applies decide which ages act the same
	tab := r.tab
	tab.mu.Lock()
	index := func(n *Node[*payload]) int64 { return int64(slices.Index(modelAddrs[:], n.addr)) }
	w(int64(len(tab.order)), int64(len(tab.desired)), b2i(tab.desired != nil))
	for _, a := range tab.desired {
		w(int64(slices.Index(modelAddrs[:], a)))
	}
	for _, n := range tab.order {
		held := int64(-1)
		if n.ejected {
			held = max(int64(n.holdUntil.Sub(now)), 0)
		}
		upSince := int64(-1)
		if n.ejections > 0 {
			upSince = age(n.upSince, time.Duration(n.ejections)*EjectionDecay*cfg.BaseEjectionTime)
		}
		// The run of failed dials matters only while up (coming up clears it), the good probes
		// only while down (going down clears them, and the first then counts whenever it comes).
		dialFailures, goodProbes, lastGood := int64(-1), int64(-1), int64(-1)
		if n.state == Up {
			dialFailures = int64(min(n.dialFailures, DialFailuresToDown))
		}
		if n.state == Down && n.goodProbes > 0 {
			goodProbes, lastGood = int64(min(n.goodProbes, cfg.RecoverCount)), age(n.lastGood, cfg.recoverSpacing())
		}
		// Which node failed last (failSeq, the order of downs) decides only which node a panic
		// pick prefers; the model's picks name their node, so it is left out.
		w(index(n), int64(n.state), int64(n.role), b2i(n.standby), dialFailures, goodProbes, lastGood, b2i(n.everUp),
			int64(n.byOpen.Count()), int64(n.byInUse.Count()), b2i(n.byOpen.Indexed()), b2i(n.byInUse.Indexed()),
			int64(math.Float64bits(n.warmth)), age(n.warmFrom, cfg.Warmup), b2i(n.warmIdx >= 0),
			b2i(n.panicBusy), age(n.panicAt, cfg.PanicSpacing), age(n.recoveredAt, cfg.FlapWindow),
			b2i(n.suspect != ""), age(n.suspectAt, cfg.ProbeInterval), b2i(n.ejected), int64(n.ejections), held, upSince,
			int64(n.weight), b2i(n.lagging), b2i(n.refusedRead), b2i(n.refusedRead)*age(n.refusedAt, cfg.ProbeInterval),
			int64(len(n.fatalTimes)))
		for i := range n.fatalTimes {
			w(age(n.fatalTimes[(n.fatalNext+i)%len(n.fatalTimes)], cfg.FatalWindow))
		}
	}
	w(int64(tab.ejected), int64(tab.active))
	tab.mu.Unlock()
	// The model's own state: the listed nodes, the connections, the handler's queue and the
	// records the invariants read, each relative to its node.
	w(int64(len(r.listed)))
	for _, a := range r.listed {
		w(int64(slices.Index(modelAddrs[:], a)), b2i(r.standby[a]))
	}
	// A connection's epoch matters only against the Seqs it will meet: those of the queued
	// transitions and its node's latest markdown (every later transition's is above it).
	for _, c := range r.conns {
		s := r.specOf(c.node)
		w(index(c.node), b2i(r.node(c.node.addr) == c.node), b2i(c.epoch < c.node.downSeq.Load()), b2i(c.born < s.lastDownAt), b2i(c.retired))
	}
	w(int64(len(r.queue)))
	for _, q := range r.queue {
		w(index(q.x.Node), b2i(r.node(q.x.Node.addr) == q.x.Node), int64(q.x.To), int64(q.x.Cause), b2i(q.x.Forgot))
		for _, c := range r.conns {
			if c.node == q.x.Node {
				w(b2i(c.born < q.at), b2i(c.epoch < q.x.Seq))
			}
		}
	}
	for _, n := range r.tab.Nodes(nil) {
		s := r.specOf(n)
		goods, last, ejectedAt := int64(-1), int64(-1), int64(-1)
		if r.tab.State(n) == Down {
			goods, last, ejectedAt = int64(len(s.goods)), age(lastOf(s.goods), cfg.recoverSpacing()), age(s.ejectedAt, cfg.BaseEjectionTime)
		}
		w(b2i(s.everUp), goods, last, ejectedAt, age(s.upByProbe, max(cfg.Warmup, cfg.FlapWindow)))
	}
	r.keyBuf = buf
	return maphash.Bytes(seed, buf)
}

func lastOf(ts []time.Time) time.Time {
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[len(ts)-1]
}

// modelResult is what one search found.
type modelResult struct {
	states    int // distinct states reached (keys)
	sequences int // event sequences run to their end (each a distinct interleaving)
	depth     int // the depth searched
	violation *modelViolation
	trace     []event // the shortest sequence that broke it
}

// replay runs seq, which the search checked already, on a fresh table without checking it.
func replay(cfg, rules Config[*payload], seq []event) *modelRun {
	r := newModelRun(cfg, rules)
	for _, e := range seq {
		if !r.apply(e) {
			panic(fmt.Sprintf("replaying %v: the event could not happen", e))
		}
		r.check()
	}
	return r
}

// exploreModel searches every sequence of up to depth events breadth first, level by level,
// on GOMAXPROCS goroutines. For each state of the frontier a worker replays the sequence that
// reached it and tries each event on the result; an event that cannot happen changes nothing,
// so the next is tried on the same run. States are merged into the seen set between levels,
// so a violation found at one level has the fewest events there are, and among those the
// first in the frontier's order is reported.
func exploreModel(cfg, rules Config[*payload], depth int, evs []event) modelResult {
	// The runs allocate much and keep little: fewer collections make the search markedly
	// faster, most of all under the race detector, which pays for every freed range.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	seed := maphash.MakeSeed()
	res := modelResult{depth: depth}
	r0 := replay(cfg, rules, nil)
	r0.checking = true
	if v := r0.check(); v != nil {
		return modelResult{violation: v}
	}
	seen := map[uint64]bool{r0.modelKey(seed): true}
	frontier := [][]event{nil}
	workers := runtime.GOMAXPROCS(0)
	for d := 0; d < depth && len(frontier) > 0; d++ {
		type found struct {
			seq   []event
			key   uint64
			index int // in the frontier, for a deterministic order
		}
		var (
			wg       sync.WaitGroup
			next     atomic.Int64
			seqs     atomic.Int64
			children = make([][]found, workers)
			failures = make([]*found, workers)
			broken   = make([]*modelViolation, workers)
		)
		const chunk = 64
		for w := range workers {
			wg.Go(func() {
				local := map[uint64]bool{}
				for {
					start := int(next.Add(chunk)) - chunk
					if start >= len(frontier) || failures[w] != nil {
						return
					}
					for i := start; i < min(start+chunk, len(frontier)) && failures[w] == nil; i++ {
						seq := frontier[i]
						var r *modelRun
						for _, e := range evs {
							if r == nil {
								r = replay(cfg, rules, seq)
								r.checking = true
							}
							if !r.apply(e) {
								continue
							}
							seqs.Add(1)
							s := append(slices.Clip(seq), e)
							if v := r.check(); v != nil {
								failures[w], broken[w] = &found{seq: s, index: i}, v
								break
							}
							k := r.modelKey(seed)
							r = nil
							if seen[k] || local[k] {
								continue
							}
							local[k] = true
							children[w] = append(children[w], found{seq: s, key: k, index: i})
						}
					}
				}
			})
		}
		wg.Wait()
		res.sequences += int(seqs.Load())
		var first *found
		for w, f := range failures {
			if f != nil && (first == nil || f.index < first.index) {
				first, res.violation = f, broken[w]
			}
		}
		if first != nil {
			res.trace = first.seq
			break
		}
		var all []found
		for _, c := range children {
			all = append(all, c...)
		}
		slices.SortStableFunc(all, func(a, b found) int { return a.index - b.index })
		frontier = frontier[:0:0]
		for _, f := range all {
			if !seen[f.key] {
				seen[f.key] = true
				frontier = append(frontier, f.seq)
			}
		}
	}
	res.states = len(seen)
	return res
}

func formatTrace(seq []event) string {
	var b strings.Builder
	for i, e := range seq {
		fmt.Fprintf(&b, "\n  %d. %v", i+1, e)
	}
	return b.String()
}

// modelDepth is how deep the search goes over the core events and over all of them. The race
// detector slows the search about sixfold, so with it the search goes one event less deep:
//
//   - under -short, 5 and 4;
//   - by default, 6 and 4 (about 20 s on two cores), or 5 and 4 with -race (about 20 s);
//   - with the long runs on (LBD_TEST_LONG=1, testkit.LongEnv, which this package cannot import:
//     testkit imports the root package), 7 and 6 (a few minutes), or 6 and 5 with -race.
func modelDepth() (core, all int) {
	long := os.Getenv("LBD_TEST_LONG") == "1"
	switch {
	case testing.Short():
		return 5, 4
	case long && modelRace:
		return 6, 5
	case long:
		return 7, 6
	case modelRace:
		return 5, 4
	}
	return 6, 4
}

// modelFailure is the message of a search that found a violation: the invariant, what broke
// it, and the shortest sequence of events that does.
func modelFailure(res modelResult) string {
	return fmt.Sprintf("invariant %s broken after %d events: %s\nshortest sequence:%s",
		res.violation.invariant, len(res.trace), res.violation.detail, formatTrace(res.trace))
}

// TestModelNodeTable explores every sequence of table events up to modelDepth from two
// listed nodes and a third the source may add, and checks every invariant after every event.
func TestModelNodeTable(t *testing.T) {
	core, all := modelDepth()
	for _, tc := range []struct {
		name   string
		events []event
		depth  int
	}{
		{"core events", modelEvents(), core},
		{"all events", modelEventsAll(), all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			res := exploreModel(modelConfig(), modelConfig(), tc.depth, tc.events)
			if res.violation != nil {
				t.Fatal(modelFailure(res))
			}
			t.Logf("%d events, depth %d: %d distinct states, %d event sequences explored in %v",
				len(tc.events), res.depth, res.states, res.sequences, time.Since(began).Round(time.Millisecond))
		})
	}
}

// TestModelCatchesPastBugs brings back past bugs of lbd one at a time (bugs.go) and checks that
// the model checker finds each: the invariant it names, and a shortest sequence that shows it.
func TestModelCatchesPastBugs(t *testing.T) {
	core, _ := modelDepth()
	for _, tc := range []struct {
		name      string
		bug       *bool
		invariant string
		events    int         // the length of the shortest sequence that shows it
		without   []eventKind // events left out, to show the bug on one path
	}{
		{"recovery by two early probes after a markdown", &bugUnspacedRecovery, "RecoveryNeedsConfirmations", 3, nil},
		// Without failed probes and dials, the markdown is a fatal-error burst.
		{"recovery by two early probes after a fatal-error markdown", &bugUnspacedRecovery, "RecoveryNeedsConfirmations", 5,
			[]eventKind{evProbeFail, evDialFail}},
		{"checkout of a down node's idle connection before its transition is handled", &bugCheckoutIgnoresState, "NoConnectionOnADownNode", 2, nil},
		{"checkout after recovery of a connection opened before the markdown", &bugCheckoutIgnoresEpoch, "NoConnectionOnADownNode", 4, nil},
		{"removal of the last node taking connections", &bugRemovalCountsUpNotActive, "LastUpNodeNeverRemoved", 2, nil},
		{"a late down transition retiring connections opened since", &bugSeqlessTransitions, "RetireExactlyTheOlderConnections", 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*tc.bug = true
			defer func() { *tc.bug = false }()
			evs := slices.DeleteFunc(modelEvents(), func(e event) bool { return slices.Contains(tc.without, e.kind) })
			res := exploreModel(modelConfig(), modelConfig(), core, evs)
			if res.violation == nil {
				t.Fatalf("the checker found nothing in %d states and %d sequences", res.states, res.sequences)
			}
			msg := modelFailure(res)
			t.Logf("the checker reports:\n%s", msg)
			if res.violation.invariant != tc.invariant {
				t.Fatalf("invariant %s broken, want %s", res.violation.invariant, tc.invariant)
			}
			if len(res.trace) != tc.events {
				t.Errorf("shortest sequence of %d events, want %d", len(res.trace), tc.events)
			}
			if !strings.Contains(msg, "invariant "+tc.invariant+" broken") {
				t.Errorf("the message does not name the invariant %s", tc.invariant)
			}
			for i, e := range res.trace {
				if !strings.Contains(msg, fmt.Sprintf("%d. %v", i+1, e)) {
					t.Errorf("the message does not list event %d (%v)", i+1, e)
				}
			}
		})
	}
}

// TestModelInvariantsCatchAnotherRule judges the table by a rule it does not apply, for the
// invariants no past bug exercises, and checks that the checker reports that invariant: each
// of them can fail.
func TestModelInvariantsCatchAnotherRule(t *testing.T) {
	core, _ := modelDepth()
	for _, tc := range []struct {
		name      string
		rule      func(*Config[*payload])
		invariant string
		only      []eventKind // the kinds of events searched; nil: the core events
	}{
		{"three good probes to recover", func(c *Config[*payload]) { c.RecoverCount = 3 }, "RecoveryNeedsConfirmations", nil},
		// Five events deep: the search keeps to the events the hold is about.
		{"a longer ejection hold", func(c *Config[*payload]) { c.BaseEjectionTime = 4 * modelStep }, "RecoveryNeedsConfirmations",
			[]eventKind{evOutlier, evProbeOK, evAdvance}},
		{"an ejection cap of one node in three", func(c *Config[*payload]) { c.MaxEjectionPercent = 34 }, "EjectionsWithinCap", nil},
		{"a longer warm-up", func(c *Config[*payload]) { c.Warmup = 4 * modelStep }, "WarmupWithinBounds", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := modelConfig()
			tc.rule(&rules)
			evs := modelEvents()
			if tc.only != nil {
				evs = slices.DeleteFunc(evs, func(e event) bool { return !slices.Contains(tc.only, e.kind) })
			}
			res := exploreModel(modelConfig(), rules, core, evs)
			if res.violation == nil {
				t.Fatalf("the checker found nothing in %d states and %d sequences", res.states, res.sequences)
			}
			t.Logf("the checker reports:\n%s", modelFailure(res))
			if res.violation.invariant != tc.invariant {
				t.Fatalf("invariant %s broken, want %s", res.violation.invariant, tc.invariant)
			}
		})
	}
	// A panic-mode recovery while a node takes connections cannot happen in the table; the
	// check of it is run on such a transition directly.
	r := newModelRun(modelConfig(), modelConfig())
	a := r.node(modelAddrs[0])
	r.before = modelBefore{active: 1}
	v := r.checkTransition(Transition[*payload]{Node: a, From: Down, To: Up, Cause: CausePanic}, r.specOf(a), r.clk.Now())
	if v == nil || v.invariant != "PanicOnlyWhenNoNodeIsUp" {
		t.Fatalf("a panic-mode recovery while a node took connections: %v, want PanicOnlyWhenNoNodeIsUp broken", v)
	}
}
