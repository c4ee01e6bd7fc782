package detect

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lbd-go/lbd/internal/clock"
)

// Target is one node as the prober sees it.
//
// Targets are used as map keys, so the dynamic type of a Target must be
// comparable; a pointer type is the natural choice.
type Target interface {
	// Probe runs one health check and returns nil if the node is healthy.
	// ctx carries the probe timeout (see ProberConfig.Timeout) and is also
	// cancelled when the target is removed or the prober closes; Probe must
	// return soon after ctx is done. Probes of one target never overlap.
	Probe(ctx context.Context) error
	// Close releases whatever Probe keeps between calls, such as a dedicated
	// connection. The prober calls it exactly once per Add that started
	// probing the target, from the goroutine that ran Probe, after the last
	// Probe of that period of probing; it is called even if no probe ran.
	// Its error is ignored.
	Close() error
}

// Pacer is implemented by a Target whose next probe may come sooner than Interval: a node
// that is down, whose return should be seen within a second, not a probe interval. After each
// probe of the target (scheduled or triggered) the prober asks it how long to wait before the
// next; a result that is not positive, or is above Interval, means Interval. It is called from
// the target's own goroutine, after Report.
type Pacer interface {
	NextProbeIn() time.Duration
}

// ProberConfig configures a Prober.
type ProberConfig struct {
	// Interval is the time between the end of one probe of a target and the
	// start of the next. It must be greater than zero.
	Interval time.Duration
	// Timeout bounds one probe. Zero, or a value above Interval, means
	// Interval: a probe never runs longer than the interval. Negative values
	// are rejected.
	//
	// The timeout is a context deadline on real time, set with
	// context.WithTimeout, so that Probe implementations can pass it on to
	// network deadlines. It does not follow Clock.
	Timeout time.Duration
	// Clock schedules the probes and measures how long each took.
	// Nil means clock.Real.
	Clock clock.Clock
	// Jitter returns a random delay in [0, max) used to stagger the first
	// probe of each target, so that targets added together are not probed in
	// lockstep. Results outside [0, max] are clamped into it. It is called
	// once per successful Add, from Add, with the prober's lock held: it must
	// be quick and must not call the Prober. Nil means a uniform delay from
	// math/rand/v2.
	Jitter func(max time.Duration) time.Duration
	// Report receives the result of every completed probe (err == nil means
	// healthy) and how long the probe took on Clock. It is required.
	//
	// Report is called from the target's own goroutine, so calls for one
	// target are sequential while calls for different targets may run
	// concurrently. It must not block for long: the next probe of that
	// target waits for it. It may call Add, Remove and Trigger, but not
	// Close, which would wait for Report itself to return.
	//
	// Probes cut short because the target was removed or the prober closed
	// are not reported: they say nothing about the node. A Report already
	// under way when Remove is called may still be running after Remove
	// returns; none is running after Close returns.
	Report func(t Target, err error, took time.Duration)
}

// Prober health-checks a set of targets, each on its own goroutine, so a
// target whose probe hangs never delays the verdict on another.
//
// All methods are safe for concurrent use.
type Prober struct {
	interval time.Duration
	timeout  time.Duration
	clk      clock.Clock
	jitter   func(time.Duration) time.Duration
	report   func(Target, error, time.Duration)

	ctx    context.Context // base of every probe's context
	cancel context.CancelFunc

	mu     sync.Mutex
	loops  map[Target]*probeLoop // current loop of each target, running or winding down
	closed bool
	wg     sync.WaitGroup
}

// probeLoop is one period of probing one target, from Add to Remove or Close.
type probeLoop struct {
	t       Target
	ctx     context.Context
	cancel  context.CancelFunc
	trigger chan struct{} // capacity 1: a pending early probe
	prev    *probeLoop    // earlier loop of the same target that may still be winding down
	done    chan struct{} // closed once t.Close has returned
	removed bool          // guarded by Prober.mu
}

// NewProber returns a Prober with no targets. It returns an error if
// cfg.Interval is not positive, cfg.Timeout is negative or cfg.Report is
// nil.
func NewProber(cfg ProberConfig) (*Prober, error) {
	switch {
	case cfg.Interval <= 0:
		return nil, errors.New("detect: prober interval must be positive")
	case cfg.Timeout < 0:
		return nil, errors.New("detect: prober timeout must not be negative")
	case cfg.Report == nil:
		return nil, errors.New("detect: prober needs a Report function")
	}
	p := &Prober{
		interval: cfg.Interval,
		timeout:  cfg.Timeout,
		clk:      cfg.Clock,
		jitter:   cfg.Jitter,
		report:   cfg.Report,
		loops:    make(map[Target]*probeLoop),
	}
	if p.timeout == 0 || p.timeout > p.interval {
		p.timeout = p.interval
	}
	if p.clk == nil {
		p.clk = clock.Real
	}
	if p.jitter == nil {
		p.jitter = rand.N[time.Duration]
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Add starts probing t on a goroutine of its own: the first probe comes after
// a random delay below Interval (see ProberConfig.Jitter), then one every
// Interval, or sooner as t asks (Pacer). Adding a target that is already being probed, adding a nil
// target, and any Add after Close do nothing.
//
// If t was removed and its previous goroutine is still finishing (a probe
// that has not yet returned, or t.Close still running), the new goroutine
// waits for it, so probes of t never overlap and t.Close never overlaps a
// probe.
func (p *Prober) Add(t Target) {
	if t == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	prev := p.loops[t]
	if prev != nil && !prev.removed {
		return
	}
	first := min(max(p.jitter(p.interval), 0), p.interval)
	l := &probeLoop{
		t:       t,
		trigger: make(chan struct{}, 1),
		prev:    prev,
		done:    make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(p.ctx)
	p.loops[t] = l
	p.wg.Go(func() { p.run(l, first) })
}

// Remove stops probing t. It does not wait: a probe in flight has its
// context cancelled, and t.Close then runs on the target's goroutine once
// that probe has returned (Prober.Close waits for it). Removing a target
// that is not being probed does nothing.
func (p *Prober) Remove(t Target) {
	if t == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.loops[t]; l != nil && !l.removed {
		l.removed = true
		l.cancel()
	}
}

// Trigger asks for a probe of t now instead of at its next scheduled time.
// Requests are coalesced: however many arrive while a probe of t is running
// or already pending, they cause at most one extra probe. The next periodic
// probe is then scheduled Interval after the triggered one ends. Trigger
// never waits for a probe; for a target that is not being probed it does
// nothing.
func (p *Prober) Trigger(t Target) {
	if t == nil {
		return
	}
	p.mu.Lock()
	l := p.loops[t]
	if l != nil && l.removed {
		l = nil
	}
	p.mu.Unlock()
	if l == nil {
		return
	}
	select {
	case l.trigger <- struct{}{}:
	default: // one is already pending
	}
}

// Close stops probing every target, cancels the probes in flight and waits
// until every probe goroutine has finished, including every Target.Close
// call. Close is idempotent; it must not be called from Report.
func (p *Prober) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// run is the goroutine of one probing period of l.t.
func (p *Prober) run(l *probeLoop, first time.Duration) {
	defer p.finish(l)
	if l.prev != nil {
		// The previous goroutine's context is already cancelled, and Probe
		// must return soon after that, so this wait is short.
		<-l.prev.done
		l.prev = nil
	}

	timer := p.clk.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-timer.C():
		case <-l.trigger:
			if !timer.Stop() {
				// The timer fired at the same moment; drop its tick so it
				// does not cause a second probe right after this one.
				select {
				case <-timer.C():
				default:
				}
			}
		}
		if l.ctx.Err() != nil {
			return
		}
		p.probe(l)
		timer.Reset(p.next(l.t))
	}
}

// next is how long to wait before t's next scheduled probe: Interval, or sooner when t paces
// itself (Pacer).
func (p *Prober) next(t Target) time.Duration {
	if pt, ok := t.(Pacer); ok {
		if d := pt.NextProbeIn(); d > 0 && d < p.interval {
			return d
		}
	}
	return p.interval
}

// probe runs one probe of l.t and reports it unless the loop was stopped
// meanwhile.
func (p *Prober) probe(l *probeLoop) {
	ctx, cancel := context.WithTimeout(l.ctx, p.timeout)
	start := p.clk.Now()
	err := l.t.Probe(ctx)
	took := p.clk.Now().Sub(start)
	cancel()
	if l.ctx.Err() != nil {
		return
	}
	p.report(l.t, err, took)
}

// finish closes the target and forgets the loop; it runs on the loop's
// goroutine after its last probe.
func (p *Prober) finish(l *probeLoop) {
	l.cancel()
	_ = l.t.Close()
	p.mu.Lock()
	if p.loops[l.t] == l {
		delete(p.loops, l.t)
	}
	p.mu.Unlock()
	close(l.done)
}
