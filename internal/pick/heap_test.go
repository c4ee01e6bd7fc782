package pick

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// noWorse reports whether a goes no later than b in weighted order:
// (FlightUnits×count + 1 + recent×cost/Unit)/weight, computed in floats on its own (the index
// compares in 128-bit integers).
func noWorse(a, b *Entry[int]) bool {
	la := float64(FlightUnits*a.count+1) + float64(a.recent)*float64(a.Cost())/float64(Unit)
	lb := float64(FlightUnits*b.count+1) + float64(b.recent)*float64(b.Cost())/float64(Unit)
	return la/float64(a.Weight()) <= lb/float64(b.Weight())*(1+1e-12)
}

// TestWeightedShares charges 600 connections over weights 1, 2 and 3: they end up 100, 200 and
// 300, and every pick on the way went to an entry whose next connection is the smallest share
// of its weight.
func TestWeightedShares(t *testing.T) {
	var x Index[int]
	es := newEntries(3)
	for i, e := range es {
		x.Insert(e)
		x.SetWeight(e, int64(i+1)*Unit)
	}
	if !x.Weighted() {
		t.Fatal("index with weights 1, 2, 3 is not in heap mode")
	}
	for range 600 {
		p := x.First()
		for _, o := range es {
			if !noWorse(p, o) {
				t.Fatalf("picked %d (count %d weight %d) over %d (count %d weight %d)",
					p.Value, p.count, p.Weight(), o.Value, o.count, o.Weight())
			}
		}
		x.Adjust(p, +1)
	}
	for i, e := range es {
		if want := 100 * (i + 1); e.Count() != want {
			t.Fatalf("entry %d of weight %d holds %d, want %d", i, i+1, e.Count(), want)
		}
	}
}

// TestWeightedTiesTakeTurns: equal shares take turns in heap mode as equal counts do in
// bucket mode.
func TestWeightedTiesTakeTurns(t *testing.T) {
	var x Index[int]
	es := newEntries(3)
	for _, e := range es {
		x.Insert(e)
		x.SetWeight(e, 2*Unit)
	}
	var order []int
	for range 6 {
		order = append(order, charge(&x).Value)
	}
	want := []int{0, 1, 2, 0, 1, 2}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("pick order = %v, want %v", order, want)
		}
	}
}

// TestModeSwitchKeepsOrder: going to heap mode and back keeps counts, turn order and Len.
func TestModeSwitchKeepsOrder(t *testing.T) {
	var x Index[int]
	es := newEntries(4)
	for _, e := range es {
		x.Insert(e)
	}
	x.Adjust(es[0], +1)
	x.Adjust(es[1], +1) // counts 1,1,0,0: bucket order 2,3,0,1
	x.SetWeight(es[3], 3*Unit)
	if !x.Weighted() {
		t.Fatal("not in heap mode with a weighted entry")
	}
	x.SetWeight(es[3], Unit)
	if x.Weighted() {
		t.Fatal("still in heap mode with every entry of unit weight")
	}
	var order []int
	for range 4 {
		order = append(order, charge(&x).Value)
	}
	// 2 and 3 (count 0) first, then 0 and 1 (count 1, charged before); 3 went behind 2 when
	// its weight changed.
	want := []int{2, 3, 0, 1}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("pick order = %v, want %v", order, want)
		}
	}
	if x.Len() != 4 {
		t.Fatalf("Len = %d, want 4", x.Len())
	}
}

// TestWeightedAgainstModel drives the index with random charges, releases, removals and weight
// changes and checks every pick against a brute-force scan by the weighted order.
func TestWeightedAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var x Index[int]
	es := newEntries(30)
	for _, e := range es {
		x.Insert(e)
	}
	counts := make([]int, len(es))
	recent := make([]int, len(es))
	for step := range 200000 {
		e := es[r.IntN(len(es))]
		switch op := r.IntN(22); {
		case op < 10:
			p := x.First()
			if p == nil {
				continue
			}
			for _, o := range es {
				if o.Indexed() && !noWorse(p, o) {
					t.Fatalf("step %d: picked %d (%d+%d/%d), but %d has (%d+%d/%d)", step, p.Value, p.count, p.recent, p.Weight(), o.Value, o.count, o.recent, o.Weight())
				}
			}
			x.Adjust(p, +1)
			counts[p.Value]++
		case op < 14:
			if counts[e.Value] > 0 {
				x.Adjust(e, -1)
				counts[e.Value]--
			}
		case op < 17:
			if counts[e.Value] > 0 {
				x.Finish(e)
				counts[e.Value]--
				recent[e.Value]++
			}
		case op < 19:
			x.Expire(e)
			recent[e.Value] = max(recent[e.Value]-1, 0)
		case op < 21:
			w, c := Unit, Unit
			if r.IntN(3) > 0 {
				w = int64(1 + r.IntN(int(5*Unit)))
			}
			if r.IntN(3) == 0 {
				c = Unit + int64(r.IntN(int(15*Unit)))
			}
			x.SetWeights(e, w, c)
		default:
			if e.Indexed() {
				x.Remove(e)
			} else {
				x.Insert(e)
			}
		}
		if e.Count() != counts[e.Value] || e.Recent() != recent[e.Value] {
			t.Fatalf("step %d: entry %d count %d recent %d, model %d and %d", step, e.Value, e.Count(), e.Recent(), counts[e.Value], recent[e.Value])
		}
		weighted := 0
		for _, o := range es {
			if o.Indexed() && (o.Weight() != Unit || o.Cost() != Unit) {
				weighted++
			}
		}
		if x.Weighted() != (weighted > 0) {
			t.Fatalf("step %d: heap mode %v with %d weighted entries", step, x.Weighted(), weighted)
		}
	}
}

func TestWeightedChargeAllocatesNothing(t *testing.T) {
	var x Index[int]
	es := newEntries(1000)
	for i, e := range es {
		x.Insert(e)
		x.SetWeight(e, int64(1+i%7)*Unit)
	}
	for range 5000 {
		charge(&x)
	}
	skip := []int{es[0].Value, es[1].Value}
	allocs := testing.AllocsPerRun(1000, func() {
		e := x.FirstNotIn(skip)
		x.Adjust(e, +1)
		x.Adjust(e, -1)
	})
	if allocs != 0 {
		t.Fatalf("weighted pick + release allocates %v times, want 0", allocs)
	}
}

// lighter compares exactly whether or not the products fit in 64 bits.
func TestLighterAgainstBigInts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		var v [4]uint64
		for i := range v {
			switch r.IntN(3) {
			case 0:
				v[i] = uint64(r.IntN(1 << 20))
			case 1:
				v[i] = r.Uint64() >> 12 // up to 2^52, as loads
			default:
				v[i] = uint64(r.Int64N(MaxWeight)) + 1
			}
		}
		a, wa, b, wb := v[0], v[1], v[2], v[3]
		x := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(wb))
		y := new(big.Int).Mul(new(big.Int).SetUint64(b), new(big.Int).SetUint64(wa))
		if got, want := lighter(a, wa, b, wb), x.Cmp(y); got != want {
			t.Fatalf("lighter(%d, %d, %d, %d) = %d, want %d", a, wa, b, wb, got, want)
		}
	}
}
