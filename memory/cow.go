package memory

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Capturing a snapshot without stopping the world (docs/persistence.md,
// "Snapshots").
//
// A snapshot must hold every unit as it was at the journal boundary, but
// copying millions of units under the namespace lock would stall every
// client for seconds. So only the small parts of the state (specs,
// workers, groups) are copied at the boundary; the units are copied
// afterwards, a chunk at a time under short lock holds, with copy-on-write
// keeping the boundary's view:
//
//   - At the boundary the state's snapParity flips, which makes every
//     existing unit "unsettled" (unit.snapMark != snapParity) in O(1).
//     Units created later are born settled: they are not in the snapshot.
//   - Before any op changes a field of an unsettled unit that a snapshot
//     holds (state.touch, called by every place such fields change), its
//     value is saved as a pre-image and the unit becomes settled.
//   - The copier walks each spec's unit map, copying the unsettled units
//     and settling them; it releases the lock every chunk of units.
//     Go map iteration tolerates changes between steps: a unit deleted
//     before the walk reaches it is not produced (its pre-image was saved
//     when it was removed), one added meanwhile may be (it is settled, so
//     skipped).
//   - At the end the pre-images join the copies: every unit that existed
//     at the boundary is in the snapshot exactly once, as it was then.
//
// Heap positions are not kept consistent by copy-on-write (sifting moves
// other units), so the copies are laid out into valid heaps again
// (layoutHeaps): where nothing moved during the capture, that is the live
// layout itself. A heap's order is total (priority or time, then key), so
// the layout never changes what is handed out.

// captureChunk is how many units the copier handles per lock hold by
// default: a few tens of microseconds.
const captureChunk = 1024

// cowCapture is the copy-on-write side of a capture under way.
type cowCapture struct {
	saved []unit // pre-images, ext deep-copied
}

// touch must be called before a unit field that snapshots hold changes: it
// saves the unit's value for the capture under way, once.
func (s *state) touch(u *unit) {
	if s.cow != nil && u.snapMark != s.snapParity {
		s.cow.saved = append(s.cow.saved, frozenCopy(u))
		u.snapMark = s.snapParity
	}
}

// frozenCopy copies u, deep-copying ext, which ops change in place (unit
// data is never changed in place, so it is shared).
func frozenCopy(u *unit) unit {
	c := *u
	if u.ext != nil {
		ext := *u.ext
		ext.deps = slices.Clone(ext.deps)
		c.ext = &ext
	}
	return c
}

// capture is one namespace's snapshot being taken.
type capture struct {
	ns    *namespace
	st    *state
	out   *capturedNamespace // specs, workers and groups as of the boundary
	specs []*spec            // the live specs, in out.specs order
	start []int              // where each spec's units begin in out.units
	fill  []int              // how many of them are copied so far
	extra int                // units that did not fit their spec's count (a bug)
	chunk int                // units per lock hold
	saved int                // pre-images taken (units changed during the capture)
}

// beginCapture starts capturing ns at the boundary; the caller holds
// ns.mu. It copies all but the units: O(specs + workers + groups).
func beginCapture(ns *namespace, chunk int) *capture {
	s := ns.st
	c := &capture{ns: ns, st: s, chunk: max(chunk, 1), out: &capturedNamespace{name: ns.name, nextLease: s.nextLease}}
	for _, name := range sortedSpecNames(s.specs) {
		sp := s.specs[name]
		c.specs = append(c.specs, sp)
		c.out.specs = append(c.out.specs, capturedSpec{
			name: sp.name, definition: sp.definition, meta: sp.meta,
			archived: sp.archived, units: len(sp.units),
		})
	}
	c.out.workers, c.out.groups = captureWorkersAndGroups(s)
	s.snapParity = !s.snapParity
	s.cow = &cowCapture{}
	return c
}

// copyUnits copies every unit the capture has not settled. The caller
// does not hold ns.mu; it is taken and released every c.chunk
// units, so clients wait at most one chunk, and between (if not nil) runs
// between two holds. It returns the longest hold.
func (c *capture) copyUnits(between func()) time.Duration {
	c.alloc()
	var longest time.Duration
	mu := &c.ns.mu
	mu.Lock()
	held := time.Now()
	c.walk(func() {
		longest = max(longest, time.Since(held))
		mu.Unlock()
		if between != nil {
			between()
		}
		runtime.Gosched()
		mu.Lock()
		held = time.Now()
	})
	longest = max(longest, time.Since(held))
	mu.Unlock()
	return longest
}

// alloc sizes the copy for the units counted at the boundary.
func (c *capture) alloc() {
	total := 0
	c.start = make([]int, len(c.specs))
	c.fill = make([]int, len(c.specs))
	for i := range c.out.specs {
		c.start[i] = total
		total += c.out.specs[i].units
	}
	c.out.units = make([]unit, total)
}

// walk copies the unsettled units of every spec, calling pause (with the
// lock held) every c.chunk units; pause may release the lock
// meanwhile.
func (c *capture) walk(pause func()) {
	s := c.st
	n := 0
	for i, sp := range c.specs {
		for _, u := range sp.units {
			if u.snapMark != s.snapParity {
				u.snapMark = s.snapParity
				c.put(i, frozenCopy(u))
			}
			if n++; n%c.chunk == 0 && pause != nil {
				pause()
			}
		}
	}
}

// put stores the boundary value of a unit of spec i.
func (c *capture) put(i int, u unit) {
	if c.fill[i] == c.out.specs[i].units {
		c.extra++
		return
	}
	u.spec = nil
	c.out.units[c.start[i]+c.fill[i]] = u
	c.fill[i]++
}

// finish ends copy-on-write (taking ns.mu), adds the pre-images to the
// copies and lays out the heaps. Call it exactly once after beginCapture
// and copyUnits: a capture must walk every unit, even one given up, since
// the next capture's parity flip counts on every unit carrying this one's
// mark.
func (c *capture) finish() (*capturedNamespace, error) {
	c.ns.mu.Lock()
	saved := c.st.cow.saved
	c.st.cow = nil
	c.ns.mu.Unlock()
	c.saved = len(saved)
	return c.complete(saved)
}

// complete files the pre-images under their specs and checks that every
// unit of the boundary was captured once.
func (c *capture) complete(saved []unit) (*capturedNamespace, error) {
	if c.out.units == nil {
		c.alloc()
	}
	index := make(map[*spec]int, len(c.specs))
	for i, sp := range c.specs {
		index[sp] = i
	}
	for k := range saved {
		i, ok := index[saved[k].spec]
		if !ok {
			return nil, fmt.Errorf("namespace %q: unit %q of a spec created during the snapshot was saved for it", c.ns.name, saved[k].key)
		}
		c.put(i, saved[k])
	}
	for i := range c.specs {
		if want := c.out.specs[i].units; c.fill[i] != want || c.extra != 0 {
			return nil, fmt.Errorf("namespace %q spec %q: captured %d units (+%d extra) of the %d at the snapshot boundary",
				c.ns.name, c.out.specs[i].name.Bytes, c.fill[i], c.extra, want)
		}
		layoutHeaps(c.out.units[c.start[i] : c.start[i]+c.fill[i]])
	}
	return c.out, nil
}

// layoutHeaps gives one spec's captured units heap positions that form
// valid heaps: each unit keeps the position it was copied with where that
// is free, the others fill the gaps, and the heaps are then re-established
// (Floyd). When no unit moved during the capture, nothing changes.
func layoutHeaps(units []unit) {
	heaps := [...]struct {
		where uint8
		h     unitHeap
	}{
		{inAvailable, unitHeap{order: availableOrder}},
		{inDelayed, unitHeap{order: notBeforeOrder}},
		{inPending, unitHeap{order: expiresOrder}},
	}
	var sizes [inPending + 1]int
	for i := range units {
		sizes[units[i].where]++
	}
	for _, x := range heaps {
		n := sizes[x.where]
		if n == 0 {
			continue
		}
		h := x.h
		h.items = make([]heapEntry, n)
		var rest []*unit
		for i := range units {
			u := &units[i]
			if u.where != x.where {
				continue
			}
			if k := int(u.heapIdx); k >= 0 && k < n && h.items[k].u == nil {
				h.items[k] = h.entry(u)
			} else {
				rest = append(rest, u)
			}
		}
		free := 0
		for _, u := range rest {
			for h.items[free].u != nil {
				free++
			}
			h.items[free] = h.entry(u)
		}
		for i := range h.items {
			h.items[i].u.heapIdx = int32(i)
		}
		for i := n/2 - 1; i >= 0; i-- {
			h.down(i)
		}
	}
}

// captureNamespace copies ns's state at once; the caller holds ns.mu.
// Snapshot uses the incremental capture; this is for tests.
func captureNamespace(ns *namespace) *capturedNamespace {
	c := beginCapture(ns, captureChunk)
	c.alloc()
	c.walk(nil)
	saved := c.st.cow.saved
	c.st.cow = nil
	out, err := c.complete(saved)
	if err != nil {
		panic(err)
	}
	return out
}
