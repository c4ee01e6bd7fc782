package pick

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func newEntries(n int) []*Entry[int] {
	es := make([]*Entry[int], n)
	for i := range es {
		es[i] = &Entry[int]{Value: i}
	}
	return es
}

// charge picks like the node table does: the first entry, charged by one.
func charge(x *Index[int]) *Entry[int] {
	e := x.First()
	if e != nil {
		x.Adjust(e, +1)
	}
	return e
}

func TestEqualNodesTakeTurns(t *testing.T) {
	var x Index[int]
	es := newEntries(3)
	for _, e := range es {
		x.Insert(e)
	}
	var order []int
	for range 9 {
		order = append(order, charge(&x).Value)
	}
	want := []int{0, 1, 2, 0, 1, 2, 0, 1, 2}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("pick order = %v, want %v", order, want)
		}
	}
	for _, e := range es {
		if e.Count() != 3 {
			t.Fatalf("entry %d count = %d, want 3", e.Value, e.Count())
		}
	}
}

func TestPickFollowsReleases(t *testing.T) {
	var x Index[int]
	es := newEntries(3)
	for _, e := range es {
		x.Insert(e)
	}
	for range 30 {
		charge(&x)
	}
	// Node 1 loses 4 connections: the next 4 picks must all go to it.
	for range 4 {
		x.Adjust(es[1], -1)
	}
	for i := range 4 {
		if e := charge(&x); e != es[1] {
			t.Fatalf("pick %d went to %d, want 1", i, e.Value)
		}
	}
}

// TestAgainstModel drives the index with random operations and checks every pick against a
// brute-force scan: the picked entry has the lowest count among indexed entries, and counts of
// entries outside the index keep changing correctly.
func TestAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x Index[int]
	es := newEntries(20)
	for _, e := range es {
		x.Insert(e)
	}
	counts := make([]int, len(es))
	for step := range 200000 {
		e := es[r.IntN(len(es))]
		switch op := r.IntN(10); {
		case op < 5:
			p := x.First()
			if p == nil {
				continue
			}
			for _, o := range es {
				if o.Indexed() && o.Count() < p.Count() {
					t.Fatalf("step %d: picked %d with %d, but %d has %d", step, p.Value, p.Count(), o.Value, o.Count())
				}
			}
			x.Adjust(p, +1)
			counts[p.Value]++
		case op < 9:
			if counts[e.Value] > 0 {
				x.Adjust(e, -1)
				counts[e.Value]--
			}
		default:
			if e.Indexed() {
				x.Remove(e)
			} else {
				x.Insert(e)
			}
		}
		if e.Count() != counts[e.Value] {
			t.Fatalf("step %d: entry %d count %d, model %d", step, e.Value, e.Count(), counts[e.Value])
		}
	}
	n := 0
	for _, e := range es {
		if e.Indexed() {
			n++
		}
	}
	if n != x.Len() {
		t.Fatalf("Len = %d, indexed entries = %d", x.Len(), n)
	}
}

func TestFirstNotInSkipsInPickOrder(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		var x Index[int]
		es := newEntries(4)
		for _, e := range es {
			x.Insert(e)
		}
		if weighted {
			x.SetWeight(es[3], Unit/1000) // the lightest: last in order while the others are empty
		}
		x.Adjust(es[0], +1) // counts 1,0,0,0 → order 1,2,(3 or 0)...
		var got []int
		var skip []int
		for e := x.FirstNotIn(skip); e != nil; e = x.FirstNotIn(skip) {
			got = append(got, e.Value)
			skip = append(skip, e.Value)
		}
		want := []int{1, 2, 3, 0}
		if weighted {
			want = []int{1, 2, 0, 3}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("weighted %v: order = %v, want %v", weighted, got, want)
		}
		if x.Len() != 4 {
			t.Fatalf("weighted %v: Len = %d after skipping, want 4", weighted, x.Len())
		}
		// Skipping left every entry where it was.
		if e := x.First(); e.Value != 1 {
			t.Fatalf("weighted %v: first is %d after skipping, want 1", weighted, e.Value)
		}
	}
}

func TestEmptyIndex(t *testing.T) {
	var x Index[int]
	if x.First() != nil {
		t.Fatal("empty index picked something")
	}
	e := &Entry[int]{}
	x.Insert(e)
	x.Remove(e)
	if x.First() != nil || x.Len() != 0 {
		t.Fatal("index not empty after removing its only entry")
	}
}

func TestChargeAllocatesNothing(t *testing.T) {
	var x Index[int]
	for _, e := range newEntries(1000) {
		x.Insert(e)
	}
	for range 5000 { // grow the buckets first
		charge(&x)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		e := charge(&x)
		x.Adjust(e, -1)
	})
	if allocs != 0 {
		t.Fatalf("pick + release allocates %v times, want 0", allocs)
	}
}
