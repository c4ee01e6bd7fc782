// Package ring is a fixed-size, mutex-guarded ring of the latest values: lbd keeps its recent
// transitions in one, and the status page its connection samples.
package ring

import "sync"

// Ring keeps the latest Len values added, oldest first. The zero value is not usable; make one
// with New. It is safe for concurrent use.
type Ring[T any] struct {
	mu   sync.Mutex
	buf  []T
	next int // where the next value goes
	n    int // how many are kept, up to len(buf)
}

// New returns a ring keeping the latest size values; size must be positive.
func New[T any](size int) *Ring[T] { return &Ring[T]{buf: make([]T, size)} }

// Add keeps v, dropping the oldest value when the ring is full.
func (r *Ring[T]) Add(v T) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.mu.Unlock()
}

// List returns the kept values, oldest first, in a new slice.
func (r *Ring[T]) List() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, r.n)
	for i := range r.n {
		out = append(out, r.buf[(r.next-r.n+i+len(r.buf))%len(r.buf)])
	}
	return out
}
