package health

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// report is the prober's Report: it hands a probe's verdict to the node table, as a confirming
// probe's when a passive signal asked for it, and drains a node that said it shuts down.
func (m *Monitor) report(t detect.Target, err error, took time.Duration) {
	pt := t.(*nodeProbe)
	pt.good = err == nil
	if errors.Is(err, physical.ErrNoCredentials) {
		// The probe never reached the node: no verdict on it.
		m.cfg.Logger.Warn("lbd: probe not run: no credentials for its dial", "node", pt.n.Addr(), "error", err.Error())
		return
	}
	if exception.ServerShutdown(err) || errors.Is(err, errStatusNotServing) {
		m.table.Shutdown(pt.n.tn, err)
	}
	if m.answeredMeanwhile(pt, err) {
		m.cfg.Logger.Warn("lbd: probe timed out while the node answered the application's statements; no verdict",
			"node", pt.n.Addr(), "took", took, "error", err.Error())
		m.table.Inconclusive(pt.n.tn, err, took)
		m.cfg.ObserveProbe(pt.n.Addr(), took, err)
		return
	}
	if pt.confirming {
		m.table.Confirmed(pt.n.tn, m.cfg.Clock.Now(), err, took)
	} else {
		m.table.Probed(pt.n.tn, m.cfg.Clock.Now(), err, took)
	}
	m.cfg.ObserveProbe(pt.n.Addr(), took, err)
}

// answeredMeanwhile reports whether a probe that failed with err is no verdict on its node: a
// scheduled probe of an up node that failed by timeout while the node answered the
// application's statements (its Flight.Landed moved during the probe) and is not stalled now
// (no statement of it in flight unanswered for the stall threshold). The node is busy, or its
// probes are held up somewhere its statements are not (a proxy's admin path, a full connection
// queue for new sessions), not dead: MaxScale keeps a busy server up, and ProxySQL keeps
// serving traffic over existing connections when its checks time out. A node that answers
// nothing is still taken out: its statements stall (the stall rule asks for a confirming probe,
// whose verdict stands), and with no statements on it its probes' failures count.
func (m *Monitor) answeredMeanwhile(pt *nodeProbe, err error) bool {
	n := pt.n
	if err == nil || !pt.timedOut || pt.confirming || m.table.StateNow(n.tn) != nodetable.Up {
		return false
	}
	f := &n.phys.Flight
	if f.Landed.Load() == pt.landed {
		return false
	}
	silent := m.cfg.Clock.Now().Sub(time.Unix(0, f.Progress.Load()))
	return f.Progress.Load() != 0 && silent < time.Duration(m.stallBase.Load())
}

// onTransition reacts to a node state change, on transitionLoop's goroutine, in the order the
// table made the changes: it is logged once, a down node's idle connections close at once (so
// no stale connection is handed out after it recovers) and its in-use ones at their next
// return; a draining node stops being probed. Checkouts do not wait for it: from the moment
// the table shows a node not up, a checkout of its connections answers driver.ErrBadConn.
func (m *Monitor) onTransition(t nodetable.Transition[*physical.Node]) {
	n := at(t.Node)
	if t.Forgot {
		m.cfg.Logger.Info("lbd: node drained and removed", "node", n.Addr())
		return
	}
	if t.Cause == nodetable.CauseRole {
		m.onRoleChange(n, t)
		return
	}
	if t.To == nodetable.Up {
		m.topo.changed()
	}
	level := slog.LevelInfo
	if t.To != nodetable.Up {
		level = slog.LevelWarn
	}
	m.cfg.Logger.Log(context.Background(), level, "lbd: node state changed",
		"node", n.Addr(), "from", t.From.String(), "to", t.To.String(), "cause", t.Cause.String(), "reason", t.Reason)
	switch t.To {
	case nodetable.Down:
		n.phys.RetireBefore(physical.NodeDown, t.Seq)
		if t.Cause != nodetable.CauseProbe {
			n.triggerProbe()
		}
	case nodetable.Draining:
		n.phys.RetireBefore(physical.NodeDraining, t.Seq)
		if t := n.probe.Swap(nil); t != nil && m.prober != nil {
			m.prober.Remove(t)
		}
	}
}

// transitionQueue carries the node table's transitions to one goroutine per Connector, which
// logs them and retires connections (onTransition), in the order the table made them. The
// goroutine of a statement that reported an error only queues; gRPC serialises balancer
// updates on one goroutine the same way. What a checkout must not hand out is decided by the
// table's state itself (nodetable's UpSince), not by this goroutine having caught up.
type transitionQueue struct {
	mu   sync.Mutex
	list []nodetable.Transition[*physical.Node] // queued, oldest first
	done bool                                   // the goroutine has ended: transitions are handled where they are made
	wake chan struct{}                          // one pending wake-up at most
}

// OnTransition is the table's OnTransition: the table delivers one at a time, in order, so
// appending here keeps that order. Config.Record is told at once, so that Stats agrees with the
// states it shows; the log line and the retiring follow on transitionLoop.
func (m *Monitor) OnTransition(t nodetable.Transition[*physical.Node]) {
	now := m.cfg.Clock.Now()
	if t.To == nodetable.Down && !t.Forgot {
		// Before the call that took the node down returns, and so before the probe it
		// asks for runs: that probe paces the next by it (NextProbeIn).
		at(t.Node).downAt.Store(now.UnixNano())
	}
	m.cfg.Record(now, t)
	q := &m.trq
	q.mu.Lock()
	if q.done { // after Close: late transitions (a probe finishing, a node drained) are still logged
		q.mu.Unlock()
		m.onTransition(t)
		return
	}
	q.list = append(q.list, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// transitionLoop hands queued transitions to onTransition until Close, then those left.
func (m *Monitor) transitionLoop() {
	defer m.loops.Done()
	q := &m.trq
	for {
		select {
		case <-q.wake:
		case <-m.cfg.Stop:
		}
		stopping := m.cfg.Closed()
		for {
			q.mu.Lock()
			if len(q.list) == 0 {
				q.list = nil // do not keep a burst's backing array
				if stopping {
					q.done = true
				}
				q.mu.Unlock()
				break
			}
			t := q.list[0]
			q.list[0] = nodetable.Transition[*physical.Node]{}
			q.list = q.list[1:]
			q.mu.Unlock()
			m.onTransition(t)
		}
		if stopping {
			return
		}
	}
}
