package health

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/errtree"
	"github.com/lbd-go/lbd/internal/physical"
)

// Passive outlier detection: what the application's own statements see brings a proxy's probe
// forward, under a short deadline, and a failed answer ejects it (see internal/nodetable's
// Suspect and Confirmed, which also hold the cap and the back-off). Two signals:
//
//   - a statement's connection was lost (reset, EOF, broken pipe, i/o timeout);
//   - statements are in flight on a proxy and none has been answered for a while, although the
//     other proxies answer theirs: a hung proxy. "A while" is stallMultiple × the fleet's
//     typical statement latency, at least StallFloor.
//
// An error the server returned (duplicate key, syntax, lock wait timeout, …) is an answer, and
// never a signal against the proxy that carried it; nor is what the caller's own cancellation
// or deadline does to a connection (internal/physical never reports it).
//
// The per-statement cost is two atomic adds on the node's counters (flight.depart and
// flight.land); no lock, no allocation, no clock read. One loop per Connector (watchStalls)
// reads the counters every StallTick and does the rest.
const (
	// StallFloor is the shortest stall that counts: far beyond a healthy proxy's answer on a
	// LAN (milliseconds), short enough to take a hung proxy out within 0.3 s: a stall is seen
	// within StallFloor+StallTick, the confirming probe fails confirmFloor later.
	StallFloor = 100 * time.Millisecond
	// confirmFloor is the shortest deadline of a confirming probe (the stall threshold when
	// that is longer): a little longer than the stall itself, because the probe of a healthy
	// proxy under load waits behind its statements, and a probe that misses it ejects.
	confirmFloor = 150 * time.Millisecond
	// stallMultiple times the fleet's typical latency is a stall when that is above StallFloor:
	// a fleet of slow statements (reports, batch jobs) is not taken for hung.
	stallMultiple = 10
	// StallTick is how often the stall loop reads the counters.
	StallTick = 50 * time.Millisecond
	// stallBackoffMax bounds the doubling of a node's stall threshold after each signal that
	// a probe did not confirm (one long statement on an otherwise idle node).
	stallBackoffMax = 6
)

// passiveSignal names what err tells against the node that carried the statement, or returns
// "" when it tells nothing: a server's answer, an error lbd or database/sql produced before
// anything was sent.
func passiveSignal(err error) string {
	if err == nil || err == driver.ErrSkip || err == driver.ErrBadConn || physical.IsServerAnswer(err) || errors.Is(err, physical.ErrProtocol) {
		return ""
	}
	switch _, reason := exception.Classify(err); reason {
	case exception.ReasonConnReset, exception.ReasonEOF, exception.ReasonBrokenPipe, exception.ReasonConnAborted,
		exception.ReasonNetTimeout, exception.ReasonInvalidConn, exception.ReasonConnClosed:
		return fmt.Sprintf("connection lost on a statement (%s): %v", reason, err)
	}
	return ""
}

// onStatementError is told every error a statement on p returned, before the exception sorter
// judges it: a passive signal against p's node asks for a confirming probe.
func (m *Monitor) onStatementError(p *physical.Conn, err error) {
	if s := passiveSignal(err); s != "" {
		m.suspect(NodeOf(p.Node()), s)
	}
}

// suspect hands a passive signal to the node table and, when it asks for one, runs n's next
// probe at once as a confirming probe: under the stall threshold as its deadline.
func (m *Monitor) suspect(n *Node, signal string) {
	t := n.probe.Load()
	if t == nil || m.prober == nil || !n.mayProbeEarly() || !m.table.Suspect(n.tn, m.cfg.Clock.Now(), signal) {
		return
	}
	d := max(m.stallBase.Load(), int64(confirmFloor))
	if t.confirmRunning(time.Duration(d)) {
		return // the probe in flight confirms, under the confirming deadline from its start
	}
	t.confirm.Store(d)
	m.prober.Trigger(t)
}

// callerDeadline is told a statement whose caller's deadline passed while it ran on n. That
// is a passive signal only when n has been silent, with statements in flight, for the stall
// threshold: then n's own counters show it slow, whatever the caller's budget was. A statement
// cut by a short deadline, or by a cancellation, on a proxy that answers its statements is the
// caller's affair; and when no node answers while several have statements in flight (every
// statement slower than its callers' deadlines, or the database itself slow), no single proxy
// is at fault.
func (m *Monitor) callerDeadline(n *Node) {
	progress := n.phys.Flight.Progress.Load()
	if progress == 0 || m.allStuck.Load() {
		return
	}
	silent := m.cfg.Clock.Now().Sub(time.Unix(0, progress))
	if silent >= time.Duration(m.stallBase.Load()) {
		m.suspect(n, fmt.Sprintf("statement timeout, no answer from the proxy for %v", silent.Round(time.Millisecond)))
	}
}

// StallThreshold is the stall threshold now: the stall loop's latest, StallFloor before its
// first tick.
func (m *Monitor) StallThreshold() time.Duration { return time.Duration(m.stallBase.Load()) }

// stallThreshold is stallMultiple × latency, at least StallFloor.
func stallThreshold(latency time.Duration) time.Duration {
	return max(StallFloor, stallMultiple*latency)
}

// watchStalls is the stall loop: every StallTick it reads every node's flight counters and
// hands them to a stallWatch and to an errorWatch (below), then runs Config.Tick. It runs until
// Config.Stop is closed.
func (m *Monitor) watchStalls() {
	defer m.loops.Done()
	t := m.cfg.Clock.NewTimer(StallTick)
	defer t.Stop()
	w := stallWatch{last: m.cfg.Clock.Now()}
	var errs errorWatch
	var tns []*physical.TableNode
	var ns []*Node
	for {
		select {
		case <-m.cfg.Stop:
			return
		case <-t.C():
		}
		t.Reset(StallTick)
		tns = m.table.Nodes(tns[:0])
		ns = ns[:0]
		for _, tn := range tns {
			ns = append(ns, at(tn))
		}
		now := m.cfg.Clock.Now()
		m.stallBase.Store(int64(w.tick(now, ns, m.suspect)))
		m.allStuck.Store(w.allStuck)
		m.budget.Deposit(now, w.answered)
		errs.tick(now, ns, m.ejectForErrors)
		if m.cfg.Tick != nil {
			m.cfg.Tick(now)
		}
		clear(tns)
		clear(ns) // hold no node between ticks
	}
}

// stallWatch finds nodes whose statements stall while their peers answer. It belongs to the
// stall loop's goroutine, as do the stall* fields of each node's flight.
type stallWatch struct {
	latency time.Duration // moving average of the fleet's statement latency
	last    time.Time     // the previous tick
	// allStuck: at the last tick no node answered a statement and more than one had some in
	// flight: the database itself is slow, or every statement outlasts its caller's deadline.
	allStuck bool
	// answered is how many statements the nodes answered since the tick before: the retry
	// budget's deposit.
	answered int64
}

// tick reads the flight counters of nodes at now, updates the fleet's latency by Little's law
// (statements in flight × time / statements answered, over the nodes that answered any) and
// calls suspect for each node with statements in flight and none answered for the stall
// threshold, doubled for each earlier signal of the same stall, while another node answered.
// It returns the stall threshold.
func (w *stallWatch) tick(now time.Time, nodes []*Node, suspect func(*Node, string)) time.Duration {
	elapsed := now.Sub(w.last)
	w.last = now
	var inFlight, answered int64
	progressing, busy := 0, 0
	for _, n := range nodes {
		f := &n.phys.Flight
		k, l := f.InFlight.Load(), f.Landed.Load()
		if k > 0 {
			busy++
		}
		if l != f.StallLanded {
			progressing++
			inFlight += max(k, 0)
			answered += int64(l - f.StallLanded)
		}
		if l != f.StallLanded || k <= 0 || f.Progress.Load() == 0 {
			f.StallLanded, f.StallBackoff = l, 0
			f.Progress.Store(now.UnixNano())
		}
	}
	if answered > 0 && elapsed > 0 {
		sample := time.Duration(inFlight) * elapsed / time.Duration(answered)
		if w.latency == 0 {
			w.latency = sample
		} else {
			w.latency += (sample - w.latency) / 8
		}
	}
	w.answered = answered
	base := stallThreshold(w.latency)
	w.allStuck = progressing == 0 && busy > 1
	if progressing == 0 {
		return base // nobody answers: the database itself, or no load; not one proxy's fault
	}
	for _, n := range nodes {
		f := &n.phys.Flight
		stalled := now.Sub(time.Unix(0, f.Progress.Load()))
		if stalled < base<<f.StallBackoff {
			continue
		}
		f.StallBackoff = min(f.StallBackoff+1, stallBackoffMax)
		suspect(n, fmt.Sprintf("%d statements in flight and none answered for %v, while other proxies answer theirs",
			f.InFlight.Load(), stalled.Round(time.Millisecond)))
	}
	return base
}

// Error-rate outlier detection. A proxy that answers every statement with an error (a broken
// proxy's 1105, say) while its probe still passes finishes its statements fastest, so the least
// busy pick sends it more and more of them: in a test, half of all statements, every one a
// failure. Envoy ejects on consecutive errors and on failure percentage for the same reason;
// ingress-nginx fixed the same trap in its least-connections balancer.
//
// Every errorWindow the stall loop compares, per node, the statements the server answered and
// those it answered with an error that may be the node's own (not a not-primary refusal, which
// the role rules handle, nor an error every node answers alike). A node fails "far above the
// others" when, in two windows in a row, at least errorMinVolume of its statements were
// answered, at least errorMinFraction of them with errors, and the other nodes together
// answered at least errorMinVolume with an error fraction errorRatio times lower. It is then
// ejected as a passive outlier without a confirming probe (its probe passes: that is the
// trap), under the same cap, hold and back-off (nodetable's Eject). Application errors
// (duplicate keys, syntax, deadlocks) fall on every node alike and never make one an outlier;
// a database failing everywhere makes none either.
const (
	errorWindow      = 250 * time.Millisecond
	errorMinVolume   = 20
	errorMinFraction = 0.5
	errorRatio       = 5
	errorStrikes     = 2 // windows in a row
)

// noteStatementError counts an error the server answered on n that may be n's own.
func (n *Node) noteStatementError(err error) {
	if physical.IsServerAnswer(err) && !exception.NotPrimary(err) && !exception.SameOnEveryNode(err) {
		n.answeredErrors.Add(1)
	}
}

// errorWatch is the error-rate detector's state. It belongs to the stall loop's goroutine, as
// do the errWatch fields of each node.
type errorWatch struct {
	start    time.Time    // the current window's start
	readings []errReading // scratch: each node's counts over the window that just closed
}

// errReading is what one node's statements did over one window.
type errReading struct{ landed, failed uint64 }

// nodeErrWatch is one node's readings at the start of the current window, and its strikes.
type nodeErrWatch struct {
	landed, failed uint64
	strikes        int
}

// tick closes the window when errorWindow has passed since it opened, calls eject for each
// node whose errors stood far above the others' in errorStrikes windows in a row, and opens
// the next window.
func (w *errorWatch) tick(now time.Time, nodes []*Node, eject func(*Node, string)) {
	if w.start.IsZero() {
		w.start = now
		for _, n := range nodes {
			n.errWatch.landed, n.errWatch.failed = n.phys.Flight.Landed.Load(), n.answeredErrors.Load()
		}
		return
	}
	if now.Sub(w.start) < errorWindow {
		return
	}
	var total errReading
	readings := w.readings[:0]
	for _, n := range nodes {
		l, f := n.phys.Flight.Landed.Load(), n.answeredErrors.Load()
		// A node added during the window starts from zero; counters only grow.
		readings = append(readings, errReading{landed: l - min(l, n.errWatch.landed), failed: f - min(f, n.errWatch.failed)})
		i := len(readings) - 1
		n.errWatch.landed, n.errWatch.failed = l, f
		total.landed += readings[i].landed
		total.failed += readings[i].failed
	}
	for i, n := range nodes {
		r := readings[i]
		othersLanded, othersFailed := total.landed-r.landed, total.failed-r.failed
		far := r.landed >= errorMinVolume && othersLanded >= errorMinVolume &&
			float64(r.failed) >= errorMinFraction*float64(r.landed) &&
			float64(r.failed)*float64(othersLanded) >= errorRatio*float64(othersFailed)*float64(r.landed)
		if !far {
			n.errWatch.strikes = 0
			continue
		}
		n.errWatch.strikes++
		if n.errWatch.strikes >= errorStrikes {
			n.errWatch.strikes = 0
			eject(n, fmt.Sprintf("%d of its %d statements answered with errors in %v, the other proxies' %d of %d",
				r.failed, r.landed, now.Sub(w.start).Round(time.Millisecond), othersFailed, othersLanded))
		}
	}
	w.start, w.readings = now, readings
}

// ejectForErrors ejects n for its error rate (nodetable's Eject: capped, held, backed off).
func (m *Monitor) ejectForErrors(n *Node, evidence string) {
	m.table.Eject(n.tn, m.cfg.Clock.Now(), "error rate: "+evidence)
}

// onConnError is told every error a connection returns. A fatal error (per the exception
// sorter) retires the connection: database/sql drops it at its return, so it is never reused.
// FatalErrorThreshold fatal errors on one node within FatalErrorWindow take the node down and
// bring its probe forward.
//
// A protocol violation (ErrProtocol) is fatal whatever the sorter says.
func (m *Monitor) onConnError(p *physical.Conn, err error) {
	if !errors.Is(err, physical.ErrProtocol) && !m.cfg.Sorter.IsFatal(err) {
		return
	}
	p.MarkRetired(physical.Fatal)
	n := NodeOf(p.Node())
	now := m.cfg.Clock.Now()
	m.recent.add(err, n.Addr(), now)
	m.table.Fatal(n.tn, now, err)
	n.probeForTraffic()
}

// NodeOfError reports the node whose connection returned err (or an error err wraps) and had it
// judged fatal within the last FatalErrorWindow. Errors are matched by identity (==), so it
// answers for the very error value a caller got back; ok is false when no such error was
// recorded, or when the same value came from two nodes (sentinels such as
// mysql.ErrInvalidConn). ORM integrations use it to name the node in their logs.
func (m *Monitor) NodeOfError(err error) (addr string, ok bool) {
	return m.recent.lookup(err, m.cfg.Clock.Now().Add(-m.cfg.FatalWindow))
}

// recentFatal remembers the latest fatal errors and their nodes, a small ring.
type recentFatal struct {
	mu      sync.Mutex
	entries [64]fatalEntry
	next    int
}

type fatalEntry struct {
	err  error
	addr string
	at   time.Time
}

func (r *recentFatal) add(err error, addr string, at time.Time) {
	r.mu.Lock()
	r.entries[r.next] = fatalEntry{err: err, addr: addr, at: at}
	r.next = (r.next + 1) % len(r.entries)
	r.mu.Unlock()
}

func (r *recentFatal) lookup(err error, since time.Time) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := ""
	for _, e := range r.entries {
		if e.err == nil || e.at.Before(since) || !errtree.Contains(err, e.err) {
			continue
		}
		if found != "" && found != e.addr {
			return "", false
		}
		found = e.addr
	}
	return found, found != ""
}
