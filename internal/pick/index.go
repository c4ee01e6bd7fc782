// Package pick is lbd's pick index: it finds the least-loaded node for a new physical
// connection in O(1) without allocating, however many nodes there are.
package pick

// Entry is one node's place in an Index: the count the index orders by (open connections for
// one index, connections in use for another) and its list links. The owner embeds it and keeps
// Value pointing back at itself.
type Entry[T any] struct {
	Value      T
	count      int
	prev, next *Entry[T]
	indexed    bool
}

// Count returns the entry's count, whether or not the entry is in an Index.
func (e *Entry[T]) Count() int { return e.count }

// Indexed reports whether the entry is in an Index (its node takes new connections).
func (e *Entry[T]) Indexed() bool { return e.indexed }

// Index orders entries by count so that the least-loaded one is found, charged and re-ordered
// in O(1): entries with the same count share a bucket (an intrusive FIFO list), and min tracks
// the lowest non-empty bucket. A charged entry moves to the tail of the next bucket, so entries
// with equal counts take turns. Counts of entries outside the index (down or draining nodes)
// still change through Adjust, so they survive leaving and re-joining.
//
// Index is not safe for concurrent use: the owner guards it with its own mutex. Buckets grow
// with the highest count seen and are then reused, so the steady state allocates nothing.
type Index[T any] struct {
	buckets []bucket[T]
	min     int // lowest non-empty bucket; meaningful only when size > 0
	size    int
}

type bucket[T any] struct{ head, tail *Entry[T] }

// Len returns how many entries are in the index.
func (x *Index[T]) Len() int { return x.size }

// Insert adds e, which must not be in the index, behind the entries with the same count.
func (x *Index[T]) Insert(e *Entry[T]) {
	x.link(e)
	if x.size == 0 || e.count < x.min {
		x.min = e.count
	}
	x.size++
}

// Remove takes e, which must be in the index, out of it.
func (x *Index[T]) Remove(e *Entry[T]) {
	x.unlink(e)
	x.size--
	if x.size > 0 {
		x.advanceMin()
	}
}

// First returns the least-loaded entry without charging it, or nil when the index is empty.
func (x *Index[T]) First() *Entry[T] {
	if x.size == 0 {
		return nil
	}
	return x.buckets[x.min].head
}

// Next returns the entry after e in pick order (same count first, then higher counts), or nil.
// It serves the retry path, which skips entries already tried.
func (x *Index[T]) Next(e *Entry[T]) *Entry[T] {
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
// indexed entry moves to the tail of its new bucket.
func (x *Index[T]) Adjust(e *Entry[T], delta int) {
	if !e.indexed {
		e.count += delta
		return
	}
	x.unlink(e)
	e.count += delta
	x.link(e)
	if e.count < x.min {
		x.min = e.count
	}
	x.advanceMin()
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
