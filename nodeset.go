package lbd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up. The additions are applied; the removals wait until one of the
// remaining nodes is up, so the application never loses its last working proxy to a bad list.
var ErrNoUpNodeLeft = errors.New("lbd: removal refused: it would leave no node up")

// errAwaitingProbe is the last error of a node added at run time until its first good probe.
var errAwaitingProbe = errors.New("added to the node list; waiting for its first good probe")

// SetNodes replaces the node list at run time. Nodes not known before are added in state down
// and take connections after one good probe; nodes no longer listed start draining: they take
// no new connection, their idle connections close at once and their in-use ones at return, and
// they leave Stats when their last connection closes. A list whose removals would leave no up
// node applies its additions only and returns an error wrapping ErrNoUpNodeLeft; the removals
// happen once one of the listed nodes is up. An empty or malformed list is an error and
// changes nothing.
func (c *Connector) SetNodes(addrs []string) error {
	return c.applyNodes(nodes.Set{Nodes: nodes.StaticAddrs(addrs...)})
}

// applyNodes is SetNodes for a whole set, whose nodes may be standby: probed, but taking no
// new connection (a config-server's AZ set while the client has fallen back to the default set).
func (c *Connector) applyNodes(set nodes.Set) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := set.Validate(); err != nil {
		return fmt.Errorf("lbd: node list not applied: %w", err)
	}
	c.applyMu.Lock() // one list at a time, so a node is never added and forgotten at once
	defer c.applyMu.Unlock()
	added, err := c.bal.setNodes(set.Canonical().Nodes, c.newNode)
	for _, n := range added {
		c.logger.Info("lbd: node added", "node", n.addr, "state", c.bal.state(n).String())
		c.startProbing(n)
		c.triggerProbe(n)
	}
	if err != nil {
		c.logger.Warn("lbd: node list not fully applied", "error", err.Error())
	}
	return err
}

// setNodes applies a whole new node list: new nodes are added first (down until one good
// probe), then nodes no longer listed start draining, unless that would leave no up node.
// newNode builds a node for an address; added returns the nodes the prober must start on.
func (b *balancer) setNodes(list []nodes.Node, newNode func(addr string) (*node, error)) (added []*node, err error) {
	var tr []transition
	b.mu.Lock()
	// With no node taking connections, new ones are trusted until a dial or probe says
	// otherwise, as the DSN's are at start-up: waiting for their first probe would fail every
	// Connect in between.
	trustNew := b.idx.Len() == 0
	desired := make([]string, 0, len(list))
	for _, want := range list {
		desired = append(desired, want.Addr)
		n, known := b.nodes[want.Addr]
		switch {
		case !known:
			if n, err = newNode(want.Addr); err != nil {
				b.mu.Unlock()
				b.emit(tr)
				return added, err
			}
			n.standby = want.Standby
			if trustNew && !want.Standby {
				b.addUpLocked(n)
			} else {
				n.state, n.everUp, n.lastErr = StateDown, false, errAwaitingProbe
				b.nodes[want.Addr] = n
				b.order = append(b.order, n)
			}
			added = append(added, n)
			continue
		case n.state == StateDraining:
			// Listed again before it drained: it keeps its counts and must pass one probe.
			n.everUp, n.goodProbes, n.lastErr = false, 0, errAwaitingProbe
			tr = append(tr, b.setStateLocked(n, StateDown, "listed again; waiting for a good probe"))
			added = append(added, n)
		}
		b.setStandbyLocked(n, want.Standby)
	}
	b.desired = desired
	more, err := b.applyRemovalsLocked()
	tr = append(tr, more...)
	b.mu.Unlock()
	b.emit(tr)
	return added, err
}

// setStandbyLocked moves an up node in or out of the pick index as its standby flag changes.
func (b *balancer) setStandbyLocked(n *node, standby bool) {
	if n.standby == standby {
		return
	}
	n.standby = standby
	if standby {
		b.unindexLocked(n)
	} else if n.state == StateUp {
		b.indexLocked(n)
	}
}

// applyDesiredLocked retries a removal that was refused earlier, once a node has come up.
func (b *balancer) applyDesiredLocked() []transition {
	if b.desired == nil {
		return nil
	}
	tr, _ := b.applyRemovalsLocked()
	return tr
}

// applyRemovalsLocked drains every node not in b.desired, unless none of the desired nodes is
// up and active; then it keeps b.desired for a later try and returns ErrNoUpNodeLeft.
func (b *balancer) applyRemovalsLocked() ([]transition, error) {
	want := make(map[string]bool, len(b.desired))
	for _, a := range b.desired {
		want[a] = true
	}
	var remove []*node
	upLeft := 0
	for _, n := range b.order {
		switch {
		case want[n.addr]:
			if n.state == StateUp && !n.standby {
				upLeft++
			}
		case n.state != StateDraining:
			remove = append(remove, n)
		}
	}
	if len(remove) == 0 {
		b.desired = nil
		return nil, nil
	}
	if upLeft == 0 {
		names := make([]string, len(remove))
		for i, n := range remove {
			names[i] = n.addr
		}
		return nil, fmt.Errorf("%w (kept for now: %s)", ErrNoUpNodeLeft, strings.Join(names, ", "))
	}
	var tr []transition
	for _, n := range remove {
		tr = append(tr, b.setStateLocked(n, StateDraining, "removed from the node list"))
		if n.open() == 0 {
			tr = append(tr, b.forgetLocked(n))
		}
	}
	b.desired = nil
	return tr, nil
}

// healthView shows node health to sources that follow it (nodes.HealthAware).
type healthView struct{ b *balancer }

// NodeHealth implements nodes.Health.
func (h healthView) NodeHealth(addr string) (up bool, goodProbes int, ok bool) {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	n, ok := h.b.nodes[addr]
	if !ok || n.state == StateDraining {
		return false, 0, false
	}
	return n.state == StateUp, n.goodProbes, true
}
