package memory

import (
	"encoding/binary"
	"math"
)

// unitHeap is an indexed binary min-heap of units. Each unit records its
// position (unit.heapIdx), so a unit can be removed or re-sifted in
// O(log n) when its priority or deadline changes. A unit is in at most one
// heap at a time (unit.where says which), so one index field suffices.
//
// The heap stores a heapEntry per unit by value, holding everything a
// comparison needs, so sifting through a million-unit heap touches only
// the contiguous entry slice and never loads a unit (it only stores the
// moved units' heapIdx). The entry must be refreshed (fix) whenever the
// unit's sort key changes while it is in the heap.
type unitHeap struct {
	items []heapEntry
	// order maps a unit to its primary sort key as an order-preserving
	// uint64 (smaller first): availableOrder, notBeforeOrder, expiresOrder.
	order func(*unit) uint64
}

// heapEntry is one unit's place in a unitHeap: its primary sort key, the
// first 16 bytes of its key (big-endian, zero-padded) and the unit itself.
type heapEntry struct {
	order  uint64
	k0, k1 uint64
	u      *unit
}

// before reports whether e sorts before f: by order, then by key bytes.
// The key prefix decides unless both 16-byte prefixes are equal, zero
// padding included; only then are the unit keys loaded and compared, so
// the result is exactly bytewise key order.
func (e *heapEntry) before(f *heapEntry) bool {
	if e.order != f.order {
		return e.order < f.order
	}
	if e.k0 != f.k0 {
		return e.k0 < f.k0
	}
	if e.k1 != f.k1 {
		return e.k1 < f.k1
	}
	return e.u.key < f.u.key
}

// entry builds u's entry from its current fields.
func (h *unitHeap) entry(u *unit) heapEntry {
	k0, k1 := keyPrefix(u.key)
	return heapEntry{order: h.order(u), k0: k0, k1: k1, u: u}
}

// keyPrefix returns the first 16 bytes of key as two big-endian words,
// zero-padded: comparing (k0, k1) agrees with comparing the keys whenever
// the two differ.
func keyPrefix(key string) (k0, k1 uint64) {
	var b [16]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func (h *unitHeap) Len() int { return len(h.items) }

// top returns the least unit, or nil.
func (h *unitHeap) top() *unit {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0].u
}

func (h *unitHeap) push(u *unit) {
	h.items = append(h.items, h.entry(u))
	h.up(len(h.items) - 1)
}

// pop removes and returns the least unit.
func (h *unitHeap) pop() *unit {
	u := h.items[0].u
	h.remove(u)
	return u
}

// remove takes u out of the heap.
func (h *unitHeap) remove(u *unit) {
	i := int(u.heapIdx)
	h.unload(u)
	if i < len(h.items) {
		if !h.down(i) {
			h.up(i)
		}
	}
	if cap(h.items) > 1024 && len(h.items) < cap(h.items)/4 {
		h.items = append([]heapEntry(nil), h.items...)
	}
}

// unload takes u out without restoring the heap order, in O(1): the last
// entry takes its place (recovery, like load: heapify must run before
// the heap is used).
func (h *unitHeap) unload(u *unit) {
	i := int(u.heapIdx)
	last := len(h.items) - 1
	if i != last {
		h.items[i] = h.items[last]
		h.items[i].u.heapIdx = int32(i)
	}
	h.items[last] = heapEntry{}
	h.items = h.items[:last]
	u.heapIdx = -1
}

// fix restores the order after u's sort key changed.
func (h *unitHeap) fix(u *unit) {
	i := int(u.heapIdx)
	h.items[i] = h.entry(u)
	if !h.down(i) {
		h.up(i)
	}
}

// load appends u without restoring the heap order (recovery): heapify
// must run before the heap is used.
func (h *unitHeap) load(u *unit) {
	u.heapIdx = int32(len(h.items))
	h.items = append(h.items, h.entry(u))
}

// heapify establishes the heap order over the units load appended, in
// O(n). The order is total (heapEntry.before), so what the heap hands out
// does not depend on the order the units were loaded in; only the layout
// does.
func (h *unitHeap) heapify() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// up moves entry i towards the root, shifting larger parents down into the
// hole rather than swapping at every level.
func (h *unitHeap) up(i int) {
	e := h.items[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&h.items[p]) {
			break
		}
		h.items[i] = h.items[p]
		h.items[i].u.heapIdx = int32(i)
		i = p
	}
	h.items[i] = e
	e.u.heapIdx = int32(i)
}

// down sifts entry i towards the leaves and reports whether it moved.
func (h *unitHeap) down(i int) bool {
	start := i
	n := len(h.items)
	e := h.items[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.items[r].before(&h.items[l]) {
			m = r
		}
		if !h.items[m].before(&e) {
			break
		}
		h.items[i] = h.items[m]
		h.items[i].u.heapIdx = int32(i)
		i = m
	}
	h.items[i] = e
	e.u.heapIdx = int32(i)
	return i > start
}

// Orders of the three per-spec heaps, as order-preserving uint64 primary
// keys; ties go to key bytes ascending (heapEntry.before).

// availableOrder: priority descending (SEMANTICS §5.6), the order get_work
// hands units out in.
func availableOrder(u *unit) uint64 { return ^floatOrder(u.priority) }

// notBeforeOrder: earliest not-before time first (delayed units).
func notBeforeOrder(u *unit) uint64 { return intOrder(u.notBefore) }

// expiresOrder: earliest lease expiry first (pending units).
func expiresOrder(u *unit) uint64 { return intOrder(u.expiration) }

// floatOrder maps f to a uint64 that sorts like f: negatives have all bits
// flipped, non-negatives the sign bit set. -0 maps like +0, as they compare
// equal. NaN (never stored: priorities are validated) maps somewhere
// without failing.
func floatOrder(f float64) uint64 {
	b := math.Float64bits(f)
	switch {
	case b == 1<<63: // -0
		return 1 << 63
	case b&(1<<63) != 0:
		return ^b
	default:
		return b | 1<<63
	}
}

// intOrder maps i to a uint64 that sorts like i.
func intOrder(i int64) uint64 { return uint64(i) ^ 1<<63 }

// availableFirst is the available heap's order as a comparator on units:
// priority descending, then key bytes ascending. Listings sort by it.
func availableFirst(a, b *unit) bool {
	return priorityFirst(a.priority, a.key, b.priority, b.key)
}

// priorityFirst is availableFirst's order on (priority, key) pairs, for
// comparing units with listed units too (listing.go).
func priorityFirst(pa float64, ka string, pb float64, kb string) bool {
	if pa != pb {
		return pa > pb
	}
	return ka < kb
}
