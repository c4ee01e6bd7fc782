package configserver

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultReloadInterval is the default of Config.ReloadInterval.
const DefaultReloadInterval = time.Second

// reloadTimeout bounds one coalesced read of the store. The backends bound their own reads
// (etcd by its dial timeout); this is the last word for one that does not.
const reloadTimeout = time.Minute

// errServerClosed answers a reload asked for after, or cut by, Server.Close.
var errServerClosed = errors.New("configserver: server closed")

// reloader coalesces reloads: however many callers ask, at most one read of the store runs at
// a time, two reads start at least interval apart, and every caller waits for a read that
// started after it asked (so an edit made before the call is always seen). Callers that arrive
// while a read is waiting or running share the next one.
type reloader struct {
	reload   func(context.Context) error
	interval time.Duration // minimum time between the starts of two reads; 0: none

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pending *reloadRound // the round callers join; nil when nobody waits
	running bool         // the loop goroutine is alive
	lastEnd time.Time    // when the latest read returned; the next starts at least interval later
	closed  bool
}

// reloadRound is one read of the store shared by its callers; err is set before done closes.
type reloadRound struct {
	done chan struct{}
	err  error
}

func newReloader(reload func(context.Context) error, interval time.Duration) *reloader {
	ctx, cancel := context.WithCancel(context.Background())
	return &reloader{reload: reload, interval: max(interval, 0), ctx: ctx, cancel: cancel}
}

// do asks for a read of the store that starts after this call and waits for its result, or for
// ctx to end (then it returns ctx's error; the read still happens for the others).
func (r *reloader) do(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errServerClosed
	}
	if r.pending == nil {
		r.pending = &reloadRound{done: make(chan struct{})}
	}
	round := r.pending
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop()
	}
	r.mu.Unlock()
	select {
	case <-round.done:
		return round.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop runs the pending rounds one after another, spaced by interval, and exits when none is
// left. Only one loop runs at a time (running).
func (r *reloader) loop() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		round := r.pending
		if round == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		if r.closed {
			r.mu.Unlock()
			r.finish(errServerClosed)
			return
		}
		if wait := r.interval - time.Since(r.lastEnd); wait > 0 && !r.lastEnd.IsZero() {
			r.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
				r.finish(errServerClosed)
				return
			}
			continue // callers arriving during the wait join the same round
		}
		r.pending = nil
		r.mu.Unlock()

		ctx, cancel := context.WithTimeout(r.ctx, reloadTimeout)
		err := r.reload(ctx)
		cancel()
		// Spacing from the end, not the start: the store's own view of when a read began is
		// never later than its end, so two reads are interval apart however late the store
		// notes a start.
		r.mu.Lock()
		r.lastEnd = time.Now()
		r.mu.Unlock()
		if err != nil && r.ctx.Err() != nil {
			err = errServerClosed
		}
		round.err = err
		close(round.done)
	}
}

// finish ends the pending round, if any, with err, and marks the loop stopped.
func (r *reloader) finish(err error) {
	r.mu.Lock()
	round := r.pending
	r.pending = nil
	r.running = false
	r.mu.Unlock()
	if round != nil {
		round.err = err
		close(round.done)
	}
}

// close cancels a waiting or running read, answers its callers with errServerClosed, refuses
// later calls and waits for the loop.
func (r *reloader) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.finish(errServerClosed) // a round no loop will run (none: the loop drains before it exits)
}
