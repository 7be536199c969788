package memory

// indexedHeap is a binary min-heap of pointers that keeps each element's
// position in the element (setHeapIndex; -1 once removed), so an element
// can be fixed or removed in O(log n) when its key changes. It orders the
// specs with something due (due.go) and the workers by expiry
// (workers.go). Units have their own heap (heap.go), which keeps the sort
// keys by value. It sifts itself rather than going through container/heap,
// whose Less and Swap would each add an indirect call to the element's
// methods.
type indexedHeap[E heapElem[E]] []E

// heapElem is what an indexedHeap needs of its elements.
type heapElem[E any] interface {
	before(E) bool // sorts before the other element
	setHeapIndex(int)
}

// push adds e.
func (h *indexedHeap[E]) push(e E) {
	*h = append(*h, e)
	e.setHeapIndex(len(*h) - 1)
	h.up(len(*h) - 1)
}

// remove takes out the element at position i.
func (h *indexedHeap[E]) remove(i int) {
	old := *h
	last := len(old) - 1
	e := old[i]
	if i != last {
		old[i] = old[last]
		old[i].setHeapIndex(i)
	}
	var zero E
	old[last] = zero
	*h = old[:last]
	if i != last && !h.down(i) {
		h.up(i)
	}
	e.setHeapIndex(-1)
}

// fix restores the order after the key of the element at i changed.
func (h indexedHeap[E]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h indexedHeap[E]) up(j int) {
	e := h[j]
	for j > 0 {
		i := (j - 1) / 2
		if !e.before(h[i]) {
			break
		}
		h[j] = h[i]
		h[j].setHeapIndex(j)
		j = i
	}
	h[j] = e
	e.setHeapIndex(j)
}

// down sifts the element at i0 down and reports whether it moved.
func (h indexedHeap[E]) down(i0 int) bool {
	e, i := h[i0], i0
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(e) {
			break
		}
		h[i] = h[c]
		h[i].setHeapIndex(i)
		i = c
	}
	h[i] = e
	e.setHeapIndex(i)
	return i > i0
}
