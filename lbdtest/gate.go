package lbdtest

import "sync"

// gate blocks traffic while a proxy is hung. Its channel is closed while
// traffic may flow and open (never closed) while hung.
type gate struct {
	mu sync.Mutex
	ch chan struct{}
}

func newGate() *gate {
	ch := make(chan struct{})
	close(ch)
	return &gate{ch: ch}
}

// open returns a channel that is closed once traffic may flow.
func (g *gate) open() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}

// hang blocks traffic until release is called. It is a no-op when already
// hung.
func (g *gate) hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
		g.ch = make(chan struct{})
	default:
	}
}

// release lets traffic flow again. It is a no-op when not hung.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

// hung reports whether traffic is currently blocked.
func (g *gate) hung() bool {
	select {
	case <-g.open():
		return false
	default:
		return true
	}
}
