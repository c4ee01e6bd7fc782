package nodetable

import (
	"math"
	"time"

	"github.com/lbd-go/lbd/internal/pick"
	"github.com/lbd-go/lbd/nodes"
)

// Weights and slow start.
//
// A node's effective weight is its source's weight (nodes.Node.Weight; 0 reads as
// nodes.DefaultWeight) times its warm-up factor. The picks are weighted least-connections over
// the effective weights, so a node of weight 2 holds twice the connections of one of weight 1.
//
// Slow start follows Dubbo (weight × uptime / warm-up), HAProxy's slowstart and Envoy's
// slow-start window: a node a probe brings up — added at run time, or recovered after an
// outage of at least Config.SlowStartAfterDown — starts at WarmupFloor of its weight and rises
// linearly to all of it over Config.Warmup. A node back from a shorter outage comes back at
// the weight it had: HAProxy and Envoy warm up every recovery, but a proxy gone for a few
// seconds (a restart, a blip) has nothing to warm, and holding its share back for the whole
// window leaves the others carrying it. The floor
// makes sure a warming node gets connections from the start (Envoy's min_weight_percent
// default, 10%), so its first probes are joined by real traffic. Nodes trusted at start, or
// while no node is up, start warm: nothing is there to protect them from.
//
// The table reads no clock: the caller reports time with Tick, every WarmupStep or so. Pick
// and Release read the effective weights as the latest Tick left them, so they stay O(1) /
// O(log n) and never compute a factor; a warming node's weight moves in steps of
// 1/WarmupSteps of the window.

// WarmupFloor is the share of its weight a node gets at the start of its warm-up.
const WarmupFloor = 0.1

// InUseSpeedFloor is the least the speed factor cuts a node's weight for statements in flight
// (statement mode's in-use count): beyond it, the cost of the node's recent units takes the cut
// (see applyWeightLocked).
const InUseSpeedFloor = 0.4

// WarmupSteps is how many steps a warm-up takes when the caller ticks every Warmup/WarmupSteps.
const WarmupSteps = 20

// WarmupStep returns how often the caller should Tick: Warmup/WarmupSteps, or 0 when slow start
// is off.
func (t *Table[P]) WarmupStep() time.Duration { return t.cfg.Warmup / WarmupSteps }

// Tick moves the warm-up of every warming node to now and updates its effective weight. It is
// O(w log n) for w warming nodes, allocates nothing, and reports no transition.
func (t *Table[P]) Tick(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 0; i < len(t.warming); {
		n := t.warming[i]
		n.warmth = t.warmthAt(n, now)
		t.applyWeightLocked(n)
		if n.warmth >= 1 {
			t.stopWarmupLocked(n) // the last node moved into place i
			continue
		}
		i++
	}
}

// warmthAt is n's warm-up progress at now, from 0 to 1.
func (t *Table[P]) warmthAt(n *Node[P], now time.Time) float64 {
	if t.cfg.Warmup <= 0 {
		return 1
	}
	f := float64(now.Sub(n.warmFrom)) / float64(t.cfg.Warmup)
	return min(max(f, 0), 1)
}

// startWarmupLocked starts n's warm-up at now (again, when it was already warming).
func (t *Table[P]) startWarmupLocked(n *Node[P], now time.Time) {
	if t.cfg.Warmup <= 0 {
		return
	}
	n.warmFrom, n.warmth = now, 0
	if n.warmIdx < 0 {
		n.warmIdx = len(t.warming)
		t.warming = append(t.warming, n)
	}
	t.applyWeightLocked(n)
}

// stopWarmupLocked takes n out of the warming list; its warmth stays as it is.
func (t *Table[P]) stopWarmupLocked(n *Node[P]) {
	i := n.warmIdx
	if i < 0 {
		return
	}
	last := len(t.warming) - 1
	t.warming[i] = t.warming[last]
	t.warming[i].warmIdx = i
	t.warming[last] = nil
	t.warming = t.warming[:last]
	n.warmIdx = -1
}

// setWeightLocked takes the weight a source reported for n (0: nodes.DefaultWeight; values out
// of range are clamped, the sources reject them before).
func (t *Table[P]) setWeightLocked(n *Node[P], w int) {
	if w <= 0 {
		w = nodes.DefaultWeight
	}
	n.weight = min(w, nodes.MaxWeight)
	t.applyWeightLocked(n)
}

// effective is n's effective weight in units of pick.Unit per weight 1: what its share of
// picks is in proportion to, when no unit is in flight (times its speed factor under
// Config.LeastLoad: load.go).
func effective[P any](n *Node[P]) float64 {
	return float64(n.weight) * max(n.warmth, WarmupFloor) * speedOf(n.slow)
}

// applyWeightLocked gives n's pick entries its current weights. A warm node of the default
// weight at full speed gets exactly pick.Unit, so a fleet without weights stays in the O(1)
// buckets.
//
// The speed factor (Config.LeastLoad) enters the two counts differently. Open connections are
// held by database/sql's pool whatever the node's speed, so the open count's weight is the
// whole effective weight: a node at half speed holds half the connections. Connections in use
// are statements in flight, and a slow node's stay in flight longer by themselves (Little's
// law): cutting its weight by the whole factor as well would charge its slowness twice and
// starve it at high concurrency (peak-EWMA's latency × (in flight + 1) gave a ten-times-slower
// proxy 0.05 of a fast one's statements at 16 workers). Not cutting it at all would trust the
// counts in flight alone, and they undercount a slowdown: they also hold the client's own time
// per statement, the same on every node (a proxy three times slower kept half of a fast one's
// statements under least-connections). So the in-use weight takes the speed factor down to
// InUseSpeedFloor and no further, and the cost of the node's recent units takes the rest
// (recent.go): with nothing in flight, where recent units decide, the node's share follows the
// whole factor.
func (t *Table[P]) applyWeightLocked(n *Node[P]) {
	w := pick.Unit * int64(n.weight)
	if n.warmth < 1 || n.slow != 0 {
		w = int64(math.Round(float64(pick.Unit) * effective(n)))
	}
	t.byOpen[n.slot()].SetWeights(&n.byOpen, w, pick.Unit)
	w, c := pick.Unit*int64(n.weight), pick.Unit
	if n.warmth < 1 || n.slow != 0 {
		speed := speedOf(n.slow)
		inUse := max(speed, InUseSpeedFloor)
		w = int64(math.Round(float64(w) * max(n.warmth, WarmupFloor) * inUse))
		c = int64(math.Round(float64(pick.Unit) * inUse / speed))
	}
	t.byInUse[n.slot()].SetWeights(&n.byInUse, w, c)
}
