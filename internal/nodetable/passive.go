package nodetable

import (
	"errors"
	"fmt"
	"time"
)

// Passive outlier detection (Envoy's outlier detection, gRPC's A50), in two steps:
//
//   - Suspect notes a signal the application's own statements gave against an up node (a lost
//     connection, a statement timeout, statements stalled on it while its peers answer) and
//     tells the caller whether to run a confirming probe now: only when an ejection would be
//     allowed, and once per signal (a second one within ProbeInterval waits for the answer).
//   - Confirmed takes that probe's answer. A good answer clears the suspicion and counts as a
//     good probe. A failure ejects the node (down, CausePassive), unless the cap says no: at
//     most MaxEjectionPercent of the active nodes, and at least one, may be passively ejected
//     at once, and never the last up node. The confirming probe runs under a deadline shorter
//     than a scheduled probe's, so a failure the cap refuses is not held against the node;
//     the scheduled probes still judge it.
//
// An ejected node comes back by the probe rules (Probed), and not before its hold has passed:
// BaseEjectionTime × its recent ejections, at most MaxEjectionTime. Each ejection adds one to
// that multiplier; each EjectionDecay × BaseEjectionTime the node stays up afterwards takes
// one off, so a node that keeps hanging stays out longer each time, and one that hung once
// is forgiven.

// MaxEjectionTime bounds how long a passive ejection holds a node down (Envoy's
// max_ejection_time default).
const MaxEjectionTime = 300 * time.Second

// EjectionDecay is how many base ejection times a node must stay up for one of its recent
// ejections to be forgiven.
const EjectionDecay = 10

// Suspect notes signal (words fit for a log line, naming what was seen) against n at now and
// reports whether the caller should run a confirming probe and hand its answer to Confirmed.
// It says no for a node that is not up and active, while an earlier signal still awaits its
// answer (for up to ProbeInterval), and when the cap allows no ejection.
func (t *Table[P]) Suspect(n *Node[P], now time.Time, signal string) bool {
	n.signals.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes[n.addr] != n || n.state != Up || n.standby || !t.mayEjectLocked() {
		return false
	}
	if n.suspect != "" && now.Sub(n.suspectAt) < t.cfg.ProbeInterval {
		return false
	}
	n.suspect, n.suspectAt = signal, now
	return true
}

// Confirmed records the answer of the probe a Suspect asked for: it ended at now, took took and
// failed with err (nil: good). A good answer counts as a good probe (see Probed).
func (t *Table[P]) Confirmed(n *Node[P], now time.Time, err error, took time.Duration) {
	if err == nil {
		t.mu.Lock()
		n.suspect = ""
		t.mu.Unlock()
		t.Probed(n, now, nil, took)
		return
	}
	countProbe(n, err, took)
	t.mu.Lock()
	signal := n.suspect
	n.suspect = ""
	if signal != "" && t.mayEjectNodeLocked(n) {
		t.ejectLocked(n, now, err, fmt.Sprintf("%s; confirming probe failed: %v", signal, err))
	}
	t.mu.Unlock()
	t.deliver()
}

// Inconclusive records a scheduled probe of n that took took and failed with err but is no
// verdict on n (its caller judged the failure the probe's, not the node's): it is counted as a
// failed probe, and n's state, its run of good probes and any suspicion awaiting a confirming
// probe are left alone.
func (t *Table[P]) Inconclusive(n *Node[P], err error, took time.Duration) {
	countProbe(n, err, took)
}

// Eject takes n out as an outlier on evidence from its statements' answers (words fit for a
// log line), without a confirming probe: for a proxy that fails the application's statements
// while its probe still passes. The cap, hold and back-off are a confirmed signal's. It reports
// whether n was ejected.
func (t *Table[P]) Eject(n *Node[P], now time.Time, evidence string) bool {
	n.signals.Add(1)
	t.mu.Lock()
	ok := t.mayEjectNodeLocked(n)
	if ok {
		t.ejectLocked(n, now, errors.New(evidence), evidence)
		n.failedAnswering = true // it warms up when it returns (SlowStartAfterDown)
	}
	t.mu.Unlock()
	t.deliver()
	return ok
}

// mayEjectNodeLocked reports whether n may be passively ejected now: still in the table, up,
// not a standby, and within the cap.
func (t *Table[P]) mayEjectNodeLocked(n *Node[P]) bool {
	return t.nodes[n.addr] == n && n.state == Up && !n.standby && t.mayEjectLocked()
}

// ejectLocked takes n down as a passive outlier for err: held down its base ejection time ×
// its recent ejections (less those forgiven by time up since), up to MaxEjectionTime.
func (t *Table[P]) ejectLocked(n *Node[P], now time.Time, err error, why string) {
	n.lastErr = err
	n.goodProbes = 0
	if !n.upSince.IsZero() && t.cfg.BaseEjectionTime > 0 {
		n.ejections -= int(now.Sub(n.upSince) / (EjectionDecay * t.cfg.BaseEjectionTime))
	}
	n.ejections = max(n.ejections, 0) + 1
	hold := min(time.Duration(n.ejections)*t.cfg.BaseEjectionTime, MaxEjectionTime)
	n.holdUntil = now.Add(hold)
	t.failedLocked(n)
	t.setStateLocked(n, Down, CausePassive, fmt.Sprintf("%s; held down %v (ejection %d)", why, hold, n.ejections))
	n.ejected = true
	t.ejected++
}

// mayEjectLocked reports whether one more node may be passively ejected now.
func (t *Table[P]) mayEjectLocked() bool {
	if t.cfg.MaxEjectionPercent == 0 {
		return false
	}
	up := t.active
	allowed := max(1, (up+t.ejected)*t.cfg.MaxEjectionPercent/100)
	return up > 1 && t.ejected < allowed
}

// heldLocked reports whether a passive ejection still holds n down at now.
func (t *Table[P]) heldLocked(n *Node[P], now time.Time) bool {
	return n.ejected && now.Before(n.holdUntil)
}

// endEjectionLocked is called as n leaves the down state: a passive ejection ends there.
func (t *Table[P]) endEjectionLocked(n *Node[P], to State, now time.Time) {
	if !n.ejected {
		return
	}
	n.ejected = false
	t.ejected--
	if to == Up && !now.IsZero() {
		n.upSince = now
	}
}
