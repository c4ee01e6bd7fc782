// Package pick is lbd's pick index: it finds the least-loaded node for a new physical
// connection without allocating, in O(1) while every node has the same weight and in
// O(log n) otherwise, however many nodes there are.
//
// It is the bottom layer of lbd's one-way imports (the root package lbd → internal/logical →
// internal/physical → internal/nodetable → internal/pick) and imports none of them.
//
// # Two orders
//
// While every indexed entry has the unit weight (no weights from the node source, no node
// warming up: the common case), least-loaded means lowest count, and entries live in buckets
// by count: pick, charge and release are O(1).
//
// Weighted least-connections orders by (count+1)/weight: the entry that, charged once more,
// would hold the smallest share of its weight (Envoy's and HAProxy's weighted least-request
// rule, in connections). That order is not a small integer, and a warming node's weight moves
// in fine steps, so buckets by count no longer work; buckets by weight class would need a
// scan over the classes per pick, and classes multiply with warm-up steps. A min-heap keyed
// by (count+1)/weight, compared by cross-multiplication in integers (no float rounding between
// equal shares), is O(log n) for every operation and bounded by nothing but n; it is 4-ary and
// its slots hold a copy of each entry's load, so sifting reads contiguous memory (heap.go). So
// the index switches to the heap while at least one indexed entry has another weight, and
// back to the buckets when none has: a switch is O(n log n) once, on a weight change, never
// on a pick. Ties in the heap go to the entry charged or released longest ago, so equal
// shares take turns as equal counts do in the buckets.
package pick

// Entry is one node's place in an Index: the count the index orders by (open connections for
// one index, connections in use for another) and its list links. The owner embeds it and keeps
// Value pointing back at itself.
type Entry[T comparable] struct {
	Value      T
	count      int
	prev, next *Entry[T]
	indexed    bool
	weight     int64  // 0 means Unit
	pos        int    // place in the heap, while the index is in heap mode
	seq        uint64 // when the entry was last charged, released or inserted; heap ties go to the oldest
}

// Unit is the weight of an entry that has none of its own: a node of weight 1, fully warm.
// Weights are relative to it, so a weight of 2*Unit holds twice the connections.
const Unit int64 = 1000

// MaxWeight bounds a weight so that (count+1)*weight cannot overflow for any count below 2^31.
const MaxWeight int64 = 1 << 31

// Weight returns the entry's weight (Unit when none was set).
func (e *Entry[T]) Weight() int64 {
	if e.weight == 0 {
		return Unit
	}
	return e.weight
}

func (e *Entry[T]) unit() bool { return e.weight == 0 || e.weight == Unit }

// Count returns the entry's count, whether or not the entry is in an Index.
func (e *Entry[T]) Count() int { return e.count }

// Indexed reports whether the entry is in an Index (its node takes new connections).
func (e *Entry[T]) Indexed() bool { return e.indexed }

// Index orders entries so that the least-loaded one is found, charged and re-ordered without
// allocating. In bucket mode (every indexed entry of unit weight) entries with the same count
// share a bucket (an intrusive FIFO list), min tracks the lowest non-empty bucket, and a
// charged entry moves to the tail of the next bucket, so entries with equal counts take turns:
// O(1). In heap mode (some entry weighted) they sit in a min-heap by (count+1)/weight: O(log n).
// Counts and weights of entries outside the index (down or draining nodes) still change
// through Adjust and SetWeight, so they survive leaving and re-joining.
//
// Index is not safe for concurrent use: the owner guards it with its own mutex. Buckets and
// the heap grow with the highest count and the number of entries seen and are then reused,
// so the steady state allocates nothing.
type Index[T comparable] struct {
	buckets []bucket[T]
	min     int // lowest non-empty bucket; meaningful only when size > 0 in bucket mode
	size    int

	weighted int         // indexed entries whose weight is not Unit: heap mode while > 0
	heap     []slot[T]   // heap mode: every indexed entry, a 4-ary min-heap by (count+1)/weight
	seq      uint64      // source of Entry.seq
	parked   []*Entry[T] // FirstNotIn's scratch in heap mode, reused
}

type bucket[T comparable] struct{ head, tail *Entry[T] }

// Len returns how many entries are in the index.
func (x *Index[T]) Len() int { return x.size }

// Weighted reports whether the index is in heap mode: some indexed entry has a weight other
// than Unit.
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
	if x.size == 1 || e.count < x.min {
		x.min = e.count
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
		x.putBack(p) // same count, weight and seq: the same place in the order
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

// next returns the entry after e in bucket order (same count first, then higher counts), or nil.
func (x *Index[T]) next(e *Entry[T]) *Entry[T] {
	if e.next != nil {
		return e.next
	}
	for c := e.count + 1; c < len(x.buckets); c++ {
		if h := x.buckets[c].head; h != nil {
			return h
		}
	}
	return nil
}

// Adjust changes e's count by delta (+1 when a connection is charged, -1 when one closes). An
// indexed entry moves behind the entries of its new load.
func (x *Index[T]) Adjust(e *Entry[T], delta int) {
	switch {
	case !e.indexed:
		e.count += delta
	case x.weighted > 0:
		e.count += delta
		x.seq++
		e.seq = x.seq
		x.heap[e.pos].load(e)
		x.fix(e.pos)
	default:
		x.unlink(e)
		e.count += delta
		x.link(e)
		if e.count < x.min {
			x.min = e.count
		}
		x.advanceMin()
	}
}

// SetWeight gives e weight w, from 1 to MaxWeight (values outside are clamped; Unit for an
// unweighted entry). An indexed entry keeps its place among equal loads only if its load is
// unchanged; otherwise it moves to where its new weight puts it.
func (x *Index[T]) SetWeight(e *Entry[T], w int64) {
	w = min(max(w, 1), MaxWeight)
	if w == e.Weight() {
		return
	}
	if !e.indexed {
		e.weight = w
		return
	}
	if e.unit() != (w == Unit) {
		x.Remove(e)
		e.weight = w
		x.Insert(e)
		return
	}
	e.weight = w // both weighted: heap mode
	x.heap[e.pos].load(e)
	x.fix(e.pos)
}

func (x *Index[T]) link(e *Entry[T]) {
	c := e.count
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
	b := &x.buckets[e.count]
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

// advanceMin moves min up to the lowest non-empty bucket. After a charge the scan stops at the
// very next bucket (where the charged entry went); only an entry leaving the index can make it
// scan further, over empty buckets up to the next count in use.
func (x *Index[T]) advanceMin() {
	for x.min < len(x.buckets) && x.buckets[x.min].head == nil {
		x.min++
	}
}
