package memory

import (
	"container/heap"
	"slices"

	"github.com/coordinated/coordinated/coordinate"
)

// Listing the best units of a status without a scan of the spec: the
// AVAILABLE heap is already in listing order (priority descending, then
// key: availableOrder with heapEntry.before), so its first k units are
// read by a best-first walk of the heap in O(k log k). Delayed and
// PENDING units live in heaps of their own (by time, not listing order),
// which are scanned; BLOCKED, FINISHED and FAILED units are in no heap, so
// listing them still scans the spec.

// heapStatusesOnly reports whether every status listed lives in a heap.
func heapStatusesOnly(statuses []coordinate.Status) bool {
	for _, s := range statuses {
		if s != coordinate.StatusAvailable && s != coordinate.StatusPending {
			return false
		}
	}
	return len(statuses) > 0
}

// selectFromHeaps is selectUnits for a listing by heapStatusesOnly
// statuses with a limit: the same units in the same order. It reads the
// delayed and pending heaps whole (listUnits calls it only while they are
// small) and the available heap's best limit units.
func selectFromHeaps(sp *spec, statuses []coordinate.Status, start string, limit int) []*unit {
	keep := func(u *unit) bool { return u.key >= start }
	var best []*unit
	var scanned []*unitHeap
	if slices.Contains(statuses, coordinate.StatusAvailable) {
		best = topOfHeap(&sp.available, keep, limit)
		scanned = append(scanned, &sp.delayed)
	}
	if slices.Contains(statuses, coordinate.StatusPending) {
		scanned = append(scanned, &sp.pending)
	}
	rest := selectUnits(func(yield func(*unit) bool) {
		for _, h := range scanned {
			for i := range h.items {
				if !yield(h.items[i].u) {
					return
				}
			}
		}
	}, keep, availableFirst, limit)
	same := func(u *unit) *unit { return u }
	return mergeBest(best, rest, limit, availableFirst, same, same)
}

// mergeBest merges a and b, each best first, into their best limit items:
// a's first goes before b's when aFirst says so. fromA and fromB give the
// items out. The one merge of a heap's top with the rest of a listing
// (selectFromHeaps, listByPriority).
func mergeBest[A, B, T any](a []A, b []B, limit int, aFirst func(A, B) bool, fromA func(A) T, fromB func(B) T) []T {
	out := make([]T, 0, min(limit, len(a)+len(b)))
	for len(out) < limit && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || len(a) > 0 && aFirst(a[0], b[0]) {
			out, a = append(out, fromA(a[0])), a[1:]
		} else {
			out, b = append(out, fromB(b[0])), b[1:]
		}
	}
	return out
}

// topOfHeap returns the first limit units of h that pass keep, in h's
// order, visiting O(limit + skipped) entries.
func topOfHeap(h *unitHeap, keep func(*unit) bool, limit int) []*unit {
	if len(h.items) == 0 || limit <= 0 {
		return nil
	}
	frontier := &heapFrontier{h: h, idx: []int{0}}
	var out []*unit
	for frontier.Len() > 0 && len(out) < limit {
		i := heap.Pop(frontier).(int)
		if u := h.items[i].u; keep(u) {
			out = append(out, u)
		}
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				heap.Push(frontier, c)
			}
		}
	}
	return out
}

// heapFrontier is a container/heap of indexes into h, least entry first.
type heapFrontier struct {
	h   *unitHeap
	idx []int
}

func (f *heapFrontier) Len() int           { return len(f.idx) }
func (f *heapFrontier) Less(i, j int) bool { return f.h.items[f.idx[i]].before(&f.h.items[f.idx[j]]) }
func (f *heapFrontier) Swap(i, j int)      { f.idx[i], f.idx[j] = f.idx[j], f.idx[i] }
func (f *heapFrontier) Push(x any)         { f.idx = append(f.idx, x.(int)) }
func (f *heapFrontier) Pop() any {
	x := f.idx[len(f.idx)-1]
	f.idx = f.idx[:len(f.idx)-1]
	return x
}
