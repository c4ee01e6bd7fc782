package lbd

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up. The additions are applied; the removals wait until one of the
// remaining nodes is up, so the application never loses its last working proxy to a bad list.
var ErrNoUpNodeLeft = errors.New("lbd: removal refused: it would leave no node up")

// errAwaitingProbe is the last error of a node added at run time until its first good probe.
var errAwaitingProbe = errors.New("added to the node list; waiting for its first good probe")

// setNodes applies a whole new node list: new nodes are added first (down until one good
// probe), then nodes no longer listed start draining, unless that would leave no up node.
// newNode builds a node for an address; added returns the nodes the prober must start on.
func (b *balancer) setNodes(addrs []string, newNode func(addr string) (*node, error)) (added []*node, err error) {
	var tr []transition
	b.mu.Lock()
	for _, a := range addrs {
		n, known := b.nodes[a]
		switch {
		case !known:
			if n, err = newNode(a); err != nil {
				b.mu.Unlock()
				b.emit(tr)
				return added, err
			}
			n.state, n.everUp, n.lastErr = StateDown, false, errAwaitingProbe
			b.nodes[a] = n
			b.order = append(b.order, n)
			added = append(added, n)
		case n.state == StateDraining:
			// Listed again before it drained: it gets its old counts back and must pass one probe.
			n.everUp, n.goodProbes, n.lastErr = false, 0, errAwaitingProbe
			tr = append(tr, b.setStateLocked(n, StateDown, "listed again; waiting for a good probe"))
			added = append(added, n)
		}
	}
	b.desired = addrs
	more, err := b.applyRemovalsLocked()
	tr = append(tr, more...)
	b.mu.Unlock()
	b.emit(tr)
	return added, err
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
// up; then it keeps b.desired for a later try and returns ErrNoUpNodeLeft.
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
			if n.state == StateUp {
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
