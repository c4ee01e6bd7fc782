package detect

import (
	"github.com/lbd-go/lbd/internal/testkit"

	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// target is a scripted Target that records what the prober did with it.
type target struct {
	name  string
	probe func(ctx context.Context, n int) error // n counts probes from 1; nil means healthy

	mu       sync.Mutex
	events   []string // "probe", "done" and "close", in order
	probeGs  []uint64
	closeGs  []uint64
	inflight int32
	overlap  bool
}

func newTarget(name string, probe func(ctx context.Context, n int) error) *target {
	return &target{name: name, probe: probe}
}

func (t *target) String() string { return t.name }

func (t *target) Probe(ctx context.Context) error {
	if atomic.AddInt32(&t.inflight, 1) != 1 {
		t.setOverlap()
	}
	defer atomic.AddInt32(&t.inflight, -1)
	t.mu.Lock()
	t.events = append(t.events, "probe")
	t.probeGs = append(t.probeGs, goid())
	n := len(t.probeGs)
	t.mu.Unlock()
	var err error
	if t.probe != nil {
		err = t.probe(ctx, n)
	}
	t.mu.Lock()
	t.events = append(t.events, "done")
	t.mu.Unlock()
	return err
}

func (t *target) Close() error {
	if atomic.LoadInt32(&t.inflight) != 0 {
		t.setOverlap()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, "close")
	t.closeGs = append(t.closeGs, goid())
	return nil
}

func (t *target) setOverlap() {
	t.mu.Lock()
	t.overlap = true
	t.mu.Unlock()
}

func (t *target) probes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.probeGs)
}

func (t *target) closes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.closeGs)
}

func (t *target) log() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events)
}

// checkClean fails if probes of t overlapped each other or its Close.
func (t *target) checkClean(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overlap {
		tb.Errorf("%s: probes overlapped each other or Close: %v", t.name, t.events)
	}
}

type report struct {
	t    Target
	err  error
	took time.Duration
}

// reports records every Report call.
type reports struct {
	mu   sync.Mutex
	list []report
}

func (r *reports) add(t Target, err error, took time.Duration) {
	r.mu.Lock()
	r.list = append(r.list, report{t, err, took})
	r.mu.Unlock()
}

func (r *reports) all() []report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

func (r *reports) of(t Target) []report {
	var out []report
	for _, rep := range r.all() {
		if rep.t == t {
			out = append(out, rep)
		}
	}
	return out
}

// gate lets a test hold probes inside Probe and release them one by one.
type gate struct {
	entered chan int
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan int, 100), release: make(chan struct{})}
}

// probe blocks until released; it ignores ctx so tests can see that the
// prober does not wait for it.
func (g *gate) probe(_ context.Context, n int) error {
	g.entered <- n
	<-g.release
	return nil
}

func (g *gate) waitEntered(t *testing.T, want int) {
	t.Helper()
	select {
	case n := <-g.entered:
		if n != want {
			t.Fatalf("probe %d entered, want probe %d", n, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("probe %d never started", want)
	}
}

func zeroJitter(time.Duration) time.Duration { return 0 }

func mustProber(t *testing.T, cfg ProberConfig) *Prober {
	t.Helper()
	p, err := NewProber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestNewProberValidatesConfig(t *testing.T) {
	ok := func(Target, error, time.Duration) {}
	bad := []ProberConfig{
		{Interval: 0, Report: ok},
		{Interval: -time.Second, Report: ok},
		{Interval: time.Second, Timeout: -1, Report: ok},
		{Interval: time.Second},
	}
	for _, cfg := range bad {
		if p, err := NewProber(cfg); err == nil {
			p.Close()
			t.Errorf("NewProber(%+v) succeeded, want an error", cfg)
		}
	}
	for _, tc := range []struct{ timeout, want time.Duration }{
		{0, time.Second},
		{2 * time.Second, time.Second},
		{300 * time.Millisecond, 300 * time.Millisecond},
		{time.Second, time.Second},
	} {
		p, err := NewProber(ProberConfig{Interval: time.Second, Timeout: tc.timeout, Report: ok})
		if err != nil {
			t.Fatal(err)
		}
		if p.timeout != tc.want {
			t.Errorf("Timeout %v: effective timeout %v, want %v", tc.timeout, p.timeout, tc.want)
		}
		p.Close()
	}
}

func TestProberStaggersFirstProbes(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	var maxes []time.Duration
	delays := []time.Duration{0, 30 * time.Millisecond, 60 * time.Millisecond}
	p := mustProber(t, ProberConfig{
		Interval: 100 * time.Millisecond,
		Clock:    clk,
		Report:   rep.add,
		Jitter: func(max time.Duration) time.Duration {
			maxes = append(maxes, max) // called from Add, serially
			d := delays[0]
			delays = delays[1:]
			return d
		},
	})
	a, b, c := newTarget("a", nil), newTarget("b", nil), newTarget("c", nil)
	p.Add(a)
	p.Add(b)
	p.Add(c)
	p.Add(a) // already there: no second loop, no jitter drawn
	if want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}; !slices.Equal(maxes, want) {
		t.Fatalf("Jitter called with %v, want %v", maxes, want)
	}

	counts := func() [3]int { return [3]int{a.probes(), b.probes(), c.probes()} }
	step := func(d time.Duration, want [3]int) {
		t.Helper()
		clk.Advance(d)
		testkit.WaitFor(t, waitWithin, fmt.Sprint("probe counts ", want), func() bool { return counts() == want && p.quiet(3) })
	}
	step(0, [3]int{1, 0, 0})                    // a at 0
	step(29*time.Millisecond, [3]int{1, 0, 0})  // 29ms
	step(1*time.Millisecond, [3]int{1, 1, 0})   // b at 30
	step(30*time.Millisecond, [3]int{1, 1, 1})  // c at 60
	step(40*time.Millisecond, [3]int{2, 1, 1})  // a at 100
	step(30*time.Millisecond, [3]int{2, 2, 1})  // b at 130
	step(30*time.Millisecond, [3]int{2, 2, 2})  // c at 160
	step(100*time.Millisecond, [3]int{3, 3, 3}) // all three once more by 260
	if got := len(rep.all()); got != 9 {
		t.Fatalf("%d reports, want 9", got)
	}
}

func TestProberClampsJitter(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	jit := []time.Duration{-time.Hour, time.Hour}
	p := mustProber(t, ProberConfig{
		Interval: 100 * time.Millisecond,
		Clock:    clk,
		Report:   rep.add,
		Jitter: func(time.Duration) time.Duration {
			d := jit[0]
			jit = jit[1:]
			return d
		},
	})
	early, late := newTarget("early", nil), newTarget("late", nil)
	p.Add(early)
	p.Add(late)
	testkit.WaitFor(t, waitWithin, "negative jitter to mean now", func() bool { return early.probes() == 1 && p.quiet(2) })
	clk.Advance(100 * time.Millisecond)
	testkit.WaitFor(t, waitWithin, "huge jitter to mean one interval", func() bool {
		return early.probes() == 2 && late.probes() == 1 && p.quiet(2)
	})
}

func TestProberSchedulesFromEndOfProbe(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	g := newGate()
	slow := func(ctx context.Context, n int) error {
		if n == 2 {
			return g.probe(ctx, n)
		}
		return nil
	}
	p := mustProber(t, ProberConfig{Interval: 100 * time.Millisecond, Clock: clk, Report: rep.add, Jitter: zeroJitter})
	tg := newTarget("t", slow)
	p.Add(tg)
	testkit.WaitFor(t, waitWithin, "first probe", func() bool { return len(rep.all()) == 1 })
	waitIdle(t, p, 1)

	clk.Advance(99 * time.Millisecond)
	if n := tg.probes(); n != 1 {
		t.Fatalf("%d probes before the interval elapsed, want 1", n)
	}
	clk.Advance(time.Millisecond)
	g.waitEntered(t, 2)
	clk.Advance(30 * time.Millisecond) // the probe takes 30ms of clock time
	if n := clk.Armed(); n != 0 {
		t.Fatalf("%d timers armed during a probe, want 0", n)
	}
	g.release <- struct{}{}
	testkit.WaitFor(t, waitWithin, "second report", func() bool { return len(rep.all()) == 2 })
	if took := rep.all()[1].took; took != 30*time.Millisecond {
		t.Fatalf("second probe took %v, want 30ms", took)
	}
	waitIdle(t, p, 1)

	// The next probe is due one interval after the slow one ended (t=230ms),
	// not one interval after it started.
	clk.Advance(99 * time.Millisecond)
	if n := tg.probes(); n != 2 {
		t.Fatalf("%d probes 99ms after the slow probe ended, want 2", n)
	}
	clk.Advance(time.Millisecond)
	testkit.WaitFor(t, waitWithin, "third probe", func() bool { return len(rep.all()) == 3 })
}

func TestProberTriggerProbesNowAndReschedules(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	p := mustProber(t, ProberConfig{Interval: 100 * time.Millisecond, Clock: clk, Report: rep.add, Jitter: zeroJitter})
	tg := newTarget("t", nil)
	p.Add(tg)
	testkit.WaitFor(t, waitWithin, "first probe", func() bool { return tg.probes() == 1 })
	waitIdle(t, p, 1)

	clk.Advance(40 * time.Millisecond)
	p.Trigger(tg)
	testkit.WaitFor(t, waitWithin, "triggered probe", func() bool { return tg.probes() == 2 })
	waitIdle(t, p, 1)

	// The periodic probe that was due at 100ms has moved to 140ms.
	clk.Advance(60 * time.Millisecond)
	if n := tg.probes(); n != 2 {
		t.Fatalf("%d probes at 100ms, want 2: the schedule was not restarted by the trigger", n)
	}
	clk.Advance(39 * time.Millisecond)
	if n := tg.probes(); n != 2 {
		t.Fatalf("%d probes at 139ms, want 2", n)
	}
	clk.Advance(time.Millisecond)
	testkit.WaitFor(t, waitWithin, "periodic probe at 140ms", func() bool { return tg.probes() == 3 })
	waitIdle(t, p, 1)

	// Trigger during the staggering delay probes at once too.
	late := newTarget("late", nil)
	p.mu.Lock()
	p.jitter = func(time.Duration) time.Duration { return 50 * time.Millisecond }
	p.mu.Unlock()
	p.Add(late)
	waitIdle(t, p, 2)
	p.Trigger(late)
	testkit.WaitFor(t, waitWithin, "triggered first probe", func() bool { return late.probes() == 1 })

	// Triggering unknown or nil targets does nothing.
	p.Trigger(newTarget("stranger", nil))
	p.Trigger(nil)
	if got := len(rep.all()); got != 4 {
		t.Fatalf("%d reports, want 4", got)
	}
}

func TestProberTriggerCoalesces(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	g := newGate()
	p := mustProber(t, ProberConfig{Interval: 100 * time.Millisecond, Clock: clk, Report: rep.add, Jitter: zeroJitter})
	tg := newTarget("t", g.probe)
	p.Add(tg)
	g.waitEntered(t, 1)
	g.release <- struct{}{}
	waitIdle(t, p, 1)

	p.Trigger(tg)
	g.waitEntered(t, 2)
	start := time.Now()
	for range 100 {
		p.Trigger(tg) // never blocks, although the probe is stuck
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("100 triggers took %v", d)
	}
	g.release <- struct{}{}

	// Exactly one extra probe follows, and once it has started nothing else
	// is pending.
	g.waitEntered(t, 3)
	p.mu.Lock()
	pending := p.loops[tg].triggered
	p.mu.Unlock()
	if pending {
		t.Fatal("a trigger is still pending after the extra probe started")
	}
	g.release <- struct{}{}
	waitIdle(t, p, 1)
	if n := tg.probes(); n != 3 {
		t.Fatalf("%d probes, want 3 (one periodic, one triggered, one coalesced extra)", n)
	}

	clk.Advance(100 * time.Millisecond)
	g.waitEntered(t, 4)
	g.release <- struct{}{}
	testkit.WaitFor(t, waitWithin, "four reports", func() bool { return len(rep.all()) == 4 })
}

// TestProberHungTargetDoesNotDelayOthers runs on real time. The probe
// timeout cannot exceed the interval, so the hung target's first probe is
// staggered instead: it starts at 100ms and times out at 300ms, while the
// fast target is probed at 0ms and 200ms.
func TestProberHungTargetDoesNotDelayOthers(t *testing.T) {
	var rep reports
	delays := []time.Duration{0, 100 * time.Millisecond, 199 * time.Millisecond}
	p := mustProber(t, ProberConfig{
		Interval: 200 * time.Millisecond,
		Report:   rep.add,
		Jitter: func(time.Duration) time.Duration {
			d := delays[0]
			delays = delays[1:]
			return d
		},
	})
	entered := make(chan struct{}, 10)
	hung := newTarget("hung", func(ctx context.Context, _ int) error {
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	refused := errors.New("connection refused")
	fast := newTarget("fast", func(context.Context, int) error { return refused })
	spare := newTarget("spare", nil)
	p.Add(fast)
	p.Add(hung)
	p.Add(spare)

	// While the hung probe is stuck, an early probe of another target is
	// answered at once.
	<-entered
	p.Trigger(spare)
	testkit.WaitFor(t, waitWithin, "the triggered probe", func() bool { return len(rep.of(spare)) > 0 })
	if n := len(rep.of(hung)); n != 0 {
		t.Fatalf("hung target reported before its timeout")
	}

	testkit.WaitFor(t, waitWithin, "the hung target's verdict", func() bool { return len(rep.of(hung)) > 0 })
	fastBefore := 0
	for _, r := range rep.all() {
		if r.t == hung {
			break
		}
		if r.t == fast {
			if !errors.Is(r.err, refused) {
				t.Fatalf("unexpected report %+v", r)
			}
			fastBefore++
		}
	}
	if fastBefore < 2 {
		t.Fatalf("fast target reported %d times before the hung one, want at least 2", fastBefore)
	}
	first := rep.of(hung)[0]
	if !errors.Is(first.err, context.DeadlineExceeded) {
		t.Fatalf("hung target reported %v, want a deadline error", first.err)
	}
	if first.took < 190*time.Millisecond || first.took > 5*time.Second {
		t.Fatalf("hung probe took %v, want about the 200ms timeout", first.took)
	}
	if fr := rep.of(fast)[0]; fr.took > 100*time.Millisecond {
		t.Fatalf("fast probe took %v", fr.took)
	}
}

func TestProberTimeoutIsADeadlineNoLongerThanInterval(t *testing.T) {
	var rep reports
	p := mustProber(t, ProberConfig{Interval: 80 * time.Millisecond, Timeout: time.Hour, Report: rep.add, Jitter: zeroJitter})
	var left atomic.Int64
	tg := newTarget("t", func(ctx context.Context, _ int) error {
		dl, ok := ctx.Deadline()
		if !ok {
			return errors.New("no deadline")
		}
		left.Store(int64(time.Until(dl)))
		return nil
	})
	p.Add(tg)
	testkit.WaitFor(t, waitWithin, "a report", func() bool { return len(rep.all()) > 0 })
	if err := rep.all()[0].err; err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(left.Load()); d <= 0 || d > 80*time.Millisecond {
		t.Fatalf("probe deadline %v away, want within the 80ms interval", d)
	}
}

func TestProberRemoveClosesAfterLastProbe(t *testing.T) {
	var rep reports
	p := mustProber(t, ProberConfig{Interval: 20 * time.Millisecond, Report: rep.add})
	tg := newTarget("t", nil)
	other := newTarget("other", nil)
	p.Add(tg)
	p.Add(other)
	testkit.WaitFor(t, waitWithin, "a few probes", func() bool { return tg.probes() >= 2 })

	p.Remove(tg)
	testkit.WaitFor(t, waitWithin, "Close", func() bool { return tg.closes() == 1 })
	p.Remove(tg) // unknown now: nothing happens
	p.Trigger(tg)

	if ev := tg.log(); ev[len(ev)-1] != "close" {
		t.Fatalf("events after Close: %v", ev)
	}

	// The other target goes on, and is closed by Close; tg is not closed again.
	before := other.probes()
	testkit.WaitFor(t, waitWithin, "the other target to keep going", func() bool { return other.probes() > before })
	p.Close()
	if tg.closes() != 1 || other.closes() != 1 {
		t.Fatalf("Close counts %d and %d, want 1 and 1", tg.closes(), other.closes())
	}
	tg.checkClean(t)
	other.checkClean(t)
	testkit.VerifyNone(t)
}

func TestProberRemoveDoesNotWaitForProbe(t *testing.T) {
	var rep reports
	g := newGate()
	var seen atomic.Value
	p := mustProber(t, ProberConfig{Interval: time.Hour, Report: rep.add, Jitter: zeroJitter})
	tg := newTarget("t", func(ctx context.Context, n int) error {
		err := g.probe(ctx, n)
		seen.Store(fmt.Sprint(ctx.Err()))
		return err
	})
	p.Add(tg)
	g.waitEntered(t, 1)

	removed := make(chan struct{})
	go func() {
		p.Remove(tg)
		close(removed)
	}()
	select {
	case <-removed:
	case <-time.After(5 * time.Second):
		t.Fatal("Remove waited for a probe in flight")
	}
	if tg.closes() != 0 {
		t.Fatal("Close ran while Probe was still running")
	}
	close(g.release)
	testkit.WaitFor(t, waitWithin, "Close after the probe returned", func() bool { return tg.closes() == 1 })
	if got := seen.Load(); got != context.Canceled.Error() {
		t.Fatalf("probe context ended with %v, want cancellation", got)
	}
	if n := len(rep.all()); n != 0 {
		t.Fatalf("%d reports for a probe cut short by Remove, want 0", n)
	}
	tg.checkClean(t)
}

func TestProberReAddWaitsForPreviousPeriod(t *testing.T) {
	var rep reports
	g := newGate()
	p := mustProber(t, ProberConfig{Interval: time.Hour, Report: rep.add, Jitter: zeroJitter})
	tg := newTarget("t", func(ctx context.Context, n int) error {
		if n == 1 {
			return g.probe(ctx, n)
		}
		return nil
	})
	p.Add(tg)
	g.waitEntered(t, 1)
	p.Remove(tg)
	p.Add(tg) // while the first probe is still stuck
	p.Add(tg) // and a duplicate of the new one
	close(g.release)

	testkit.WaitFor(t, waitWithin, "the second period's first probe", func() bool { return len(rep.all()) == 1 })
	p.Close()
	want := []string{"probe", "done", "close", "probe", "done", "close"}
	if got := tg.log(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	tg.checkClean(t)
}

func TestProberCloseWaitsAndLeavesNoGoroutine(t *testing.T) {
	var rep reports
	p, err := NewProber(ProberConfig{Interval: 10 * time.Millisecond, Report: rep.add})
	if err != nil {
		t.Fatal(err)
	}
	var targets []*target
	for i := range 5 {
		tg := newTarget(fmt.Sprint("t", i), nil)
		targets = append(targets, tg)
		p.Add(tg)
	}
	testkit.WaitFor(t, waitWithin, "every target probed twice", func() bool {
		for _, tg := range targets {
			if tg.probes() < 2 {
				return false
			}
		}
		return true
	})
	p.Close()
	testkit.VerifyNone(t)
	n := len(rep.all())
	for _, tg := range targets {
		if tg.closes() != 1 {
			t.Errorf("%s closed %d times, want 1", tg.name, tg.closes())
		}
		tg.checkClean(t)
	}

	// Everything after Close is a no-op.
	p.Close()
	late := newTarget("late", nil)
	p.Add(late)
	p.Trigger(targets[0])
	p.Remove(targets[1])
	testkit.VerifyNone(t)
	if late.probes() != 0 || late.closes() != 0 {
		t.Fatal("a target added after Close was touched")
	}
	if len(rep.all()) != n {
		t.Fatal("reports after Close")
	}
}

func TestProberCloseDuringHungProbe(t *testing.T) {
	var rep reports
	p, err := NewProber(ProberConfig{Interval: time.Minute, Report: rep.add, Jitter: zeroJitter})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	tg := newTarget("hung", func(ctx context.Context, _ int) error {
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	})
	p.Add(tg)
	<-entered
	start := time.Now()
	p.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a hung probe (timeout one minute)", d)
	}
	if tg.closes() != 1 {
		t.Fatalf("target closed %d times, want 1", tg.closes())
	}
	if n := len(rep.all()); n != 0 {
		t.Fatalf("%d reports for a probe cancelled by Close, want 0", n)
	}
	testkit.VerifyNone(t)
}

func TestProberConcurrentUse(t *testing.T) {
	var rep reports
	p, err := NewProber(ProberConfig{Interval: time.Millisecond, Report: rep.add})
	if err != nil {
		t.Fatal(err)
	}
	var targets []*target
	for i := range 4 {
		targets = append(targets, newTarget(fmt.Sprint("t", i), func(ctx context.Context, n int) error {
			if n%3 == 0 {
				<-ctx.Done() // times out after the 1ms interval, or is cancelled
				return ctx.Err()
			}
			return nil
		}))
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 300 {
				tg := targets[(w+i)%len(targets)]
				switch i % 4 {
				case 0, 1:
					p.Add(tg)
				case 2:
					p.Trigger(tg)
				case 3:
					p.Remove(tg)
				}
			}
		})
	}
	wg.Wait()
	p.Close()
	testkit.VerifyNone(t)
	for _, tg := range targets {
		tg.checkClean(t)
		if ev := tg.log(); len(ev) > 0 && ev[len(ev)-1] != "close" {
			t.Errorf("%s: last event %q, want close", tg.name, ev[len(ev)-1])
		}
		// Every period of probing ends with exactly one Close, after its
		// last probe.
		ev := tg.log()
		for i, e := range ev {
			if e == "probe" && (i+1 >= len(ev) || ev[i+1] != "done") {
				t.Errorf("%s: probe not followed by its end: %v", tg.name, ev)
				break
			}
		}
	}
}

// pacedTarget asks for its next probe after next, whatever that holds when asked.
type pacedTarget struct {
	*target
	next atomic.Int64 // time.Duration
}

func (t *pacedTarget) NextProbeIn() time.Duration { return time.Duration(t.next.Load()) }

// TestProberPacedTarget: a target that paces itself is probed again after the wait it asks
// for, when that is shorter than Interval; a wait of 0, or one above Interval, means Interval.
func TestProberPacedTarget(t *testing.T) {
	clk := newFakeClock()
	var rep reports
	p := mustProber(t, ProberConfig{Interval: time.Second, Clock: clk, Report: rep.add, Jitter: zeroJitter})
	tg := &pacedTarget{target: newTarget("t", func(context.Context, int) error { return nil })}
	tg.next.Store(int64(100 * time.Millisecond))
	p.Add(tg)
	testkit.WaitFor(t, waitWithin, "first probe", func() bool { return len(rep.all()) == 1 })
	waitIdle(t, p, 1)
	clk.Advance(99 * time.Millisecond)
	if n := tg.probes(); n != 1 {
		t.Fatalf("%d probes 99ms into a 100ms pace, want 1", n)
	}
	clk.Advance(time.Millisecond)
	testkit.WaitFor(t, waitWithin, "the paced probe", func() bool { return len(rep.all()) == 2 })
	waitIdle(t, p, 1)
	// A pace of 0, then one above Interval: Interval each time.
	tg.next.Store(0)
	clk.Advance(100 * time.Millisecond) // the 100ms asked for after the second probe
	testkit.WaitFor(t, waitWithin, "the third probe", func() bool { return len(rep.all()) == 3 })
	tg.next.Store(int64(5 * time.Second))
	for want := 3; want <= 4; want++ {
		waitIdle(t, p, 1)
		clk.Advance(999 * time.Millisecond)
		if n := tg.probes(); n != want {
			t.Fatalf("%d probes 999ms after probe %d, want %d: the pace must fall back to Interval", n, want, want)
		}
		clk.Advance(time.Millisecond)
		testkit.WaitFor(t, waitWithin, "the next probe", func() bool { return len(rep.all()) == want+1 })
	}
}

// TestProberBoundsConcurrentProbes: however many targets are due, at most MaxProbes probes run
// at once, on at most MaxProbes workers beside the one goroutine of the schedule; a triggered
// probe takes the first worker that frees up, ahead of the scheduled ones waiting.
func TestProberBoundsConcurrentProbes(t *testing.T) {
	var rep reports
	calls := 0
	p := mustProber(t, ProberConfig{
		Interval:  time.Hour,
		MaxProbes: 2,
		Report:    rep.add,
		Jitter: func(max time.Duration) time.Duration {
			calls++ // under the prober's lock
			if calls <= 6 {
				return 0
			}
			return max
		},
	})
	before := runtime.NumGoroutine()
	entered := make(chan string, 10)
	release := make(chan struct{})
	var inflight, peak atomic.Int32
	held := func(name string) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			entered <- name
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
	}
	for i := range 6 {
		p.Add(newTarget(fmt.Sprint("t", i), held(fmt.Sprint("t", i))))
	}
	urgent := newTarget("urgent", held("urgent"))
	p.Add(urgent) // due in an hour
	<-entered
	<-entered
	testkit.WaitFor(t, waitWithin, "two probes running and four waiting", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.busy == 2 && p.workers == 2 && len(p.ready) == 4
	})
	if g := runtime.NumGoroutine(); g > before+2 {
		t.Fatalf("%d goroutines while 6 targets are due, want at most %d (MaxProbes workers)", g, before+2)
	}
	p.Trigger(urgent)
	release <- struct{}{}
	if got := <-entered; got != "urgent" {
		t.Fatalf("probe of %s started when a worker freed up, want the triggered one", got)
	}
	for range 4 {
		release <- struct{}{}
		<-entered
	}
	close(release)
	testkit.WaitFor(t, waitWithin, "every probe reported", func() bool { return len(rep.all()) == 7 })
	if n := peak.Load(); n != 2 {
		t.Fatalf("at most %d probes ran at once, want 2", n)
	}
}

func TestNewProberRefusesNegativeMaxProbes(t *testing.T) {
	_, err := NewProber(ProberConfig{Interval: time.Second, MaxProbes: -1, Report: func(Target, error, time.Duration) {}})
	if err == nil || !strings.Contains(err.Error(), "MaxProbes") {
		t.Fatalf("NewProber with MaxProbes -1: %v, want an error naming MaxProbes", err)
	}
}

// TestProberTriggerOvertakesTheQueue: a target already due and waiting for a worker behind
// others, when triggered, is probed next, and once only.
func TestProberTriggerOvertakesTheQueue(t *testing.T) {
	var rep reports
	p := mustProber(t, ProberConfig{Interval: time.Hour, MaxProbes: 1, Report: rep.add, Jitter: zeroJitter})
	entered := make(chan string, 10)
	release := make(chan struct{})
	var targets []*target
	for i := range 4 {
		name := fmt.Sprint("t", i)
		tg := newTarget(name, func(ctx context.Context, _ int) error {
			entered <- name
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
		targets = append(targets, tg)
		p.Add(tg)
	}
	first := <-entered
	testkit.WaitFor(t, waitWithin, "three targets waiting for the one worker", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.ready) == 3 && p.busy == 1
	})
	p.mu.Lock()
	last := p.ready[2].l.t.(*target)
	p.mu.Unlock()
	p.Trigger(last)
	release <- struct{}{}
	if got := <-entered; got != last.name {
		t.Fatalf("after %s, %s was probed, want the triggered %s", first, got, last.name)
	}
	close(release)
	testkit.WaitFor(t, waitWithin, "every target probed", func() bool { return len(rep.all()) == 4 })
	waitIdle(t, p, 4)
	for _, tg := range targets {
		if n := tg.probes(); n != 1 {
			t.Errorf("%s probed %d times, want once", tg.name, n)
		}
	}
}
