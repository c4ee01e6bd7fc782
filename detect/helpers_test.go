package detect

import (
	"github.com/lbd-go/lbd/internal/testkit"

	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clock"
)

func TestMain(m *testing.M) {
	testkit.VerifyTestMain(m)
}

// fakeClock is a manual clock: time moves only when the test calls Advance.
// Its timers follow the Go 1.23 semantics: Stop and Reset discard a tick
// that was not yet received.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created int
}

type fakeTimer struct {
	c     *fakeClock
	ch    chan time.Time
	when  time.Time
	armed bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created++
	c.timers = append(c.timers, t)
	t.armLocked(d)
	return t
}

// Advance moves the clock forward by d, firing due timers in time order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.now.Add(d)
	for {
		var next *fakeTimer
		for _, t := range c.timers {
			if t.armed && !t.when.After(end) && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		c.now = next.when
		next.fireLocked()
	}
	c.now = end
}

// Armed returns how many timers are waiting to fire.
func (c *fakeClock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.armed {
			n++
		}
	}
	return n
}

// Created returns how many timers were ever made.
func (c *fakeClock) Created() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.created
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armed = false
	t.drainLocked()
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.armLocked(d)
}

func (t *fakeTimer) armLocked(d time.Duration) {
	t.drainLocked()
	if d <= 0 {
		t.armed = true
		t.when = t.c.now
		t.fireLocked()
		return
	}
	t.armed = true
	t.when = t.c.now.Add(d)
}

func (t *fakeTimer) fireLocked() {
	t.armed = false
	select {
	case t.ch <- t.c.now:
	default:
	}
}

func (t *fakeTimer) drainLocked() {
	select {
	case <-t.ch:
	default:
	}
}

// waitArmed waits until exactly n timers of c are waiting to fire, which in
// these tests means every loop is idle until the clock moves.
func waitArmed(t *testing.T, c *fakeClock, n int) {
	t.Helper()
	testkit.WaitFor(t, waitWithin, strconv.Itoa(n)+" armed timers", func() bool { return c.Armed() == n })
}

// quiet reports whether exactly n targets wait in p's schedule and nothing else moves until
// the clock does: no probe queued or running, the schedule's goroutine parked with its one
// timer set for the earliest of them and no tick or wake-up pending.
func (p *Prober) quiet(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sched) == n && len(p.urgent)+len(p.ready) == 0 && p.busy == 0 &&
		p.parked && len(p.wake) == 0 && len(p.timer.C()) == 0
}

// waitIdle waits until p is idle with n targets scheduled (see quiet).
func waitIdle(t *testing.T, p *Prober, n int) {
	t.Helper()
	testkit.WaitFor(t, waitWithin, strconv.Itoa(n)+" targets waiting for the clock", func() bool { return p.quiet(n) })
}

// goid returns the current goroutine's id, for checking which goroutine ran
// a callback.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("cannot parse goroutine id: " + err.Error())
	}
	return id
}

// waitWithin bounds every wait of these tests for a loop to react.
const waitWithin = 5 * time.Second
