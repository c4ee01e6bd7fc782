// Package budget bounds what lbd runs again on its own: a statement run once more after its
// node failed, a dial to a node marked down, a wait for a switchover to end. Each is a retry,
// and retries are what turn one broken proxy into an overloaded fleet when everything fails at
// once. The rule is Finagle's retry budget: over a sliding window, retries may be at most a
// share of the statements answered, plus a fixed number per second so that a quiet client can
// still retry.
//
// A Budget takes no I/O and no goroutine; its deposits come from a loop that already reads
// every node's counters, so a statement pays nothing for it.
package budget

import (
	"sync"
	"time"
)

// Window is how far back a Budget looks: Finagle's default of 10 seconds. Retries and
// statements older than that no longer count.
const Window = 10 * time.Second

// buckets is the window in one-second buckets.
const buckets = int(Window / time.Second)

// Budget is a retry budget. The zero value allows nothing; New makes a usable one. It is safe
// for concurrent use.
type Budget struct {
	percent   int64 // retries per 100 statements answered
	perSecond int64 // retries per second on top

	mu   sync.Mutex
	ring [buckets]bucket

	allowed, refused uint64 // guarded by mu
}

// bucket holds one second's counts.
type bucket struct {
	sec       int64 // Unix second the counts belong to
	answered  int64
	retries   int64
	populated bool
}

// New returns a budget allowing, over any Window, percent retries per 100 statements answered
// plus perSecond retries for each second of the window (Finagle: 20 and 10). Negative values
// count as zero.
func New(percent, perSecond int) *Budget {
	return &Budget{percent: int64(max(percent, 0)), perSecond: int64(max(perSecond, 0))}
}

// at returns the bucket of now's second, emptied if it held an older second.
func (b *Budget) at(now time.Time) *bucket {
	sec := now.Unix()
	k := &b.ring[int(uint64(sec)%uint64(buckets))]
	if !k.populated || k.sec != sec {
		*k = bucket{sec: sec, populated: true}
	}
	return k
}

// Deposit counts n statements answered at now.
func (b *Budget) Deposit(now time.Time, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.at(now).answered += n
	b.mu.Unlock()
}

// Allow takes one retry from the budget at now and reports whether there was one to take. A
// refusal is counted; so is each retry allowed.
func (b *Budget) Allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.at(now)
	var answered, retries int64
	for i := range b.ring {
		k := &b.ring[i]
		if k.populated && now.Unix()-k.sec < int64(buckets) {
			answered += k.answered
			retries += k.retries
		}
	}
	if retries >= answered*b.percent/100+b.perSecond*int64(buckets) {
		b.refused++
		return false
	}
	cur.retries++
	b.allowed++
	return true
}

// Refund gives back one retry that Allow took at about now and that did not happen (a retry
// taken just before a second's turn may be given back to the next second's bucket; a bucket
// never goes below zero).
func (b *Budget) Refund(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.at(now); k.retries > 0 {
		k.retries--
	}
	if b.allowed > 0 {
		b.allowed--
	}
}

// Counts returns the retries allowed and refused since the budget was made.
func (b *Budget) Counts() (allowed, refused uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allowed, b.refused
}
