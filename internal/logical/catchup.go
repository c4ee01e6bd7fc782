package logical

import (
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/internal/physical"
)

// What causal reads learn of a replica's catching up from their waits there, kept in its
// physical.Replication (see awaitPosition). The rules are MaxScale's causal_reads=fast and
// ProxySQL's GTID causal reads, which send a read to a replica that has the write and to the
// primary otherwise, without waiting; lbd still waits where that costs little, and learns how
// long a replica takes from the waits themselves, with no query of its own.

// Bounds of the causal reads' waits.
const (
	// causalHold is how long a node's waits are held after one timed out, and how often a read
	// checks a node whose catch-up time sends reads to the primary.
	causalHold = time.Second
	// causalCheck is how long a check waits: it asks whether the replica has the position, it
	// does not wait for it (a timeout of 0 is no check on every server: MySQL's
	// WAIT_FOR_EXECUTED_GTID_SET then waits without end).
	causalCheck = time.Millisecond
	// causalBlockSlack is how much longer than twice its node's round trip a wait must take to
	// count as blocked: room for a busy host's scheduling.
	causalBlockSlack = 100 * time.Microsecond
	// measuring marks physical.Replication.Remeasure while the node's first check is under way.
	measuring = -1
)

// plan returns whether a read of a write age old, not proven on its connection, waits on the
// node of rep at now, whether that wait is a check (a wait of causalCheck), and for how long at
// most (never more than window, readAfterWriteMillis); a read that does not wait goes to the
// primary. A position too large to wait for (overflow) never waits.
//
//   - The node's first read checks it; until that ends the other reads go to the primary.
//   - While the node's waits are held after a timeout (HeldUntil), one read a causalHold checks.
//   - A write younger than the node's catch-up time would be waited for about that long: one
//     read a causalHold (Remeasure) checks, the others go to the primary.
//   - An older write waits at most twice the catch-up time: the replica should have it by then.
func plan(rep *physical.Replication, now time.Time, age, window time.Duration, overflow bool) (wait, check bool, limit time.Duration) {
	t := now.UnixNano()
	catchUp := time.Duration(rep.CatchUp.Load())
	switch measured := rep.Remeasure.Load(); {
	case overflow:
		return false, false, 0
	case rep.HeldUntil.Load() != 0:
		wait, check = once(&rep.HeldUntil, t), true
	case measured == 0:
		wait, check = rep.Remeasure.CompareAndSwap(0, measuring), true
	case measured == measuring:
		return false, false, 0
	case age < catchUp:
		wait, check = once(&rep.Remeasure, t), true
	default:
		return true, false, min(window, max(2*catchUp, causalCheck))
	}
	if !wait {
		return false, false, 0
	}
	return true, check, min(window, causalCheck)
}

// once reports whether a read may go ahead at now past a gate *at (Unix nanoseconds): every
// read while it is 0, none before the time it holds, and one once that time has passed, which
// moves the gate causalHold on.
func once(at *atomic.Int64, now int64) bool {
	until := at.Load()
	if until == 0 {
		return true
	}
	return now >= until && at.CompareAndSwap(until, now+int64(causalHold))
}

// reachedAfter records a wait on the node of rep that reached its position for a write age old
// and took took, the node's round trip being rtt. A check shows the replica had the write when
// it was age old: the catch-up time is at most that. A wait that blocked (it took more than
// twice rtt and causalBlockSlack) shows the replica needed that much more after the write: the
// catch-up time is the write's age and that. A wait answered at once shows the replica was
// there already: the catch-up time shrinks by an eighth. It stays within window; the node's
// waits are no longer held, and its next check is due a causalHold later.
func reachedAfter(rep *physical.Replication, now time.Time, took, age, rtt, window time.Duration, check bool) {
	old := time.Duration(rep.CatchUp.Load())
	next := old - old/8
	switch {
	case check:
		next = min(old, age)
	case took > 2*rtt+causalBlockSlack:
		next = age + took - rtt
	}
	rep.CatchUp.Store(int64(min(max(next, 0), window)))
	rep.HeldUntil.Store(0)
	rep.Remeasure.Store(now.Add(causalHold).UnixNano())
}

// missed records a wait (a check, when check) on the node of rep that did not reach its
// position for a write age old within took: the replica takes longer than that, so the
// catch-up time becomes at least age+took and at least doubles (within window). A wait that
// timed out also holds the node's waits for causalHold.
func missed(rep *physical.Replication, now time.Time, took, age, window time.Duration, check bool) {
	catchUp := time.Duration(rep.CatchUp.Load())
	next := now.Add(causalHold).UnixNano()
	if !check {
		rep.HeldUntil.Store(next)
	}
	rep.CatchUp.Store(int64(min(max(2*catchUp, age+took), window)))
	rep.Remeasure.Store(next)
}

// unanswered records a wait on the node of rep that got no answer (the connection failed, the
// caller gave up): it taught nothing, and a first check under way is none.
func unanswered(rep *physical.Replication) { rep.Remeasure.CompareAndSwap(measuring, 0) }
