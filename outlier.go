package lbd

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/physical"
)

// Passive outlier detection: what the application's own statements see brings a proxy's probe
// forward, under a short deadline, and a failed answer ejects it (see internal/nodetable's
// Suspect and Confirmed, which also hold the cap and the back-off). Two signals:
//
//   - a statement's connection was lost (reset, EOF, broken pipe, i/o timeout);
//   - statements are in flight on a proxy and none has been answered for a while, although the
//     other proxies answer theirs: a hung proxy. "A while" is stallMultiple × the fleet's
//     typical statement latency, at least stallFloor.
//
// An error the server returned (duplicate key, syntax, lock wait timeout, …) is an answer, and
// never a signal against the proxy that carried it; nor is what the caller's own cancellation
// or deadline does to a connection (internal/physical never reports it).
//
// The per-statement cost is two atomic adds on the node's counters (flight.depart and
// flight.land); no lock, no allocation, no clock read. One loop per Connector (watchStalls)
// reads the counters every stallTick and does the rest.
const (
	// stallFloor is the shortest stall that counts: far beyond a healthy proxy's answer on a
	// LAN (milliseconds), short enough to take a hung proxy out within 0.3 s: a stall is seen
	// within stallFloor+stallTick, the confirming probe fails confirmFloor later.
	stallFloor = 100 * time.Millisecond
	// confirmFloor is the shortest deadline of a confirming probe (the stall threshold when
	// that is longer): a little longer than the stall itself, because the probe of a healthy
	// proxy under load waits behind its statements, and a probe that misses it ejects.
	confirmFloor = 150 * time.Millisecond
	// stallMultiple times the fleet's typical latency is a stall when that is above stallFloor:
	// a fleet of slow statements (reports, batch jobs) is not taken for hung.
	stallMultiple = 10
	// stallTick is how often the stall loop reads the counters.
	stallTick = 50 * time.Millisecond
	// stallBackoffMax bounds the doubling of a node's stall threshold after each signal that
	// a probe did not confirm (one long statement on an otherwise idle node).
	stallBackoffMax = 6
)

// passiveSignal names what err tells against the node that carried the statement, or returns
// "" when it tells nothing: a server's answer, an error lbd or database/sql produced before
// anything was sent.
func passiveSignal(err error) string {
	if err == nil || err == driver.ErrSkip || err == driver.ErrBadConn || physical.IsServerAnswer(err) || errors.Is(err, ErrProtocol) {
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
func (c *Connector) onStatementError(p *physical.Conn, err error) {
	if s := passiveSignal(err); s != "" {
		c.suspect(nodeOf(p.Node()), s)
	}
}

// suspect hands a passive signal to the node table and, when it asks for one, runs n's next
// probe at once as a confirming probe: under the stall threshold as its deadline.
func (c *Connector) suspect(n *node, signal string) {
	t := n.probe.Load()
	if t == nil || c.prober == nil || !n.mayProbeEarly() || !c.table.Suspect(n.tn, c.cfg.clock.Now(), signal) {
		return
	}
	d := max(c.stallBase.Load(), int64(confirmFloor))
	if t.confirmRunning(time.Duration(d)) {
		return // the probe in flight confirms, under the confirming deadline from its start
	}
	t.confirm.Store(d)
	c.prober.Trigger(t)
}

// callerDeadline is told a statement whose caller's deadline passed while it ran on n. That
// is a passive signal only when n has been silent, with statements in flight, for the stall
// threshold: then n's own counters show it slow, whatever the caller's budget was. A statement
// cut by a short deadline, or by a cancellation, on a proxy that answers its statements is the
// caller's affair; and when no node answers while several have statements in flight (every
// statement slower than its callers' deadlines, or the database itself slow), no single proxy
// is at fault.
func (c *Connector) callerDeadline(n *node) {
	progress := n.phys.Flight.Progress.Load()
	if progress == 0 || c.allStuck.Load() {
		return
	}
	silent := c.cfg.clock.Now().Sub(time.Unix(0, progress))
	if silent >= time.Duration(c.stallBase.Load()) {
		c.suspect(n, fmt.Sprintf("statement timeout, no answer from the proxy for %v", silent.Round(time.Millisecond)))
	}
}

// stallThreshold is stallMultiple × latency, at least stallFloor.
func stallThreshold(latency time.Duration) time.Duration {
	return max(stallFloor, stallMultiple*latency)
}

// watchStalls is the stall loop: every stallTick it reads every node's flight counters and
// hands them to a stallWatch and to an errorWatch (errorrate.go); in statement mode it also
// closes the idle surplus of physical connections (logical.Mode.TrimIdle). It runs until Close.
func (c *Connector) watchStalls() {
	defer c.loops.Done()
	t := c.cfg.clock.NewTimer(stallTick)
	defer t.Stop()
	w := stallWatch{last: c.cfg.clock.Now()}
	var errs errorWatch
	var tns []*tableNode
	var ns []*node
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
		t.Reset(stallTick)
		tns = c.table.Nodes(tns[:0])
		ns = ns[:0]
		for _, tn := range tns {
			ns = append(ns, at(tn))
		}
		now := c.cfg.clock.Now()
		c.stallBase.Store(int64(w.tick(now, ns, c.suspect)))
		c.allStuck.Store(w.allStuck)
		c.retryBudget.Deposit(now, w.answered)
		errs.tick(now, ns, c.ejectForErrors)
		if c.cfg.Balance == BalanceStatement {
			c.stmt.TrimIdle(now)
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
func (w *stallWatch) tick(now time.Time, nodes []*node, suspect func(*node, string)) time.Duration {
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
