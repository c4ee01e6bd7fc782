package nodetable

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Load-aware picks (Config.LeastLoad; lbd's balancePolicy=least-load).
//
// A node's cost is the work in flight on it, once charged, times its latency estimate:
// (count+1) × latency, Finagle's and linkerd's peak-EWMA cost. The picks already order by
// (count+1)/weight, so the table folds latency into the effective weight: a node whose estimate
// is above the fastest node's gets its weight scaled down by the ratio (its speed factor), and
// the pick index, its O(1) buckets and O(log n) heap, stay as they are. The picks allocate
// nothing and read no latency; the caller's TickLoad recomputes the factors every LoadTick or
// so, in O(n) over the nodes (outside the table's mutex) plus O(log n) per node whose factor
// changed. Slowed nodes sit in pick indexes of their own, so the nodes at full speed keep
// their O(1) buckets and only the few slowed ones are ordered in a heap: a pick compares the
// best of each.
//
// # The estimate
//
// Each answered statement's round trip is a sample (Observe). The estimate is their moving
// average over time with the time constant LatencyWindow, each sample weighted by the time
// since the one before, so it moves at the same pace whatever the rate of statements. A sample
// counts at most SampleClip times the estimate, so one statement stalled by its host or a lock
// moves it little, while a lasting slowdown still raises it by 60% within a LatencyWindow and
// 2.7-fold within two. The estimate decides nothing until its samples span LatencyWindow (a
// new connection's first statements are no measure). It is an average, not a peak: Finagle's
// peak-EWMA jumps to every sample above its estimate, and on a shared host one descheduled
// statement would then mark a node slow for seconds. Reacting fast and forgetting slowly is
// the speed factor's part instead: a slower estimate lowers it at the next tick, however far,
// while a faster one raises it by at most RiseSteps steps (a quarter of an octave) per tick, so
// a node three times slower for a while regains its full weight over about 0.7 s of good
// answers. A node that gets no samples has its estimate decay toward zero with LatencyDecay,
// as linkerd's does, so a node left alone because it was slow is tried again and measured
// anew.
//
// # The tolerance band
//
// Nodes of the same speed must share evenly, and every client must not rush to whichever node
// measured fastest a moment ago (go-redis's RouteByLatency, a strict minimum, put 590 times
// more reads on one of five equal replicas). So the reference is the median estimate among up
// nodes measured within LatencyDecay (the fastest of one or two: see reference), and a node is
// slowed only by what exceeds that by more
// than LoadBand of it plus LoadFloor: limit = ref × (1+LoadBand) + LoadFloor. A node whose
// estimate is within limit keeps its full weight (factor 1: nodes of equal speed keep the
// unit weight, so the pick stays in its O(1) buckets and takes turns exactly); a slower one
// gets (reference+LoadFloor)/estimate (its speed against the reference, less the floor's
// noise; the band decides only whether it is slowed), rounded down to steps of 1/SpeedSteps of an octave, and at least
// 2^-MaxSlowness/SpeedSteps (1/16) of its weight, so it keeps a share of new work and of its
// own measurement. A lower factor takes effect once SlowAfterTicks ticks in a row asked for it,
// and a node at full speed is slowed only by EnterSlowSteps steps or more.

// Tuning of the load-aware pick.
const (
	// LatencyWindow is the time constant of the estimate's moving average.
	LatencyWindow = 500 * time.Millisecond
	// SampleClip bounds a sample to this many times the estimate before it is averaged in.
	SampleClip = 2
	// LatencyDecay is the time constant of the estimate's fall toward zero while the node
	// answers no statement (linkerd's default decay is 10 s); a node whose latest sample is
	// older is not the reference either.
	LatencyDecay = 5 * time.Second
	// LoadBand is how much slower than the fastest node, as a share of its estimate, a node
	// may be and still keep its full weight.
	LoadBand = 0.5
	// LoadFloor is how much slower than the fastest node, beyond LoadBand, a node may be and
	// still keep its full weight: differences under it are noise on a loopback or a LAN.
	LoadFloor = 500 * time.Microsecond
	// LoadTick is how often the caller should call TickLoad.
	LoadTick = 100 * time.Millisecond
	// SpeedSteps is how many steps of the speed factor make an octave.
	SpeedSteps = 16
	// MaxSlowness is the most steps a node is slowed by: a factor of 2^(-MaxSlowness/SpeedSteps).
	MaxSlowness = 4 * SpeedSteps
	// SlowAfterTicks is how many ticks in a row a node's estimate must call for a lower speed
	// factor before it gets one: on a busy host a node sees its estimate jump for a moment when
	// the host stalls a few of its statements (64 workers over three in-process proxies beside
	// two CPU-bound processes slowed one of three equal proxies to 0.28 when one tick sufficed),
	// and a slowdown that lasts 0.4 s more is still shed within the second.
	SlowAfterTicks = 4
	// RiseSteps is how many steps a slowed node's speed factor rises at most per tick once its
	// estimate asks for less slowness: a quarter of an octave, so a node the host stalled for a
	// moment is back at full speed within a second or two, and a node that heals regains a
	// share at one worker within a second of its estimate falling (one step a tick left a node
	// slowed to a quarter for three seconds after a stall).
	RiseSteps = 4
	// EnterSlowSteps is how far over the limit, in steps, a node at full speed must be to be
	// slowed: one just over it stays at full speed (a slowdown of a step or two moved the shares
	// of equal proxies by 8 % on a busy host), one clearly over it (by 2^(5/16), 24 %) is slowed
	// to (reference+LoadFloor)/estimate as any other.
	EnterSlowSteps = 5
)

// monoBase anchors the estimates' timestamps on the monotonic clock.
var monoBase = time.Now()

// latency is one node's latency estimate. Observe writes it under mu; readers load est and at
// without it (each on its own: a reader may pair a new estimate with an older time, which moves
// a decay by one sample's worth).
type latency struct {
	mu  sync.Mutex
	est atomic.Uint64 // float64 bits, nanoseconds; 0 before the first sample
	at  atomic.Int64  // the latest sample's time, nanoseconds since monoBase
	// first is the first sample's time, nanoseconds since monoBase: the estimate counts once it
	// spans LatencyWindow (see read).
	first atomic.Int64
	// started is the latest sample's start (its end less its round trip), nanoseconds since
	// monoBase; written under mu.
	started int64
}

// observe folds the round trip rtt that ended at now into the estimate. A sample weighs the
// time from the start of the one before to its own start: weighing it by the time since the
// previous sample's end would count its own round trip into its weight, and a node answering
// statement after statement (a heavy weight at one worker) would then have its slow samples
// weigh more than its fast ones (an estimate of E[x²]/E[x], not E[x]): such a node measured
// twice as slow as its peers on a busy host.
func (l *latency) observe(now time.Time, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	x, ts := float64(rtt), int64(now.Sub(monoBase))
	start := ts - int64(rtt)
	l.mu.Lock()
	est, last := math.Float64frombits(l.est.Load()), l.at.Load()
	switch {
	case est == 0:
		est = x
		l.first.Store(ts)
	default:
		dt := float64(max(start-l.started, 0))
		x = min(x, SampleClip*est)
		est += (x - est) * -math.Expm1(-dt/float64(LatencyWindow))
	}
	l.started = max(start, l.started)
	l.est.Store(math.Float64bits(est))
	l.at.Store(max(ts, last))
	l.mu.Unlock()
}

// read returns the estimate without decay and how long ago its latest sample was, at now; ok
// is false before the first sample. settled is false while the samples span less than
// LatencyWindow: an estimate of a few samples (a new connection's first statements) decides
// nothing yet.
func (l *latency) read(now time.Time) (est float64, age time.Duration, ok, settled bool) {
	est = math.Float64frombits(l.est.Load())
	if est == 0 {
		return 0, 0, false, false
	}
	at := l.at.Load()
	return est, max(now.Sub(monoBase)-time.Duration(at), 0), true, at-l.first.Load() >= int64(LatencyWindow)
}

// decayed returns the estimate decayed toward zero over the time since its latest sample.
func decayed(est float64, age time.Duration) float64 {
	if age <= LoadTick {
		return est
	}
	return est * math.Exp(-float64(age)/float64(LatencyDecay))
}

// Observe records that a statement on n took rtt, answered at now (the caller's monotonic
// clock: round trips are real time). It takes no table lock and allocates nothing; it is safe
// for concurrent use. Round trips of 0 or less are ignored.
func (t *Table[P]) Observe(n *Node[P], now time.Time, rtt time.Duration) { n.lat.observe(now, rtt) }

// Latency returns n's latency estimate at now, decayed over the time since its latest sample;
// 0 before the first.
func (t *Table[P]) Latency(n *Node[P], now time.Time) time.Duration {
	est, age, ok, _ := n.lat.read(now)
	if !ok {
		return 0
	}
	return time.Duration(decayed(est, age))
}

// reference returns the estimate the others are judged against: the median of ests when there
// are three or more (the lower median of an even count), the least otherwise, and +Inf when
// there is none. It reorders ests. The least of several noisy estimates is biased low (on a
// busy host, equal nodes' estimates scatter, and the fastest of three measured half as fast
// as the others often enough to slow them); the median is not, and a node that is really slow
// is still judged against a fast one while fewer than half the nodes are slow.
func reference(ests []float64) float64 {
	switch n := len(ests); {
	case n == 0:
		return math.Inf(1)
	case n < 3:
		return min(ests[0], ests[n-1])
	}
	return selectNth(ests, (len(ests)-1)/2)
}

// selectNth returns the k-th smallest of xs (from 0), reordering xs: Hoare's selection, O(n)
// on average, without allocating.
func selectNth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// speedOf returns the speed factor of slowness steps.
func speedOf(slow uint8) float64 {
	if slow == 0 {
		return 1
	}
	return math.Exp2(-float64(slow) / SpeedSteps)
}

// slowness returns the steps by which a node of estimate est is slowed under limit.
func slowness(est, limit float64) uint8 {
	if est <= limit {
		return 0
	}
	k := math.Ceil(SpeedSteps * math.Log2(est/limit))
	return uint8(min(k, MaxSlowness))
}

// TickLoad recomputes every node's speed factor from the latency estimates at now (see the
// top of this file: lowered once SlowAfterTicks calls in a row asked for it, raised by at most
// one step a call) and re-orders the pick indexes where one changed. Without Config.LeastLoad
// it does nothing. It reads the estimates outside the table's mutex, O(n), and holds the mutex
// only to copy the node list and to apply the factors that changed, O(log n) each. Calls must
// not overlap (one loop calls it). It reports whether some node was slowed further: the
// caller's rebalancer may want to move pooled connections off it now rather than at its next
// round.
func (t *Table[P]) TickLoad(now time.Time) (slowed bool) {
	if !t.cfg.LeastLoad {
		return false
	}
	t.mu.Lock()
	buf := append(t.loadNodes[:0], t.order...)
	t.mu.Unlock()
	slow := t.loadSlow[:0]
	ests := t.loadEsts[:0]
	for _, n := range buf {
		if State(n.stateNow.Load()) != Up {
			continue
		}
		if est, age, _, settled := n.lat.read(now); settled && age < LatencyDecay {
			ests = append(ests, est)
		}
	}
	ref := reference(ests)
	t.loadEsts = ests[:0]
	limit := ref*(1+LoadBand) + float64(LoadFloor)
	clearly := t.loadClear[:0]
	for _, n := range buf {
		var k uint8
		over := false
		if est, age, _, settled := n.lat.read(now); settled && !math.IsInf(ref, 1) {
			if est = decayed(est, age); est > limit {
				// Over the band, a node is slowed by its speed against the reference, not
				// against the band's edge: a proxy ten times slower gets about a tenth. The
				// floor counts on the reference's side, as it counts in the band: what is
				// under it is noise, and a node of 0.9 ms beside nodes of 0.15 ms (the host
				// stalled it for half a second) was cut to a sixth of its weight, where
				// (0.15+0.5)/0.9 keeps it at seven tenths.
				k = slowness(est, ref+float64(LoadFloor))
				over = slowness(est, limit) >= EnterSlowSteps
			}
		}
		slow, clearly = append(slow, k), append(clearly, over)
	}
	t.mu.Lock()
	for i, n := range buf {
		k := slow[i]
		switch {
		case k < n.slow:
			k = n.slow - min(n.slow-k, RiseSteps) // forget at a bounded pace
			n.overTicks = 0
		case k > n.slow:
			if n.slow == 0 && !clearly[i] {
				k, n.overTicks = 0, 0 // within the margin of a node at full speed
			} else if n.overTicks++; n.overTicks < SlowAfterTicks {
				k = n.slow // not yet: it must last
			} else if n.byOpen.Indexed() {
				slowed = true
			}
		default:
			n.overTicks = 0
		}
		if n.slow != k && n.state != Draining {
			// A node slowed, or back at full speed, moves between the indexes of the nodes at
			// full speed (unweighted: O(1) buckets) and of the slowed ones (a heap as large as
			// they are few).
			move := (n.slow == 0) != (k == 0) && n.byOpen.Indexed()
			if move {
				t.unindexLocked(n)
			}
			n.slow = k
			if move {
				t.indexLocked(n)
			}
			t.applyWeightLocked(n)
		}
	}
	t.mu.Unlock()
	clear(buf)
	t.loadNodes, t.loadSlow, t.loadClear = buf[:0], slow[:0], clearly[:0]
	return slowed
}
