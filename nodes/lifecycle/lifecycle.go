// Package lifecycle is the start-once, close-once bookkeeping the node sources share: Start
// may run once, Close at any time (before, during or after Start), and Close stops and waits
// for the one goroutine Start left running. A source registered with nodes.Register from
// another module can use it as lbd's own sources (nodes/etcd, nodes/dns) do.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// Loop is one source's lifecycle. Build it with New.
type Loop struct {
	// Ctx is done once Close is called: the source's goroutine and its fetches watch it.
	Ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	closed  bool
	done    chan struct{} // closed when the goroutine has returned; nil until it runs

	closeOnce sync.Once
}

// New returns a Loop that has not started.
func New() *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	return &Loop{Ctx: ctx, cancel: cancel}
}

// Begin claims the one Start. It returns errClosed after Close, and an error naming the
// source ("dns: Start called twice") on a second call.
func (l *Loop) Begin(name string, errClosed error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return errClosed
	case l.started:
		return errors.New(name + ": Start called twice")
	}
	l.started = true
	return nil
}

// Go runs setup, then loop on a goroutine of its own, unless Close came first: then it runs
// neither and returns false. What setup writes, loop and whatever runs after Close see.
func (l *Loop) Go(setup, loop func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	setup()
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		loop()
	}()
	return true
}

// Close cancels Ctx and waits for the goroutine. Only the first call does that; later ones
// return at once.
func (l *Loop) Close() {
	l.closeOnce.Do(func() {
		l.cancel()
		l.mu.Lock()
		l.closed = true
		done := l.done
		l.mu.Unlock()
		if done != nil {
			<-done
		}
	})
}
