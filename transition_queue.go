package lbd

import (
	"sync"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// transitionQueue carries the node table's transitions to one goroutine per Connector, which
// logs them and retires connections (onTransition), in the order the table made them. The
// goroutine of a statement that reported an error only queues; gRPC serialises balancer
// updates on one goroutine the same way. What a checkout must not hand out is decided by the
// table's state itself (nodetable's IsUp), not by this goroutine having caught up.
type transitionQueue struct {
	mu   sync.Mutex
	list []nodetable.Transition[*physical.Node] // queued, oldest first
	done bool                                   // the goroutine has ended: transitions are handled where they are made
	wake chan struct{}                          // one pending wake-up at most
}

// queueTransition is the table's OnTransition: the table delivers one at a time, in order, so
// appending here keeps that order. Stats.Recent lists the transition at once, so that it agrees
// with the states Stats shows; the log line and the retiring follow on transitionLoop.
func (c *Connector) queueTransition(t nodetable.Transition[*physical.Node]) {
	c.transitions.Add(Transition{At: c.cfg.clock.Now(), Node: t.Node.Payload().Addr(), From: NodeState(t.From),
		To: NodeState(t.To), Cause: TransitionCause(t.Cause), Reason: t.Reason, Removed: t.Forgot,
		RoleFrom: t.RoleFrom, RoleTo: t.RoleTo})
	q := &c.trq
	q.mu.Lock()
	if q.done { // after Close: late transitions (a probe finishing, a node drained) are still logged
		q.mu.Unlock()
		c.onTransition(t)
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
func (c *Connector) transitionLoop() {
	defer c.loops.Done()
	q := &c.trq
	for {
		select {
		case <-q.wake:
		case <-c.stop:
		}
		stopping := c.closed.Load()
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
			c.onTransition(t)
		}
		if stopping {
			return
		}
	}
}
