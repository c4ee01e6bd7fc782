package lbd

import (
	"fmt"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/physical"
)

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
func (n *node) noteStatementError(err error) {
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
func (w *errorWatch) tick(now time.Time, nodes []*node, eject func(*node, string)) {
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
func (c *Connector) ejectForErrors(n *node, evidence string) {
	c.table.Eject(n.tn, c.cfg.clock.Now(), "error rate: "+evidence)
}
