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
// client for seconds, and copying them all before writing any would double
// the memory the units take. So only the small parts of the state (specs,
// workers, groups) are copied at the boundary; the units are then walked a
// chunk at a time under short lock holds, each chunk copied, written out
// with the lock released and dropped, with copy-on-write keeping the
// boundary's view:
//
//   - At the boundary the state's snapParity flips, which makes every
//     existing unit "unsettled" (unit.snapMark != snapParity) in O(1).
//     Units created later are born settled: they are not in the snapshot.
//   - Before any op changes a field of an unsettled unit that a snapshot
//     holds (state.touch, called by every place such fields change), its
//     value is saved as a pre-image on its spec and the unit becomes
//     settled.
//   - The walk goes through each spec's heaps, position by position, then
//     (unless every unit is settled by then) its unit map: the units not
//     settled yet are copied (and settled). A heap may change between two
//     chunks, so its walk may miss a unit or meet one twice; the map walk
//     takes those missed. Go map iteration tolerates changes between
//     steps: a unit deleted before the walk reaches it is not produced
//     (its pre-image was saved when it was removed), one added meanwhile
//     may be (it is settled, so skipped).
//   - When the walk has gone through a spec, every unit of it is settled,
//     so no pre-image of it can come any more: the spec's pre-images
//     follow, and every unit that existed at the boundary is in the
//     snapshot exactly once, as it was then.
//
// Heap positions are not captured (snapshot version 4): sifts move units
// without touch, and the loader rebuilds each heap from its units.
//
// Extra memory during a snapshot is one chunk of copies and the pre-images
// of the units changed before the walk reached them.

// captureChunk is how many units the walk handles per lock hold by
// default: a few tens of microseconds.
const captureChunk = 1024

// cowCapture describes the capture under way on a state (state.cow).
type cowCapture struct {
	// delta: the capture holds only the units dirty at the boundary, those
	// still marked with epoch old (dirty.go); otherwise every unit not
	// settled (snapshot mark).
	delta bool
	old   uint8
}

// unsettled reports whether the capture has yet to take u's value.
func (c *cowCapture) unsettled(u *unit, s *state) bool {
	if c.delta {
		return u.dirtyEpoch() == c.old
	}
	return u.snapMark() != s.snapParity
}

// touch must be called before a unit field that snapshots hold changes: it
// saves the unit's value for the capture under way, once, and marks the
// unit dirty for the next delta (dirty.go).
func (s *state) touch(u *unit) {
	if s.cow != nil && s.cow.unsettled(u, s) {
		sp := u.spec
		if sp.cowSaved == nil {
			sp.cowSaved = map[*unit]*unit{}
		}
		c := frozenCopy(u)
		sp.cowSaved[u] = &c
		u.setSnapMark(s.snapParity)
	}
	s.markDirty(u)
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
	c.spec = nil
	return c
}

// capture is one namespace's snapshot being taken.
type capture struct {
	ns      *namespace
	st      *state
	out     *capturedNamespace // specs, workers and groups as of the boundary; no units
	specs   []*spec            // the live specs, in out.specs order
	delta   bool               // a delta: only the units in dirty, out.specs[i].gone
	dirty   [][]*unit          // per spec, the units dirty at the boundary (delta)
	old     uint8              // the dirty epoch before the boundary
	chunk   int                // units per lock hold
	buf     []unit             // the chunk being copied
	walked  bool               // units has run
	saved   int                // pre-images taken (units changed during the capture)
	longest time.Duration      // longest lock hold of the walk
}

// beginCapture starts capturing ns at the boundary; the caller holds
// ns.mu. It copies all but the units: O(specs + workers + groups). A delta
// capture holds only what changed since the last capture (dirty.go); a
// full one every unit. Either way the changes tracked so far are taken.
func beginCapture(ns *namespace, chunk int, delta bool) *capture {
	s := ns.st
	c := &capture{ns: ns, st: s, chunk: max(chunk, 1), delta: delta, old: s.dirtyEpoch,
		out: &capturedNamespace{name: ns.name, nextLease: s.nextLease}}
	for _, name := range sortedSpecNames(s.specs) {
		sp := s.specs[name]
		c.specs = append(c.specs, sp)
		cs := capturedSpec{
			name: sp.name, definition: sp.definition, meta: sp.meta,
			archived: sp.archived, units: len(sp.units),
		}
		if delta {
			// units is then an upper bound: dirty units deleted before
			// the boundary are not captured.
			cs.units, cs.fresh, cs.gone = len(sp.dirty), sp.fresh, sp.gone
			c.dirty = append(c.dirty, sp.dirty)
		}
		c.out.specs = append(c.out.specs, cs)
		sp.dirty, sp.gone, sp.fresh = nil, nil, false
	}
	c.out.workers, c.out.groups = captureWorkersAndGroups(s)
	s.dirtyEpoch = otherEpoch(s.dirtyEpoch)
	if !delta {
		s.snapParity = !s.snapParity
	}
	s.cow = &cowCapture{delta: delta, old: c.old}
	return c
}

// heaps returns sp's three heaps.
func (sp *spec) heaps() [3]*unitHeap {
	return [3]*unitHeap{&sp.available, &sp.delayed, &sp.pending}
}

// units walks every unit of the capture and passes the boundary values of
// spec i's units to emit(i, units), spec after spec, a chunk at a time;
// emit must not keep units after it returns. With locked false the caller
// does not hold ns.mu: it is taken, released around every emit (so emit
// may do I/O and clients wait at most one chunk) and between (if not nil)
// runs between two holds; with locked true the caller holds it throughout.
//
// It returns the first error of emit (emit is not called after it) or a
// unit count that does not match the boundary's (the snapshot is then
// unusable). Call it exactly once after beginCapture, even for a capture
// given up (emit nil): the walk must reach every unit, since the next
// capture's parity flip counts on every unit carrying this one's mark. It
// ends copy-on-write.
func (c *capture) units(locked bool, between func(), emit func(spec int, units []unit) error) error {
	if c.walked {
		return fmt.Errorf("namespace %q: snapshot units walked twice", c.ns.name)
	}
	c.walked = true
	w := &unitWalk{c: c, locked: locked, between: between, emit: emit}
	if !locked {
		c.ns.mu.Lock()
	}
	w.held = time.Now()
	for i, sp := range c.specs {
		if c.delta {
			w.deltaSpec(i, sp, c.dirty[i])
			c.dirty[i] = nil
		} else {
			w.spec(i, sp)
		}
	}
	c.st.cow = nil
	if !locked {
		c.longest = max(c.longest, time.Since(w.held))
		c.ns.mu.Unlock()
	}
	if cap(c.buf) > 4*c.chunk {
		c.buf = nil
	}
	return w.err
}

// unitWalk is the state of capture.units.
type unitWalk struct {
	c       *capture
	locked  bool
	between func()
	emit    func(int, []unit) error
	held    time.Time // when the lock was last taken
	got     int       // units of the current spec given so far
	err     error
}

// spec walks spec i: the units of its heaps in heap position order, then
// those the heap walk did not reach (units in no heap, units a heap moved
// meanwhile) through its unit map, then its pre-images.
//
// Heap order is for the restart (docs/persistence.md, "Full snapshots in
// heap order, deltas decoded aside"): the loader places units in memory in file order and
// appends them to their heaps in that order, so listed heap by heap,
// position by position, the heaps it rebuilds are already in order and
// the units a sift moves are close together, where units listed in map
// order are scattered over all of the spec's memory. The format does not
// promise any order; only the speed of the next start depends on it.
func (w *unitWalk) spec(i int, sp *spec) {
	c := w.c
	w.got = 0
	n := 0
	for _, h := range sp.heaps() {
		// Between chunks the lock is released and the heap may change:
		// the index is checked against its length at each step, a unit
		// moved to a place already walked is found by the map walk, one
		// met twice is settled already.
		for k := 0; k < len(h.items); k++ {
			w.take(h.items[k].u)
			if n++; n%c.chunk == 0 {
				w.give(i, c.buf)
				c.buf = c.buf[:0]
			}
		}
	}
	// Every unit of sp at the boundary is either captured or saved (each
	// once): when they add up, the map holds none left to take.
	if w.got+len(c.buf)+len(sp.cowSaved) < c.out.specs[i].units {
		for _, u := range sp.units {
			w.take(u)
			if n++; n%c.chunk == 0 {
				w.give(i, c.buf)
				c.buf = c.buf[:0]
			}
		}
	}
	// Every unit of sp is settled now: its pre-images are complete.
	for _, pre := range sp.cowSaved {
		c.buf = append(c.buf, *pre)
		if len(c.buf) == c.chunk {
			w.give(i, c.buf)
			c.buf = c.buf[:0]
		}
	}
	c.saved += len(sp.cowSaved)
	sp.cowSaved = nil
	if want := c.out.specs[i].units; w.got+len(c.buf) != want {
		w.fail(fmt.Errorf("namespace %q spec %q: captured %d units of the %d at the snapshot boundary",
			c.ns.name, sp.name.Bytes, w.got+len(c.buf), want))
	}
	w.give(i, c.buf)
	c.buf = c.buf[:0]
}

// take copies u into the chunk if the capture does not have it yet, and
// settles it.
func (w *unitWalk) take(u *unit) {
	c, s := w.c, w.c.st
	if u.snapMark() == s.snapParity {
		return
	}
	u.setSnapMark(s.snapParity)
	if u.dirtyEpoch() == c.old {
		u.setDirtyEpoch(0) // in this snapshot: clean (dirty.go)
	}
	c.buf = append(c.buf, frozenCopy(u))
}

// deltaSpec walks the units of spec i that were dirty at the boundary
// (list): those still marked with the old epoch have not changed since
// and are copied (unless deleted before the boundary: their tombstone is
// in the delta), the others changed during the capture and their
// pre-images are given.
func (w *unitWalk) deltaSpec(i int, sp *spec, list []*unit) {
	c := w.c
	w.got = 0
	for k, u := range list {
		if u.dirtyEpoch() == c.old {
			u.setDirtyEpoch(0)
			if u.status != 0 && sp.units[u.key] == u {
				c.buf = append(c.buf, frozenCopy(u))
			}
		} else if pre, ok := sp.cowSaved[u]; ok {
			delete(sp.cowSaved, u)
			c.saved++
			c.buf = append(c.buf, *pre)
		} else if u.status != 0 || u.dirtyEpoch() != 0 {
			w.fail(fmt.Errorf("namespace %q spec %q: unit %q, dirty at the snapshot boundary, changed without its value saved",
				c.ns.name, sp.name.Bytes, u.key))
		}
		if (k+1)%c.chunk == 0 {
			w.give(i, c.buf)
			c.buf = c.buf[:0]
		}
	}
	if len(sp.cowSaved) > 0 {
		w.fail(fmt.Errorf("namespace %q spec %q: %d units saved for the delta were not dirty at its boundary",
			c.ns.name, sp.name.Bytes, len(sp.cowSaved)))
	}
	sp.cowSaved = nil
	w.give(i, c.buf)
	c.buf = c.buf[:0]
}

// fail records the walk's first error; nothing more is emitted after it.
func (w *unitWalk) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// give passes units of spec i to emit with the lock released (unless
// locked), then takes it again.
func (w *unitWalk) give(i int, us []unit) {
	c := w.c
	w.got += len(us)
	if w.got > c.out.specs[i].units {
		w.fail(fmt.Errorf("namespace %q spec %q: captured more than the %d units at the snapshot boundary",
			c.ns.name, c.out.specs[i].name.Bytes, c.out.specs[i].units))
	}
	mu := &c.ns.mu
	if !w.locked {
		c.longest = max(c.longest, time.Since(w.held))
		mu.Unlock()
	}
	if w.err == nil && w.emit != nil && len(us) > 0 {
		w.fail(w.emit(i, us))
	}
	if !w.locked {
		if w.between != nil {
			w.between()
		}
		runtime.Gosched()
		mu.Lock()
		w.held = time.Now()
	}
}
