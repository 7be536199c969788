package memory

// unitHeap is an indexed binary min-heap of units under less. Each unit
// records its position (unit.heapIdx), so a unit can be removed or re-sifted
// in O(log n) when its priority or deadline changes. A unit is in at most
// one heap at a time (unit.where says which), so one index field suffices.
type unitHeap struct {
	items []*unit
	less  func(a, b *unit) bool
}

func (h *unitHeap) Len() int { return len(h.items) }

// top returns the least unit, or nil.
func (h *unitHeap) top() *unit {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *unitHeap) push(u *unit) {
	u.heapIdx = int32(len(h.items))
	h.items = append(h.items, u)
	h.up(len(h.items) - 1)
}

// pop removes and returns the least unit.
func (h *unitHeap) pop() *unit {
	u := h.items[0]
	h.remove(u)
	return u
}

// remove takes u out of the heap.
func (h *unitHeap) remove(u *unit) {
	i := int(u.heapIdx)
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	u.heapIdx = -1
	if cap(h.items) > 1024 && len(h.items) < cap(h.items)/4 {
		h.items = append([]*unit(nil), h.items...)
	}
}

// fix restores the order after u's sort key changed.
func (h *unitHeap) fix(u *unit) {
	i := int(u.heapIdx)
	if !h.down(i) {
		h.up(i)
	}
}

func (h *unitHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].heapIdx = int32(i)
	h.items[j].heapIdx = int32(j)
}

func (h *unitHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts item i down and reports whether it moved.
func (h *unitHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			m = r
		}
		if !h.less(h.items[m], h.items[i]) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

// Orders of the three per-spec heaps.

// availableFirst: priority descending, then key bytes ascending (SEMANTICS
// §5.6), the order get_work hands units out in.
func availableFirst(a, b *unit) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.key < b.key
}

// notBeforeFirst: earliest not-before time first (delayed units).
func notBeforeFirst(a, b *unit) bool {
	if a.notBefore != b.notBefore {
		return a.notBefore < b.notBefore
	}
	return a.key < b.key
}

// expiresFirst: earliest lease expiry first (pending units).
func expiresFirst(a, b *unit) bool {
	if a.expiration != b.expiration {
		return a.expiration < b.expiration
	}
	return a.key < b.key
}
