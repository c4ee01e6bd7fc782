// Package nodestest offers what the tests of a node source need: a Source that tests drive by
// hand, like gRPC's resolver/manual, and NoSecrets, a check that a value holding a secret
// prints without it.
package nodestest

import (
	"context"
	"errors"
	"sync"

	"github.com/lbd-go/lbd/nodes"
)

// Manual is a Source whose sets are pushed by the test. The zero value is not usable; build one
// with New.
type Manual struct {
	mu      sync.Mutex
	initial nodes.Set
	update  func(nodes.Set)
	started bool
	closed  bool
}

// New returns a Manual source whose Start returns initial.
func New(initial ...string) *Manual {
	return &Manual{initial: SetOf(initial...)}
}

// SetOf builds a set from addresses.
func SetOf(addrs ...string) nodes.Set {
	return nodes.Set{Nodes: nodes.StaticAddrs(addrs...)}
}

// Start implements nodes.Source.
func (m *Manual) Start(_ context.Context, update func(nodes.Set)) (nodes.Set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return nodes.Set{}, errors.New("nodestest: Start called twice")
	}
	if err := m.initial.Validate(); err != nil {
		return nodes.Set{}, err
	}
	m.started, m.update = true, update
	return m.initial, nil
}

// Push delivers a set to the Connector, as a real source would on a change. It returns an
// error before Start, after Close, or for an invalid set (which a real source would keep to
// itself).
func (m *Manual) Push(s nodes.Set) error {
	if err := s.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started || m.closed {
		return errors.New("nodestest: Push outside Start..Close")
	}
	m.update(s)
	return nil
}

// Close implements nodes.Source.
func (m *Manual) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

// Closed reports whether Close was called.
func (m *Manual) Closed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}
