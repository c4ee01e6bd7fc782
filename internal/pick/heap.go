package pick

// Heap mode: a binary min-heap by (count+1)/weight, ties to the lowest seq. See the package doc
// for why a heap.

// less reports whether a goes before b: a smaller share of its weight once charged, or the same
// share and charged longer ago. Weights are at most MaxWeight, so the products fit in int64.
func less[T comparable](a, b *Entry[T]) bool {
	la := int64(a.count+1) * b.Weight()
	lb := int64(b.count+1) * a.Weight()
	if la != lb {
		return la < lb
	}
	return a.seq < b.seq
}

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
	x.heap = append(x.heap, e)
	x.up(e.pos)
}

// heapRemove takes e out of the heap.
func (x *Index[T]) heapRemove(e *Entry[T]) {
	i, last := e.pos, len(x.heap)-1
	if i != last {
		x.swap(i, last)
	}
	x.heap[last] = nil
	x.heap = x.heap[:last]
	if i != last {
		x.fix(i)
	}
	e.indexed, e.pos = false, 0
}

// fix restores the heap order after the entry at i changed its load.
func (x *Index[T]) fix(i int) {
	if !x.down(i) {
		x.up(i)
	}
}

func (x *Index[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(x.heap[i], x.heap[p]) {
			return
		}
		x.swap(i, p)
		i = p
	}
}

// down sinks the entry at i and reports whether it moved.
func (x *Index[T]) down(i int) bool {
	start, n := i, len(x.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(x.heap[r], x.heap[l]) {
			m = r
		}
		if !less(x.heap[m], x.heap[i]) {
			break
		}
		x.swap(i, m)
		i = m
	}
	return i > start
}

func (x *Index[T]) swap(i, j int) {
	h := x.heap
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}

// toHeap moves every entry from the buckets to the heap, in bucket order, so that the order
// among equal counts carries over.
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
		e := x.heap[0]
		x.heapRemove(e)
		x.link(e)
	}
	x.min = 0
	if x.size > 0 {
		x.advanceMin()
	}
}
