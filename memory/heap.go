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
	// cow, while a snapshot capture is walking this heap, keeps its order
	// as of the boundary (cow.go).
	cow *heapCOW
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
	h.writing(len(h.items))
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
	last := len(h.items) - 1
	if i != last {
		h.writing(i)
		h.items[i] = h.items[last]
		h.items[i].u.heapIdx = int32(i)
	}
	h.writing(last)
	h.items[last] = heapEntry{}
	h.items = h.items[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	u.heapIdx = -1
	if cap(h.items) > 1024 && len(h.items) < cap(h.items)/4 {
		h.items = append([]heapEntry(nil), h.items...)
	}
}

// fix restores the order after u's sort key changed.
func (h *unitHeap) fix(u *unit) {
	i := int(u.heapIdx)
	h.writing(i)
	h.items[i] = h.entry(u)
	if !h.down(i) {
		h.up(i)
	}
}

// placeAt puts u at the position it records (unit.heapIdx), as a
// snapshot captured it, growing the heap up to that position; positions
// must be below limit. It reports false if the position is out of range
// or taken. The caller places every unit, then checks that no position
// was left empty (Len equals the number placed, or closeUp) before using
// the heap.
func (h *unitHeap) placeAt(u *unit, limit int) bool {
	i := int(u.heapIdx)
	if i < 0 || i >= limit {
		return false
	}
	if n := len(h.items); i >= n {
		if i >= cap(h.items) {
			grown := make([]heapEntry, n, min(max(2*cap(h.items), i+1), limit))
			copy(grown, h.items)
			h.items = grown
		}
		h.items = h.items[:i+1]
		clear(h.items[n:])
	} else if h.items[i].u != nil {
		return false
	}
	h.items[i] = h.entry(u)
	return true
}

// closeUp removes the positions placeAt left empty and re-establishes the
// heap order (for units dropped while restoring).
func (h *unitHeap) closeUp() {
	k := 0
	for _, e := range h.items {
		if e.u != nil {
			h.items[k] = e
			e.u.heapIdx = int32(k)
			k++
		}
	}
	clear(h.items[k:])
	h.items = h.items[:k]
	for i := k/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// writing must be called before h.items[i] is stored to (or appended, i
// being the length).
func (h *unitHeap) writing(i int) {
	if c := h.cow; c != nil && i < c.n && i >= c.walked {
		c.save(h.items, i)
	}
}

// heapCOW keeps a heap's order as of a snapshot boundary while the capture
// walks its positions (cow.go): the first time a position the walk has not
// reached yet is overwritten, the unit pointers of its page are saved.
type heapCOW struct {
	n      int       // the heap's size at the boundary
	walked int       // positions below this are captured: no need to keep them
	pages  [][]*unit // saved pages of heapPage positions; nil: unchanged since the boundary
}

// heapPage is how many positions a heapCOW page holds.
const heapPage = 4096

func newHeapCOW(h *unitHeap) *heapCOW {
	n := len(h.items)
	return &heapCOW{n: n, pages: make([][]*unit, (n+heapPage-1)/heapPage)}
}

// save keeps the page of position i, as items still has it.
func (c *heapCOW) save(items []heapEntry, i int) {
	k := i / heapPage
	if c.pages[k] != nil {
		return
	}
	lo := k * heapPage
	pg := make([]*unit, min(heapPage, c.n-lo))
	for j := range pg {
		pg[j] = items[lo+j].u
	}
	c.pages[k] = pg
}

// at returns the unit at position p at the boundary; items is the heap's
// current slice. A page not saved has not been written since: shrinking
// the heap below a position writes it first (remove).
func (c *heapCOW) at(items []heapEntry, p int) *unit {
	if pg := c.pages[p/heapPage]; pg != nil {
		return pg[p%heapPage]
	}
	return items[p].u
}

// advance records that positions below p are captured, dropping the pages
// no longer needed.
func (c *heapCOW) advance(p int) {
	for k := c.walked / heapPage; k < p/heapPage; k++ {
		c.pages[k] = nil
	}
	c.walked = p
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
		h.writing(i)
		h.items[i] = h.items[p]
		h.items[i].u.heapIdx = int32(i)
		i = p
	}
	h.writing(i)
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
		h.writing(i)
		h.items[i] = h.items[m]
		h.items[i].u.heapIdx = int32(i)
		i = m
	}
	h.writing(i)
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
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.key < b.key
}
