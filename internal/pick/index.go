// Package pick is lbd's pick index: it finds the least-loaded node for a new physical
// connection or a statement without allocating, in O(1) while every node has the same weight
// and in O(log n) otherwise, however many nodes there are.
//
// It is the bottom layer of lbd's one-way imports (the root package lbd → internal/logical →
// internal/physical → internal/nodetable → internal/pick) and imports none of them.
//
// # The order
//
// An entry's load is its units in flight (count: connections open, or in use), each worth
// FlightUnits, plus its recent units: units that finished (Finish) and that the owner has not
// expired yet (Expire), each worth its recent cost. The index orders by
// (FlightUnits×count + 1 + recent×cost)/weight, where cost and weight are in units of Unit,
// and takes the least: weighted least-connections while units are in flight, and, when none
// is (one statement at a time: every count is 0 at every pick), a weighted least-recent order
// whose picks follow the weights. The owner keeps a sliding window of recent units (see
// internal/nodetable's recent.go), so weights are shares at every concurrency, a node whose
// recent units cost more (slowed by the load policy) gets fewer picks in proportion, and a
// node whose units never finish (hung) draws about what least-connections gives it, since
// units in flight push recent ones out of the window.
//
// # Two structures
//
// While every indexed entry has the unit weight and the unit cost (no weights from the node
// source, no node warming up or slowed: the common case), the order is the integer
// FlightUnits×count + recent, and entries live in buckets by it: pick, charge, finish and
// expire are O(1).
//
// Otherwise the order is not a small integer, and a warming node's weight moves in fine
// steps, so buckets no longer work; buckets by weight class would need a scan over the
// classes per pick, and classes multiply with warm-up steps. A min-heap by that ratio,
// compared by cross-multiplication in 128-bit integers (no float rounding between equal
// shares), is O(log n) for every operation and bounded by nothing but n; it is 4-ary and its
// slots hold a copy of each entry's load, so sifting reads contiguous memory (heap.go). So the
// index switches to the heap while at least one indexed entry has another weight or cost, and
// back to the buckets when none has: a switch is O(n log n) once, on a weight change, never on
// a pick. Ties in the heap go to the entry moved longest ago, so equal loads take turns as
// they do in the buckets.
package pick

import "math/bits"

// FlightUnits is what one unit in flight weighs against one recent unit of the unit cost.
// Heavier, and a node with one statement in flight would not be picked again until it ended,
// whatever its weight; lighter, and recent units would outweigh what is in flight, so a hung
// node would draw more than least-connections gives it (internal/nodetable's recent.go tells
// how 4 was chosen).
const FlightUnits = 4

// Entry is one node's place in an Index: the counts the index orders by (open connections for
// one index, connections in use for another) and its list links. The owner embeds it and keeps
// Value pointing back at itself.
type Entry[T comparable] struct {
	Value      T
	count      int
	recent     int // finished units the owner has not expired yet (Finish, Expire)
	prev, next *Entry[T]
	indexed    bool
	weight     int64  // 0 means Unit
	cost       int64  // of one recent unit; 0 means Unit
	pos        int    // place in the heap, while the index is in heap mode
	seq        uint64 // when the entry last moved; heap ties go to the oldest
}

// Unit is the weight of an entry that has none of its own (a node of weight 1, fully warm),
// and the cost of a recent unit of a node at full speed. Weights and costs are relative to
// it: an entry of weight 2*Unit holds twice the connections.
const Unit int64 = 1000

// MaxWeight bounds a weight and a cost, so that loads and their cross products fit the
// 128-bit comparison for any count and recent units below 2^31.
const MaxWeight int64 = 1 << 31

// Weight returns the entry's weight (Unit when none was set).
func (e *Entry[T]) Weight() int64 {
	if e.weight == 0 {
		return Unit
	}
	return e.weight
}

// Cost returns the cost of one of the entry's recent units (Unit when none was set).
func (e *Entry[T]) Cost() int64 {
	if e.cost == 0 {
		return Unit
	}
	return e.cost
}

func (e *Entry[T]) unit() bool {
	return (e.weight == 0 || e.weight == Unit) && (e.cost == 0 || e.cost == Unit)
}

// Count returns the entry's count (its units in flight), whether or not it is in an Index.
func (e *Entry[T]) Count() int { return e.count }

// Indexed reports whether the entry is in an Index (its node takes new connections).
func (e *Entry[T]) Indexed() bool { return e.indexed }

// Recent returns the entry's recent units: finished and not yet expired.
func (e *Entry[T]) Recent() int { return e.recent }

// key is the entry's place in bucket mode: FlightUnits×count + recent.
func (e *Entry[T]) key() int { return FlightUnits*max(e.count, 0) + max(e.recent, 0) }

// load returns the numerator of the entry's order, (FlightUnits×count + 1)×Unit + recent×cost;
// the denominator is its weight.
func (e *Entry[T]) load() uint64 {
	return uint64(FlightUnits*max(e.count, 0)+1)*uint64(Unit) + uint64(max(e.recent, 0))*uint64(e.Cost())
}

// lighter compares load a over weight wa with load b over weight wb: -1 when a is the
// lighter, 1 when b is, 0 when they are equal. The products are exact in 128 bits.
func lighter(a, wa, b, wb uint64) int {
	if (a|b|wa|wb)>>32 == 0 { // the common case: both products fit in 64 bits
		x, y := a*wb, b*wa
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	ah, al := bits.Mul64(a, wb)
	bh, bl := bits.Mul64(b, wa)
	switch {
	case ah != bh:
		if ah < bh {
			return -1
		}
		return 1
	case al != bl:
		if al < bl {
			return -1
		}
		return 1
	}
	return 0
}

// Compare orders two entries, of one index or of two, as an index orders them, ties aside:
// -1 when a is the lighter (the one to pick), 1 when b is, 0 when their loads for their
// weights are equal.
func Compare[T comparable](a, b *Entry[T]) int {
	return lighter(a.load(), uint64(a.Weight()), b.load(), uint64(b.Weight()))
}

// Index orders entries so that the least-loaded one is found, charged and re-ordered without
// allocating. In bucket mode (every indexed entry of unit weight and cost) entries with the
// same key share a bucket (an intrusive FIFO list), min tracks the lowest non-empty bucket, and
// an entry that moves goes to the tail of its new bucket, so entries with equal loads take
// turns: O(1). In heap mode (some entry weighted or costed) they sit in a min-heap by load
// over weight: O(log n). Counts, recent units and weights of entries outside the index (down
// or draining nodes) still change through Adjust, Finish, Expire and SetWeights, so they
// survive leaving and re-joining.
//
// Index is not safe for concurrent use: the owner guards it with its own mutex. Buckets and
// the heap grow with the highest count and the number of entries seen and are then reused,
// so the steady state allocates nothing.
type Index[T comparable] struct {
	buckets []bucket[T]
	min     int // lowest non-empty bucket; meaningful only when size > 0 in bucket mode
	size    int

	weighted int         // indexed entries whose weight or cost is not Unit: heap mode while > 0
	heap     []slot[T]   // heap mode: every indexed entry, a 4-ary min-heap by load/weight
	seq      uint64      // source of Entry.seq
	parked   []*Entry[T] // FirstNotIn's scratch in heap mode, reused
}

type bucket[T comparable] struct{ head, tail *Entry[T] }

// Len returns how many entries are in the index.
func (x *Index[T]) Len() int { return x.size }

// Weighted reports whether the index is in heap mode: some indexed entry has a weight or a
// cost other than Unit.
func (x *Index[T]) Weighted() bool { return x.weighted > 0 }

// Insert adds e, which must not be in the index, behind the entries with the same load.
func (x *Index[T]) Insert(e *Entry[T]) {
	if !e.unit() {
		if x.weighted++; x.weighted == 1 {
			x.toHeap()
		}
	}
	x.size++
	if x.weighted > 0 {
		x.push(e)
		return
	}
	x.link(e)
	if l := e.key(); x.size == 1 || l < x.min {
		x.min = l
	}
}

// Remove takes e, which must be in the index, out of it.
func (x *Index[T]) Remove(e *Entry[T]) {
	x.size--
	if x.weighted == 0 {
		x.unlink(e)
		if x.size > 0 {
			x.advanceMin()
		}
		return
	}
	x.heapRemove(e)
	if !e.unit() {
		if x.weighted--; x.weighted == 0 {
			x.toBuckets()
		}
	}
}

// First returns the least-loaded entry without charging it, or nil when the index is empty.
func (x *Index[T]) First() *Entry[T] {
	switch {
	case x.size == 0:
		return nil
	case x.weighted > 0:
		return x.heap[0].e
	}
	return x.buckets[x.min].head
}

// FirstNotIn returns the least-loaded entry whose Value is not in skip, without charging it,
// or nil when there is none. It serves the retry path, which skips nodes already tried: each
// skipped entry costs one step (O(log n) in heap mode, where the skipped entries are taken out
// and put back).
func (x *Index[T]) FirstNotIn(skip []T) *Entry[T] {
	e := x.First()
	if e == nil || !contains(skip, e.Value) {
		return e
	}
	if x.weighted == 0 {
		for e != nil && contains(skip, e.Value) {
			e = x.next(e)
		}
		return e
	}
	parked := x.parked[:0]
	for e != nil && contains(skip, e.Value) {
		x.heapRemove(e)
		parked = append(parked, e)
		e = nil
		if len(x.heap) > 0 {
			e = x.heap[0].e
		}
	}
	for _, p := range parked {
		x.putBack(p) // same load, weight and seq: the same place in the order
	}
	clear(parked)
	x.parked = parked[:0]
	return e
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// next returns the entry after e in bucket order (same key first, then higher keys), or nil.
func (x *Index[T]) next(e *Entry[T]) *Entry[T] {
	if e.next != nil {
		return e.next
	}
	for c := e.key() + 1; c < len(x.buckets); c++ {
		if h := x.buckets[c].head; h != nil {
			return h
		}
	}
	return nil
}

// Adjust changes e's count by delta (+1 when a connection is charged, -1 when one closes
// without leaving a recent unit). An indexed entry moves behind the entries of its new load.
func (x *Index[T]) Adjust(e *Entry[T], delta int) { x.move(e, delta, 0) }

// Finish turns one unit of e's count into a recent unit: the connection closed or the
// statement ended, and the unit counts at its recent cost until Expire forgets it. An indexed
// entry moves behind the entries of its new load.
func (x *Index[T]) Finish(e *Entry[T]) { x.move(e, -1, +1) }

// Expire forgets one of e's recent units (Finish): an indexed entry moves behind the entries
// of its new load. Expiring an entry with no recent unit does nothing.
func (x *Index[T]) Expire(e *Entry[T]) {
	if e.recent > 0 {
		x.move(e, 0, -1)
	}
}

// move changes e's count by dc and its recent units by dr, re-ordering an indexed entry.
func (x *Index[T]) move(e *Entry[T], dc, dr int) {
	switch {
	case !e.indexed:
		e.count += dc
		e.recent += dr
	case x.weighted > 0:
		e.count += dc
		e.recent += dr
		x.seq++
		e.seq = x.seq
		x.heap[e.pos].load(e)
		x.fix(e.pos)
	default:
		x.unlink(e)
		e.count += dc
		e.recent += dr
		x.link(e)
		if l := e.key(); l < x.min {
			x.min = l
		}
		x.advanceMin()
	}
}

// SetWeights gives e weight w and recent cost c, each from 1 to MaxWeight (values outside are
// clamped; Unit for an unweighted entry at full speed). An indexed entry keeps its place among
// equal loads only if its load and weight are unchanged; otherwise it moves to where they put
// it.
func (x *Index[T]) SetWeights(e *Entry[T], w, c int64) {
	w = min(max(w, 1), MaxWeight)
	c = min(max(c, 1), MaxWeight)
	if w == e.Weight() && c == e.Cost() {
		return
	}
	if !e.indexed {
		e.weight, e.cost = w, c
		return
	}
	if e.unit() != (w == Unit && c == Unit) {
		x.Remove(e)
		e.weight, e.cost = w, c
		x.Insert(e)
		return
	}
	e.weight, e.cost = w, c // both weighted: heap mode
	x.heap[e.pos].load(e)
	x.fix(e.pos)
}

// SetWeight gives e weight w, keeping its recent cost (see SetWeights).
func (x *Index[T]) SetWeight(e *Entry[T], w int64) { x.SetWeights(e, w, e.Cost()) }

func (x *Index[T]) link(e *Entry[T]) {
	c := e.key()
	for len(x.buckets) <= c {
		x.buckets = append(x.buckets, bucket[T]{})
	}
	b := &x.buckets[c]
	e.prev, e.next = b.tail, nil
	if b.tail != nil {
		b.tail.next = e
	} else {
		b.head = e
	}
	b.tail = e
	e.indexed = true
}

func (x *Index[T]) unlink(e *Entry[T]) {
	b := &x.buckets[e.key()]
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		b.tail = e.prev
	}
	e.prev, e.next, e.indexed = nil, nil, false
}

// advanceMin moves min up to the lowest non-empty bucket. After a move the scan stops within
// FlightUnits buckets (where the moved entry went) at most; only an entry leaving the index
// can make it scan further, over empty buckets up to the next key in use.
func (x *Index[T]) advanceMin() {
	for x.min < len(x.buckets) && x.buckets[x.min].head == nil {
		x.min++
	}
}
