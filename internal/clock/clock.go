// Package clock is the seam between lbd's timed loops and real time, so that tests of the
// 5 s / 10 s loops can run in milliseconds or under full manual control.
package clock

import "time"

// Clock tells the time and makes timers. Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that lbd uses.
type Timer interface {
	// C is the channel on which the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped a pending timer.
	Stop() bool
	// Reset makes the timer fire after d, whether or not it had fired or been stopped.
	Reset(d time.Duration)
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
