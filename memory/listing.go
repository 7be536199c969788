package memory

import (
	"container/heap"
	"slices"
)

// selectUnits returns the units of a spec that pass keep, in the order
// of less, at most limit of them (limit <= 0: all). With a limit it keeps
// only the best limit units while scanning, so a small page of a huge spec
// costs O(n log limit) time and O(limit) memory.
func selectUnits(units map[string]*unit, keep func(*unit) bool, less func(a, b *unit) bool, limit int) []*unit {
	cmp := func(a, b *unit) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
	if limit <= 0 {
		var out []*unit
		for _, u := range units {
			if keep(u) {
				out = append(out, u)
			}
		}
		slices.SortFunc(out, cmp)
		return out
	}
	// worst is a max-heap (under less) of the best units seen so far.
	worst := &boundedHeap{less: less}
	for _, u := range units {
		if !keep(u) {
			continue
		}
		if len(worst.items) < limit {
			heap.Push(worst, u)
		} else if less(u, worst.items[0]) {
			worst.items[0] = u
			heap.Fix(worst, 0)
		}
	}
	slices.SortFunc(worst.items, cmp)
	return worst.items
}

// boundedHeap is a container/heap max-heap under less. It does not touch
// unit.heapIdx (the units stay in their own heaps).
type boundedHeap struct {
	items []*unit
	less  func(a, b *unit) bool
}

func (h *boundedHeap) Len() int           { return len(h.items) }
func (h *boundedHeap) Less(i, j int) bool { return h.less(h.items[j], h.items[i]) }
func (h *boundedHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *boundedHeap) Push(x any)         { h.items = append(h.items, x.(*unit)) }
func (h *boundedHeap) Pop() any {
	u := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return u
}

// keyOrder: key bytes ascending (listings without a status filter).
func keyOrder(a, b *unit) bool { return a.key < b.key }
