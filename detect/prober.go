package detect

import (
	"container/heap"
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
	// probing the target, on one of its workers, after the last Probe of that
	// period of probing has returned and never during one; it is called even
	// if no probe ran. Its error is ignored.
	Close() error
}

// Pacer is implemented by a Target whose next probe may come sooner than Interval: a node
// that is down, whose return should be seen within a second, not a probe interval. After each
// probe of the target (scheduled or triggered) the prober asks it how long to wait before the
// next; a result that is not positive, or is above Interval, means Interval. It is called on
// the worker that ran the probe, after Report.
type Pacer interface {
	NextProbeIn() time.Duration
}

// DefaultMaxProbes is how many probes a Prober runs at once when ProberConfig.MaxProbes is
// zero: 64. The prober's goroutines are one per probe in flight plus one that keeps the
// schedule, so with the default a fleet of 3 nodes runs at most 4 and one of 50 000 nodes at
// most 65; the sockets its probes hold open at once are bounded the same way.
const DefaultMaxProbes = 64

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
	// context.WithTimeout when the probe starts, so that Probe implementations
	// can pass it on to network deadlines. It does not follow Clock.
	Timeout time.Duration
	// MaxProbes bounds how many probes run at once, whatever the number of
	// targets. A probe that comes due while MaxProbes others run waits for one
	// of them to end; probes asked for with Trigger go before scheduled ones.
	// A hung target holds a worker for at most Timeout, so a verdict on the
	// others is held back only while MaxProbes targets hang at once. Zero
	// means DefaultMaxProbes; negative values are rejected.
	MaxProbes int
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
	// Report is called on the worker that ran the probe, so calls for one
	// target are sequential while calls for different targets may run
	// concurrently. It must not block for long: the worker, and the next
	// probe of that target, wait for it. It may call Add, Remove and Trigger,
	// but not Close, which would wait for Report itself to return.
	//
	// Probes cut short because the target was removed or the prober closed
	// are not reported: they say nothing about the node. A Report already
	// under way when Remove is called may still be running after Remove
	// returns; none is running after Close returns.
	Report func(t Target, err error, took time.Duration)
}

// Prober health-checks a set of targets. Each target has its next probe time in one heap;
// one goroutine sleeps until the earliest and hands the targets that are due to a bounded set
// of workers (ProberConfig.MaxProbes), started as probes come due and kept, idle, until Close. A target whose probe hangs holds one worker until its timeout, never the others.
// Memory is one small record per target; no goroutine, timer or channel is kept per target.
//
// All methods are safe for concurrent use.
type Prober struct {
	interval time.Duration
	timeout  time.Duration
	maxRun   int
	clk      clock.Clock
	jitter   func(time.Duration) time.Duration
	report   func(Target, error, time.Duration)

	ctx    context.Context // base of every probe's context
	cancel context.CancelFunc
	wake   chan struct{}  // capacity 1: the earliest due time may have moved
	timer  clock.Timer    // the schedule's one timer; owned by keepSchedule
	wg     sync.WaitGroup // keepSchedule and the workers

	mu      sync.Mutex
	loops   map[Target]*probeLoop // current period of each target, running or winding down
	sched   loopHeap              // periods waiting for their next probe, earliest first
	urgent  []queued              // due at once (Trigger), oldest first; served before ready
	ready   []queued              // due by the schedule, oldest first
	cond    *sync.Cond            // on mu: wakes an idle worker
	workers int                   // worker goroutines
	idle    int                   // workers waiting on cond and not yet woken
	busy    int                   // workers holding a period (probing, reporting or closing it)
	parked  bool                  // keepSchedule waits, its timer set for sched's head
	closed  bool
}

// queued is a period's place in urgent or ready. A period triggered while it waits in ready
// moves to urgent: it gets a new seq there, and its entry in ready, whose seq no longer
// matches, is passed over.
type queued struct {
	l   *probeLoop
	seq uint32
}

// loopState is where a period of probing is: exactly one of these at any time.
type loopState uint8

const (
	loopScheduled loopState = iota // in sched, waiting for its due time
	loopQueued                     // in urgent or ready, waiting for a worker
	loopRunning                    // a worker holds it: probing, reporting or closing
	loopWaiting                    // added again while its previous period winds down (prev.next)
	loopDone                       // closed; forgotten
)

// probeLoop is one period of probing one target, from Add to Remove or Close. Its fields are
// guarded by Prober.mu.
type probeLoop struct {
	t         Target
	due       time.Time // when its next probe is due (loopScheduled, loopWaiting)
	index     int       // position in sched; -1 outside it
	state     loopState
	removed   bool               // Remove or Close came: close it, probe no more
	triggered bool               // an early probe is pending (Trigger)
	next      *probeLoop         // the period added again after this one, waiting for its end
	seq       uint32             // the seq of its live entry in urgent or ready (loopQueued)
	cancel    context.CancelFunc // ends the probe in flight; nil when none
}

// NewProber returns a Prober with no targets. It returns an error if
// cfg.Interval is not positive, cfg.Timeout or cfg.MaxProbes is negative or
// cfg.Report is nil.
func NewProber(cfg ProberConfig) (*Prober, error) {
	switch {
	case cfg.Interval <= 0:
		return nil, errors.New("detect: prober interval must be positive")
	case cfg.Timeout < 0:
		return nil, errors.New("detect: prober timeout must not be negative")
	case cfg.MaxProbes < 0:
		return nil, errors.New("detect: prober MaxProbes must not be negative (0 means DefaultMaxProbes)")
	case cfg.Report == nil:
		return nil, errors.New("detect: prober needs a Report function")
	}
	p := &Prober{
		interval: cfg.Interval,
		timeout:  cfg.Timeout,
		maxRun:   cfg.MaxProbes,
		clk:      cfg.Clock,
		jitter:   cfg.Jitter,
		report:   cfg.Report,
		loops:    make(map[Target]*probeLoop),
		wake:     make(chan struct{}, 1),
	}
	p.cond = sync.NewCond(&p.mu)
	if p.timeout == 0 || p.timeout > p.interval {
		p.timeout = p.interval
	}
	if p.maxRun == 0 {
		p.maxRun = DefaultMaxProbes
	}
	if p.clk == nil {
		p.clk = clock.Real
	}
	if p.jitter == nil {
		p.jitter = rand.N[time.Duration]
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.timer = p.clk.NewTimer(time.Hour)
	p.timer.Stop()
	p.wg.Add(1)
	go p.keepSchedule()
	return p, nil
}

// Add starts probing t: the first probe comes after a random delay below
// Interval (see ProberConfig.Jitter), then one every Interval, or sooner as
// t asks (Pacer). Adding a target that is already being probed, adding a nil
// target, and any Add after Close do nothing.
//
// If t was removed and its previous period is still finishing (a probe that
// has not yet returned, or t.Close still running), the new period waits for
// it, so probes of t never overlap and t.Close never overlaps a probe.
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
	l := &probeLoop{t: t, index: -1, due: p.clk.Now().Add(first)}
	p.loops[t] = l
	if prev != nil {
		l.state = loopWaiting
		prev.next = l
		return
	}
	p.scheduleLocked(l)
}

// Remove stops probing t. It does not wait: a probe in flight has its
// context cancelled, and t.Close then runs on a worker once that probe has
// returned (Prober.Close waits for it). Removing a target that is not being
// probed does nothing.
func (p *Prober) Remove(t Target) {
	if t == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.loops[t]; l != nil {
		p.removeLocked(l)
	}
}

func (p *Prober) removeLocked(l *probeLoop) {
	if l.removed {
		return
	}
	l.removed = true
	switch l.state {
	case loopScheduled:
		heap.Remove(&p.sched, l.index)
		p.enqueueLocked(l) // a worker closes it
	case loopRunning:
		if l.cancel != nil {
			l.cancel()
		}
	}
	// loopQueued: the worker that takes it closes it; loopWaiting: it is closed once the
	// period before it ends.
}

// Trigger asks for a probe of t now instead of at its next scheduled time.
// Requests are coalesced: however many arrive while a probe of t is running
// or already pending, they cause at most one extra probe. The next periodic
// probe is then scheduled Interval after the triggered one ends. A triggered
// probe waits for a free worker ahead of scheduled ones. Trigger never waits
// for a probe; for a target that is not being probed it does nothing.
func (p *Prober) Trigger(t Target) {
	if t == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.loops[t]
	if l == nil || l.removed || l.triggered {
		return
	}
	switch l.state {
	case loopScheduled:
		heap.Remove(&p.sched, l.index)
		l.triggered = true
		p.enqueueLocked(l)
	case loopQueued: // due by the schedule: it goes before the scheduled ones now
		l.triggered = true
		l.seq++
		p.urgent = append(p.urgent, queued{l, l.seq})
	case loopRunning, loopWaiting:
		l.triggered = true // probed again as soon as the worker, or the previous period, is done
	}
}

// Close stops probing every target, cancels the probes in flight and waits
// until every goroutine of the prober has finished, including every
// Target.Close call. Close is idempotent; it must not be called from Report.
func (p *Prober) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for _, l := range p.loops {
			p.removeLocked(l)
		}
		p.idle = 0
		p.cond.Broadcast() // idle workers close what is queued, then end
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// scheduleLocked puts l in the heap at l.due and wakes keepSchedule when l is now the earliest.
func (p *Prober) scheduleLocked(l *probeLoop) {
	l.state = loopScheduled
	heap.Push(&p.sched, l)
	if l.index == 0 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// enqueueLocked makes l wait for a worker: it wakes an idle one, or starts one when fewer
// workers are free than periods wait and fewer than MaxProbes run.
func (p *Prober) enqueueLocked(l *probeLoop) {
	l.state = loopQueued
	l.seq++
	if l.triggered || l.removed {
		p.urgent = append(p.urgent, queued{l, l.seq})
	} else {
		p.ready = append(p.ready, queued{l, l.seq})
	}
	switch {
	case p.idle > 0:
		p.idle--
		p.cond.Signal()
	case p.workers-p.busy < len(p.urgent)+len(p.ready) && p.workers < p.maxRun:
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
}

// dequeueLocked takes the period that has waited longest for a worker, triggered ones first;
// nil when none waits.
func (p *Prober) dequeueLocked() *probeLoop {
	for {
		q := &p.urgent
		if len(*q) == 0 {
			q = &p.ready
		}
		if len(*q) == 0 {
			p.urgent, p.ready = nil, nil // keep no burst's backing arrays
			return nil
		}
		e := (*q)[0]
		(*q)[0] = queued{}
		*q = (*q)[1:]
		if e.l.state == loopQueued && e.seq == e.l.seq {
			return e.l
		}
	}
}

// keepSchedule is the prober's one timer: it sleeps until the earliest due time, then queues
// every period that is due.
func (p *Prober) keepSchedule() {
	defer p.wg.Done()
	defer p.timer.Stop()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		now := p.clk.Now()
		for len(p.sched) > 0 && !p.sched[0].due.After(now) {
			p.enqueueLocked(heap.Pop(&p.sched).(*probeLoop))
		}
		if len(p.sched) > 0 {
			p.timer.Reset(p.sched[0].due.Sub(now))
		} else {
			p.timer.Stop()
		}
		p.parked = true
		p.mu.Unlock()
		select {
		case <-p.timer.C():
		case <-p.wake:
		case <-p.ctx.Done():
			return
		}
		p.mu.Lock()
		p.parked = false
		p.mu.Unlock()
	}
}

// work is one worker: it runs the queued periods' probes, and waits idle for more when none is
// queued, until Close. Workers are started as probes come due and only while every worker is
// busy, so there are never more than MaxProbes, nor more than the most probes ever due at once.
func (p *Prober) work() {
	defer p.wg.Done()
	p.mu.Lock()
	for {
		l := p.dequeueLocked()
		if l == nil {
			if p.closed {
				p.workers--
				p.mu.Unlock()
				return
			}
			p.idle++
			p.cond.Wait() // enqueueLocked or Close took this worker off idle
			continue
		}
		p.busy++
		l.state = loopRunning
		if l.removed {
			p.mu.Unlock()
			p.finish(l)
		} else {
			l.triggered = false
			ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
			l.cancel = cancel
			p.mu.Unlock()
			p.probe(l, ctx)
		}
		p.mu.Lock()
		p.busy--
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

// probe runs one probe of l.t, reports it unless the period was stopped meanwhile, and
// schedules the next.
func (p *Prober) probe(l *probeLoop, ctx context.Context) {
	start := p.clk.Now()
	err := l.t.Probe(ctx)
	took := p.clk.Now().Sub(start)
	p.mu.Lock()
	l.cancel()
	l.cancel = nil
	removed := l.removed
	p.mu.Unlock()
	if removed {
		p.finish(l)
		return
	}
	p.report(l.t, err, took)
	d := p.next(l.t)
	p.mu.Lock()
	switch {
	case l.removed:
		p.mu.Unlock()
		p.finish(l)
		return
	case l.triggered:
		p.enqueueLocked(l)
	default:
		l.due = p.clk.Now().Add(d)
		p.scheduleLocked(l)
	}
	p.mu.Unlock()
}

// finish closes the target and forgets the period; a period of the same target added since
// then starts.
func (p *Prober) finish(l *probeLoop) {
	_ = l.t.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	l.state = loopDone
	if p.loops[l.t] == l {
		delete(p.loops, l.t)
	}
	n := l.next
	l.next = nil
	switch {
	case n == nil:
	case n.removed || n.triggered:
		p.enqueueLocked(n)
	default:
		if now := p.clk.Now(); n.due.Before(now) {
			n.due = now
		}
		p.scheduleLocked(n)
	}
}

// loopHeap orders periods by due time (container/heap).
type loopHeap []*probeLoop

func (h loopHeap) Len() int           { return len(h) }
func (h loopHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h loopHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *loopHeap) Push(x any) {
	l := x.(*probeLoop)
	l.index = len(*h)
	*h = append(*h, l)
}
func (h *loopHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	l.index = -1
	*h = old[:len(old)-1]
	return l
}
