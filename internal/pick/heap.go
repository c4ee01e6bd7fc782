package pick

// Heap mode: a 4-ary min-heap by load/weight, ties to the lowest seq. See the package doc
// for why a heap. Each slot carries a copy of its entry's load, so that sifting compares
// contiguous memory instead of chasing a pointer per comparison (at 50 000 nodes the entries
// do not fit in the caches the slots fit in), and four children per node halve the depth for
// one more cache line of children per level.

// slot is one place in the heap: the entry and the copy of its load the order is kept by.
type slot[T comparable] struct {
	num    uint64 // Entry.load
	weight uint64
	seq    uint64
	e      *Entry[T]
}

// load copies e's load into s.
func (s *slot[T]) load(e *Entry[T]) {
	s.num, s.weight, s.seq, s.e = e.load(), uint64(e.Weight()), e.seq, e
}

// before reports whether a goes before b: a smaller load for its weight, or the same and moved
// longer ago.
func before[T comparable](a, b *slot[T]) bool {
	if c := lighter(a.num, a.weight, b.num, b.weight); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

const arity = 4

// push adds e to the heap, behind the entries of equal load.
func (x *Index[T]) push(e *Entry[T]) {
	x.seq++
	e.seq = x.seq
	x.putBack(e)
}

// putBack adds e to the heap at the place its load and seq give it.
func (x *Index[T]) putBack(e *Entry[T]) {
	e.indexed = true
	e.pos = len(x.heap)
	x.heap = append(x.heap, slot[T]{})
	x.heap[e.pos].load(e)
	x.up(e.pos)
}

// heapRemove takes e out of the heap.
func (x *Index[T]) heapRemove(e *Entry[T]) {
	i, last := e.pos, len(x.heap)-1
	if i != last {
		x.heap[i] = x.heap[last]
		x.heap[i].e.pos = i
	}
	x.heap[last] = slot[T]{}
	x.heap = x.heap[:last]
	if i != last {
		x.fix(i)
	}
	e.indexed, e.pos = false, 0
}

// fix restores the heap order after the slot at i changed its load.
func (x *Index[T]) fix(i int) {
	if !x.down(i) {
		x.up(i)
	}
}

func (x *Index[T]) up(i int) {
	h := x.heap
	s := h[i]
	for i > 0 {
		p := (i - 1) / arity
		if !before(&s, &h[p]) {
			break
		}
		h[i] = h[p]
		h[i].e.pos = i
		i = p
	}
	h[i] = s
	s.e.pos = i
}

// down sinks the slot at i and reports whether it moved.
func (x *Index[T]) down(i int) bool {
	h := x.heap
	n := len(h)
	start := i
	s := h[i]
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < min(c+arity, n); k++ {
			if before(&h[k], &h[m]) {
				m = k
			}
		}
		if !before(&h[m], &s) {
			break
		}
		h[i] = h[m]
		h[i].e.pos = i
		i = m
	}
	h[i] = s
	s.e.pos = i
	return i > start
}

// toHeap moves every entry from the buckets to the heap, in bucket order, so that the order
// among equal loads carries over.
func (x *Index[T]) toHeap() {
	if x.size == 0 {
		return
	}
	for c := x.min; c < len(x.buckets); c++ {
		for e := x.buckets[c].head; e != nil; {
			nx := e.next
			x.unlink(e)
			x.push(e)
			e = nx
		}
	}
	x.min = 0
}

// toBuckets moves every entry from the heap to the buckets, in heap order.
func (x *Index[T]) toBuckets() {
	for len(x.heap) > 0 {
		e := x.heap[0].e
		x.heapRemove(e)
		x.link(e)
	}
	x.min = 0
	if x.size > 0 {
		x.advanceMin()
	}
}
