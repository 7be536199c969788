package memory

import (
	"container/heap"
	"context"
	"iter"
	"slices"

	"github.com/coordinated/coordinated/coordinate"
)

// Listing units (ListWorkUnits) without holding the namespace lock for
// longer than a chunk, at any spec size (docs/architecture.md, "Listing
// units without stalling the namespace"):
//
//   - By key (no status, or KeyOrder): a walk of the key index from Start
//     (keyindex.go), O(log n + units read), letting other calls through
//     every keyChunk units read when few match a status filter.
//   - By priority, AVAILABLE and/or PENDING with a limit, while the limit
//     and the delayed and pending heaps are at most heapScanMax units:
//     from the heaps (listtop.go), O(limit log limit + delayed + pending).
//   - By priority otherwise: the same walk, keeping the best Limit units
//     seen (O(n) work, but a chunk per lock hold), merged with the best
//     AVAILABLE units read from their heap at the end.
//
// A listing that lets go of the lock is not a point-in-time view: each
// unit is as it was when read; keys come in order and at most once, and
// every unit that kept a listed status throughout is listed (within
// Limit).

// heapScanMax bounds the delayed and pending units a listing from the
// heaps reads in one lock hold (about a millisecond); with more, it walks
// the key index instead (namespace.heapScanMax, which tests lower).
const heapScanMax = 16 * keyChunk

// listUnits answers ListWorkUnits; the caller holds ns.mu (see yieldLock).
func (ns *namespace) listUnits(ctx context.Context, sp *spec, q coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	switch {
	case len(q.Statuses) == 0 || q.KeyOrder:
		return ns.listByKey(ctx, sp, q)
	case q.Limit > 0 && q.Limit <= ns.heapScanMax && heapStatusesOnly(q.Statuses) &&
		sp.delayed.Len()+sp.pending.Len() <= ns.heapScanMax:
		found := selectFromHeaps(sp, q.Statuses, q.Start, q.Limit) // listtop.go
		out := make([]*coordinate.WorkUnit, len(found))
		for i, u := range found {
			out[i] = unitView(u)
		}
		return withinBytes(out, q.MaxBytes), nil
	default:
		return ns.listByPriority(ctx, sp, q)
	}
}

// listByKey lists the units of q's statuses (any without) by key.
func (ns *namespace) listByKey(ctx context.Context, sp *spec, q coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	var out []*coordinate.WorkUnit
	var used int64
	err := ns.walkKeys(ctx, sp, q.Start, func(u *unit) bool {
		if len(q.Statuses) > 0 && !slices.Contains(q.Statuses, u.status) {
			return true
		}
		if !coordinate.WithinBytes(used, int64(len(u.data)), q.MaxBytes, len(out) == 0) {
			return false
		}
		used += int64(len(u.data))
		out = append(out, unitView(u))
		return q.Limit <= 0 || len(out) < q.Limit
	})
	return out, err
}

// listByPriority lists the units of q's statuses by priority, then key.
// With a limit up to heapScanMax, the runnable AVAILABLE units come from
// their heap, read last (in the final lock hold), and the walk skips them.
func (ns *namespace) listByPriority(ctx context.Context, sp *spec, q coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	fromHeap := q.Limit > 0 && q.Limit <= ns.heapScanMax && slices.Contains(q.Statuses, coordinate.StatusAvailable)
	best := topK[*coordinate.WorkUnit]{limit: q.Limit, less: viewFirst}
	err := ns.walkKeys(ctx, sp, q.Start, func(u *unit) bool {
		if slices.Contains(q.Statuses, u.status) && !(fromHeap && u.where == inAvailable) &&
			(best.room() || unitBeforeView(u, best.worst())) {
			best.add(unitView(u))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	walked := best.sorted()
	if !fromHeap {
		return withinBytes(walked, q.MaxBytes), nil
	}
	top := topOfHeap(&sp.available, func(u *unit) bool { return u.key >= q.Start }, q.Limit)
	// A unit read by the walk may have become runnable since: its heap
	// entry, read now, wins.
	inTop := make(map[string]bool, len(top))
	for _, u := range top {
		inTop[u.key] = true
	}
	walked = slices.DeleteFunc(walked, func(w *coordinate.WorkUnit) bool { return inTop[w.Key.Bytes] })
	out := mergeBest(top, walked, q.Limit, unitBeforeView, unitView, func(w *coordinate.WorkUnit) *coordinate.WorkUnit { return w })
	return withinBytes(out, q.MaxBytes), nil
}

// withinBytes cuts units at the first whose data would pass maxBytes
// (coordinate.WithinBytes).
func withinBytes(units []*coordinate.WorkUnit, maxBytes int64) []*coordinate.WorkUnit {
	var used int64
	for i, u := range units {
		if !coordinate.WithinBytes(used, int64(len(u.Data)), maxBytes, i == 0) {
			return units[:i]
		}
		used += int64(len(u.Data))
	}
	return units
}

// viewFirst is availableFirst for listed units.
func viewFirst(a, b *coordinate.WorkUnit) bool {
	return priorityFirst(a.Priority, a.Key.Bytes, b.Priority, b.Key.Bytes)
}

// unitBeforeView is availableFirst between a unit and a listed unit.
func unitBeforeView(u *unit, w *coordinate.WorkUnit) bool {
	return priorityFirst(u.priority, u.key, w.Priority, w.Key.Bytes)
}

// selectUnits returns the units that pass keep, in the order of less, at
// most limit of them (limit <= 0: all). With a limit it keeps only the
// best limit units while scanning, so a small page of many units costs
// O(n log limit) time and O(limit) memory.
func selectUnits(units iter.Seq[*unit], keep func(*unit) bool, less func(a, b *unit) bool, limit int) []*unit {
	best := topK[*unit]{limit: limit, less: less}
	for u := range units {
		if keep(u) && (best.room() || less(u, best.worst())) {
			best.add(u)
		}
	}
	return best.sorted()
}

// topK keeps the best limit items added (limit <= 0: all) under less:
// with a limit, a max-heap of them whose root is the worst kept.
type topK[T any] struct {
	limit int
	less  func(a, b T) bool
	items []T
}

// room reports whether the next item is kept whatever it is.
func (h *topK[T]) room() bool { return h.limit <= 0 || len(h.items) < h.limit }

// worst is the worst item kept; only when !room().
func (h *topK[T]) worst() T { return h.items[0] }

// add keeps x, dropping the worst item if there is no room (x must sort
// before it then).
func (h *topK[T]) add(x T) {
	switch {
	case h.limit <= 0:
		h.items = append(h.items, x)
	case len(h.items) < h.limit:
		heap.Push(h, x)
	default:
		h.items[0] = x
		heap.Fix(h, 0)
	}
}

// sorted returns the items kept, best first.
func (h *topK[T]) sorted() []T {
	slices.SortFunc(h.items, func(a, b T) int {
		switch {
		case h.less(a, b):
			return -1
		case h.less(b, a):
			return 1
		}
		return 0
	})
	return h.items
}

// container/heap methods: a max-heap under less. It does not touch
// unit.heapIdx (the units stay in their own heaps).
func (h *topK[T]) Len() int           { return len(h.items) }
func (h *topK[T]) Less(i, j int) bool { return h.less(h.items[j], h.items[i]) }
func (h *topK[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *topK[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *topK[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
