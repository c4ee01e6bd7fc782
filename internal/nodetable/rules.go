package nodetable

import (
	"fmt"
	"math"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// The rules that move a node between states:
//
//   - dials: DialFailuresToDown consecutive failed dials take an up node down; a good dial
//     resets the run (Dialed). A dial refused with an answer every node would give (access
//     denied, unknown database) is counted and says nothing about the node (DialRefused).
//   - probes: a failed probe takes an up node down, however soon after the last probe;
//     RecoverCount consecutive good probes bring a down node up, one for a node added at run
//     time that has never been up (Probed). Only good probes since the node went down count,
//     and only those at least RecoverSpacing after the previous one counted: the early probes
//     a markdown asks for run back to back and must not pass for a recovery. Probes bring a
//     node up at most once per FlapWindow. A passively ejected node also waits out its hold
//     (see passive.go).
//   - passive signals: Suspect and Confirmed (see passive.go).
//   - fatal errors: FatalThreshold of them within FatalWindow take an up node down (Fatal).
//   - announced shutdown: one announcement takes an up node down and keeps panic mode off it
//     until probes bring it back up (Shutdown).
//   - panic mode: while no node takes connections, a dial of the least recently failed down
//     node that succeeds brings it up at once (PanicPick, PanicDialed).
//   - start-up trust: nodes listed at start, and nodes listed while no node takes connections,
//     start up until a dial or probe says otherwise (Start, SetNodes). They start warm.
//   - slow start: a node a probe brings up warms up over Config.Warmup when it was added at run
//     time or down for at least Config.SlowStartAfterDown (see weights.go).
//   - node-set changes: see SetNodes.

// Dialed records the outcome of a dial on n that was not refused with an answer every node
// would give (see DialRefused).
func (t *Table[P]) Dialed(n *Node[P], err error) {
	if err == nil {
		n.dials.Add(1)
	} else {
		n.dialsFailed.Add(1)
	}
	t.mu.Lock()
	if err == nil {
		n.dialFailures = 0
	} else {
		n.lastErr = err
		t.failedLocked(n)
		n.dialFailures++
		if n.panicIn { // served below the panic threshold: out until its next probe result
			n.panicFailed = true
			t.panicUnindexLocked(n)
		}
		if n.dialFailures >= DialFailuresToDown && n.state == Up {
			t.setStateLocked(n, Down, CauseDial,
				fmt.Sprintf("%d consecutive dial failures, last: %v", n.dialFailures, err))
		}
	}
	t.mu.Unlock()
	t.deliver()
}

// Shutdown records that n announced its shutdown (err says how: a 1053 answer, a status check):
// an up node goes down at once (CauseShutdown), whatever the dial, fatal-error and ejection
// thresholds, and a node already down stays so. Either way the node is drained, not dialed:
// its idle connections close, its connections in use close as they return, work in flight on
// them finishes, and panic mode never tries it, even when no other node is up, until probes
// bring it back up (a restarted server answers them). It is the drain HAProxy's "agent-check"
// drain and Envoy's health-check "draining" status give a server that says it is leaving.
func (t *Table[P]) Shutdown(n *Node[P], err error) {
	t.mu.Lock()
	if t.nodes[n.addr] == n {
		n.lastErr = err
		t.failedLocked(n)
		n.shutdown = true
		n.goodProbes = 0
		if n.state == Up {
			t.setStateLocked(n, Down, CauseShutdown, "announced shutdown: "+err.Error())
		}
		t.updatePanicLocked()
	}
	t.mu.Unlock()
	t.deliver()
}

// DialRefused counts a failed dial on n whose error every node would have given (access
// denied, unknown database): it is not held against the node.
func (t *Table[P]) DialRefused(n *Node[P]) { n.dialsFailed.Add(1) }

// Probed records one probe of n that ended at now, took took and ended with err (nil: good).
// A good probe less than RecoverSpacing after the previous good one that counted is run but
// not counted. A node no longer in the table (it drained) is counted but its state is left
// alone.
func (t *Table[P]) Probed(n *Node[P], now time.Time, err error, took time.Duration) {
	countProbe(n, err, took)
	t.mu.Lock()
	if t.nodes[n.addr] != n {
		t.mu.Unlock()
		return
	}
	if n.panicFailed {
		n.panicFailed = false
		if t.panicking && t.panicEligibleLocked(n) {
			t.panicIndexLocked(n)
		}
	}
	if err != nil {
		n.goodProbes = 0
		n.lastErr = err
		t.failedLocked(n)
		if n.state == Up {
			t.setStateLocked(n, Down, CauseProbe, "probe failed: "+err.Error())
		}
	} else if n.refusedRead && now.Sub(n.refusedAt) >= t.cfg.ProbeInterval {
		t.readsAgainLocked(n)
	}
	if n.state == Down && n.downFrom.IsZero() {
		n.downFrom = now // a markdown asks for a probe at once, so this is when it went down, or near it
	}
	if err == nil && (n.goodProbes == 0 || now.Sub(n.lastGood) >= t.recoverSpacing() || bugUnspacedRecovery) {
		n.goodProbes++
		n.lastGood = now
		need := t.cfg.RecoverCount
		if !n.everUp {
			need = 1
		}
		if n.state == Down && n.goodProbes >= need && !t.heldLocked(n, now) &&
			(n.recoveredAt.IsZero() || now.Sub(n.recoveredAt) >= t.cfg.FlapWindow) {
			n.recoveredAt = now
			// A node ejected for the errors it answered (Eject) failed the application's
			// statements while it passed its probes: it warms up again however short its
			// hold, so that a proxy failing under load takes load back gradually. A node
			// whose ejection a failed probe confirmed was unreachable, like any other outage.
			slow := !n.everUp || n.failedAnswering || t.cfg.SlowStartAfterDown <= 0 || now.Sub(n.downFrom) >= t.cfg.SlowStartAfterDown
			t.endEjectionLocked(n, Up, now)
			t.setStateLocked(n, Up, CauseProbe, goodProbesReason(n.goodProbes))
			if slow {
				t.startWarmupLocked(n, now)
			}
			t.applyDesiredLocked()
		}
	}
	t.mu.Unlock()
	t.deliver()
}

// recoverSpacing is Config.RecoverSpacing, ProbeInterval/2 when unset.
func (t *Table[P]) recoverSpacing() time.Duration { return t.cfg.recoverSpacing() }

func (c *Config[P]) recoverSpacing() time.Duration {
	if c.RecoverSpacing > 0 {
		return c.RecoverSpacing
	}
	return c.ProbeInterval / 2
}

func countProbe[P any](n *Node[P], err error, took time.Duration) {
	n.lastProbe.Store(int64(took))
	n.probes.Add(1)
	if err != nil {
		n.probesFailed.Add(1)
	}
}

func goodProbesReason(n int) string {
	if n == 1 {
		return "1 good probe"
	}
	return fmt.Sprintf("%d consecutive good probes", n)
}

// Fatal records an error the exception sorter judged fatal to a connection of n, seen at now.
// When FatalThreshold of them fell within FatalWindow, an up node goes down; the count then
// starts afresh, so one burst takes the node down once.
func (t *Table[P]) Fatal(n *Node[P], now time.Time, err error) {
	n.fatalErrors.Add(1)
	t.mu.Lock()
	t.failedLocked(n)
	if t.fatalBurstLocked(n, now) && n.state == Up && t.nodes[n.addr] == n {
		t.setStateLocked(n, Down, CauseFatal,
			fmt.Sprintf("%d fatal errors within %v, last: %v", t.cfg.FatalThreshold, t.cfg.FatalWindow, err))
	}
	t.mu.Unlock()
	t.deliver()
}

// fatalBurstLocked notes a fatal error at now in n's ring and reports whether FatalThreshold of
// them fell within FatalWindow; the ring is cleared when it does.
func (t *Table[P]) fatalBurstLocked(n *Node[P], now time.Time) bool {
	threshold := t.cfg.FatalThreshold
	if len(n.fatalTimes) != threshold {
		n.fatalTimes = make([]time.Time, threshold)
		n.fatalNext = 0
	}
	n.fatalTimes[n.fatalNext] = now
	n.fatalNext = (n.fatalNext + 1) % threshold
	oldest := n.fatalTimes[n.fatalNext] // the entry threshold-1 errors ago
	if oldest.IsZero() || now.Sub(oldest) > t.cfg.FatalWindow {
		return false
	}
	clear(n.fatalTimes)
	return true
}

// setStateLocked moves n to state to for cause, keeping the pick indexes in step, and queues
// the transition, to be delivered in order once the mutex is released (deliver).
func (t *Table[P]) setStateLocked(n *Node[P], to State, cause Cause, reason string) {
	from := n.state
	t.putStateLocked(n, to)
	if to != Down {
		t.endEjectionLocked(n, to, time.Time{})
	}
	if to == Down {
		n.goodProbes = 0 // recovery counts only the probes after this
	}
	if to == Up {
		n.everUp = true
		n.dialFailures = 0
		n.shutdown = false
		n.downFrom = time.Time{}
		n.failedAnswering = false
		if !n.standby {
			t.indexLocked(n)
		}
	} else {
		t.unindexLocked(n)
	}
	seq := n.transitions.Add(1)
	if to != Up {
		n.downSeq.Store(seq) // before the node can be up again: UpSince reads it after the state
	}
	n.transitionsBy[cause].Add(1)
	if bugSeqlessTransitions {
		seq = math.MaxUint64
	}
	t.queueLocked(Transition[P]{Node: n, From: from, To: to, Cause: cause, Reason: reason, RoleFrom: n.role, RoleTo: n.role, Seq: seq})
	if n.claimed == nodes.RolePrimary {
		t.electLocked(nil, "") // the writer may have changed
	}
	t.updatePanicLocked()
	if t.cfg.MinServingReplicas > 0 && n.role == nodes.RoleReplica {
		t.updateLagFloorLocked() // a replica came up or went down
	}
}

// forgetLocked drops a drained node from the table and queues its Forgot transition.
func (t *Table[P]) forgetLocked(n *Node[P]) {
	delete(t.nodes, n.addr)
	t.stopWarmupLocked(n)
	t.leaveGroupsLocked(n)
	for i, x := range t.order {
		if x == n {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	t.queueLocked(Transition[P]{Node: n, From: Draining, To: Draining, Cause: CauseNodeList, Reason: "drained", Forgot: true, RoleFrom: n.role, RoleTo: n.role})
}
