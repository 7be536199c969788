package memory

import (
	"errors"
	"fmt"
	"io"

	"github.com/coordinated/coordinated/coordinate"
)

// Restoring builds a live state from a decoded snapshot: units go back
// into their heaps (heapified per spec), and the derived indexes (counts, group members,
// dependents, children, holders, the specs' due order) are rebuilt from
// the units and workers. A builder takes the snapshot's pieces in file
// order, as decodeSnapshot produces them, so that recovery can decode on
// one goroutine while it builds on another (loadParallel).

// loadBatch is how many units recovery decodes before handing them to
// the builder: large, because every hand-over where the builder has to
// wait costs a wake-up, which on a busy machine can mean waiting for a
// core; each batch is one allocation (8 MiB), which lives as long as any
// of its units.
const loadBatch = 1 << 16

// loadParallel decodes a snapshot (decodeSnapshot) on a goroutine of its
// own while the calling goroutine builds each namespace's state from the
// pieces, and passes each namespace built to done, in file order.
// Decoding (varints, allocating keys and data) and building (map inserts,
// heap positions, indexes: mostly cache misses) take comparable time, so
// with two cores a restore takes about the longer of the two instead of
// their sum. It returns once the decoder has stopped reading r. With
// loose, the states' heaps are left out of order (state.loose) for deltas
// to change cheaply; state.endLooseRestore must follow.
func loadParallel(r io.Reader, maxBytes int64, blob blobReader, batch int, loose bool, done func(name string, st *state, dropped []coordinate.UnitRef) error) error {
	err, derr := decodeAside(func(emit func(*snapPart) error) error {
		return decodeSnapshot(r, maxBytes, blob, batch, emit)
	}, func(parts <-chan *snapPart) error {
		return buildAll(parts, loose, done)
	})
	switch {
	case err != nil && !errors.Is(err, errPartsEnded):
		return err
	case derr != nil:
		return fmt.Errorf("reading snapshot: %w", derr)
	}
	return err
}

// decodeAside runs decode on a goroutine of its own, passing the parts it
// emits to use, on the calling goroutine, through a channel (two parts
// ahead at most), so that decoding one batch overlaps using the one
// before (full snapshots: loadParallel; deltas: Backend.loadDelta). It
// returns use's error and decode's, once decode has returned: when use
// stops early, decode's next emit fails with errBuildStopped.
func decodeAside(decode func(emit func(*snapPart) error) error, use func(<-chan *snapPart) error) (useErr, decodeErr error) {
	parts := make(chan *snapPart, 2)
	stop := make(chan struct{})
	decoded := make(chan error, 1)
	go func() {
		defer close(parts)
		decoded <- decode(func(p *snapPart) error {
			select {
			case parts <- p:
				return nil
			case <-stop:
				return errBuildStopped
			}
		})
	}()
	useErr = use(parts)
	close(stop)
	for range parts { // the decoder may be blocked sending
	}
	return useErr, <-decoded
}

var (
	errBuildStopped = errors.New("building the state stopped")
	errPartsEnded   = errors.New("snapshot ended inside a namespace")
)

// buildAll builds namespaces from parts until the channel closes.
func buildAll(parts <-chan *snapPart, loose bool, done func(name string, st *state, dropped []coordinate.UnitRef) error) error {
	var b *builder
	name := ""
	for p := range parts {
		var err error
		switch {
		case p.spec != nil:
			err = b.spec(p.spec)
		case p.units != nil:
			err = b.units(p.units, p.lost)
		case p.end:
			var st *state
			var dropped []coordinate.UnitRef
			if st, dropped, err = b.finish(p.ns.workers, p.ns.groups); err == nil {
				b = nil
				if err = done(name, st, dropped); err != nil {
					return err
				}
			}
		default:
			b, name = newBuilder(p.ns.nextLease), p.ns.name
			b.s.loose = loose
		}
		if err != nil {
			return fmt.Errorf("snapshot namespace %q: %w", name, err)
		}
	}
	if b != nil {
		return errPartsEnded
	}
	return nil
}

// builder builds one namespace's state from a snapshot's pieces: spec,
// then units (in any number of batches) for each spec, then finish.
type builder struct {
	s  *state
	sp *spec // the spec whose units are coming
	// left counts sp's units still to come.
	total, left int
	gone        map[coordinate.UnitRef]bool // units dropped because their data is lost
	lost        []coordinate.UnitRef        // the same, in order
}

func newBuilder(nextLease int64) *builder {
	b := &builder{s: newState()}
	b.s.nextLease = nextLease
	return b
}

// spec starts a spec whose cs.units units come next.
func (b *builder) spec(cs *capturedSpec) error {
	if err := b.endSpec(); err != nil {
		return err
	}
	s := b.s
	if _, dup := s.specs[cs.name.Bytes]; dup {
		return fmt.Errorf("spec %q listed twice", cs.name.Bytes)
	}
	sp := newSpec(cs.name)
	sp.fresh = false // its units are in the snapshot
	sp.definition = cs.definition
	sp.meta = cs.meta
	sp.archived = cs.archived
	sp.units = make(map[string]*unit, cs.units)
	s.specs[cs.name.Bytes] = sp
	b.sp, b.total, b.left = sp, cs.units, cs.units
	return nil
}

// units adds a batch of the current spec's units, which the state keeps
// (units are linked in place). lost lists, in order, the indexes in us of
// units to drop because their data is lost.
func (b *builder) units(us []unit, lost []int) error {
	sp, s := b.sp, b.s
	if sp == nil || len(us) > b.left {
		return fmt.Errorf("%d units more than their spec claims", len(us)-b.left)
	}
	b.left -= len(us)
	for j := range us {
		u := &us[j]
		if len(lost) > 0 && lost[0] == j {
			lost = lost[1:]
			b.drop(u)
			continue
		}
		if err := s.linkRestored(sp, u); err != nil {
			return err
		}
		if h := heapFor(sp, u.where); h != nil {
			h.load(u)
		}
	}
	return nil
}

// linkRestored adds a restored unit to sp (which it joins) and to the
// state's indexes, all but its heap, after checking that its status fits
// its heap and that its key is new in sp.
func (s *state) linkRestored(sp *spec, u *unit) error {
	if !u.status.Valid() || u.where != heapOf(u.status, u.where) {
		return fmt.Errorf("spec %q unit %q: status %d does not fit heap %d", sp.name.Bytes, u.key, u.status, u.where)
	}
	u.spec = sp
	n := len(sp.units)
	s.link(sp, u)
	if len(sp.units) == n {
		return fmt.Errorf("spec %q unit %q listed twice", sp.name.Bytes, u.key)
	}
	sp.counts[u.status]++
	if u.ext == nil {
		return nil
	}
	if g := u.ext.group; g != "" {
		gr := s.groups[g]
		if gr == nil {
			gr = &group{members: make(map[*unit]struct{})}
			s.groups[g] = gr
		}
		gr.members[u] = struct{}{}
		gr.add(u)
	}
	for _, d := range u.ext.deps {
		s.addEdge(d, u)
	}
	return nil
}

// heapFor returns the heap of sp that where names (nil: none).
func heapFor(sp *spec, where uint8) *unitHeap {
	switch where {
	case inAvailable:
		return &sp.available
	case inDelayed:
		return &sp.delayed
	case inPending:
		return &sp.pending
	}
	return nil
}

// drop leaves out a unit of the current spec whose data is lost.
func (b *builder) drop(u *unit) {
	r := coordinate.UnitRef{Spec: b.sp.name.Bytes, Key: u.key}
	if b.gone == nil {
		b.gone = make(map[coordinate.UnitRef]bool)
	}
	b.gone[r] = true
	b.lost = append(b.lost, r)
}

// endSpec checks that the current spec got all its units and puts its
// heaps in order. Snapshots before version 4 stored heap positions; they
// are not needed: the heaps' orders are total, so a heap built from the
// units hands them out in the same order (and a version 3 snapshot, which
// lists the units heap by heap in position order, gives the same layout).
func (b *builder) endSpec() error {
	sp := b.sp
	if sp == nil {
		return nil
	}
	b.sp = nil
	if b.left != 0 {
		return fmt.Errorf("spec %q: %d of its %d units missing", sp.name.Bytes, b.left, b.total)
	}
	if !b.s.loose {
		sp.orderHeaps()
	}
	return nil
}

// orderHeaps puts sp's heaps in order after recovery loaded (and
// unloaded) their units, and trims their spare capacity.
func (sp *spec) orderHeaps() {
	for _, h := range sp.heaps() {
		h.heapify()
		if c := cap(h.items); c > len(h.items)+len(h.items)/4 {
			h.items = append(make([]heapEntry, 0, len(h.items)), h.items...)
		}
	}
}

// endLooseRestore ends a loose restore (state.loose): it puts every heap
// in order (spec.orderHeaps), once, after the snapshot and all the deltas
// after it are in, then restores the last workers and groups' progress
// loaded and files the specs in the due order, which reads the heaps'
// tops.
func (s *state) endLooseRestore() error {
	if !s.loose {
		return nil
	}
	s.loose = false
	for _, sp := range s.specs {
		sp.orderHeaps()
	}
	p := s.pending
	if p == nil {
		p = &pendingRestore{}
	}
	s.pending = nil
	return s.restoreWorkersAndGroups(p.workers, p.groups, p.gone)
}

// pendingRestore is what restoreWorkersAndGroups restores once a loose
// restore ends (endLooseRestore).
type pendingRestore struct {
	workers []capturedWorker
	groups  []capturedGroup
	gone    map[coordinate.UnitRef]bool
}

// finish ends the last spec, adds the workers and the groups' progress
// times, and returns the state and the units dropped (in order).
func (b *builder) finish(workers []capturedWorker, groups []capturedGroup) (*state, []coordinate.UnitRef, error) {
	if err := b.endSpec(); err != nil {
		return nil, nil, err
	}
	s := b.s
	if err := s.restoreWorkersAndGroups(workers, groups, b.gone); err != nil {
		return nil, nil, err
	}
	return s, b.lost, nil
}

// restoreWorkersAndGroups adds the workers (to an empty registry) and the
// groups' progress times, skipping held units in gone (dropped), and
// files every spec in the due order.
func (s *state) restoreWorkersAndGroups(workers []capturedWorker, groups []capturedGroup, gone map[coordinate.UnitRef]bool) error {
	if s.loose {
		// A delta follows, which lists them whole again: only the last
		// list counts (endLooseRestore). Restoring each would cost a lookup
		// per held unit per delta.
		s.pending = &pendingRestore{workers: workers, groups: groups, gone: gone}
		return nil
	}
	for _, cg := range groups {
		if gr := s.groups[cg.name]; gr != nil {
			gr.lastProgress = cg.lastProgress
		}
	}
	reg := &s.workers
	for i := range workers {
		cw := &workers[i]
		cw.resolve() // a capture restored without a file between (tests)
		w := &worker{
			id: cw.id, mode: cw.mode, data: cw.data, parent: cw.parent,
			lastHeard: cw.lastHeard, expires: cw.expires, heapIdx: i,
			outstanding: make(map[*unit]int64, len(cw.outstanding)),
		}
		if _, dup := reg.byID[w.id.Bytes]; dup {
			return fmt.Errorf("worker %q listed twice", w.id.Bytes)
		}
		reg.byID[w.id.Bytes] = w
		reg.byExpiry = append(reg.byExpiry, w)
		if w.parent != nil {
			kids := reg.children[w.parent.Bytes]
			if kids == nil {
				kids = make(map[string]struct{})
				reg.children[w.parent.Bytes] = kids
			}
			kids[w.id.Bytes] = struct{}{}
		}
		for _, r := range cw.outstanding {
			if gone[r] {
				continue
			}
			u := s.lookup(r)
			if u == nil {
				return fmt.Errorf("worker %q holds missing unit %v", w.id.Bytes, r)
			}
			w.outstanding[u] = cw.lapsed[r]
			hs := reg.holders[u]
			if hs == nil {
				hs = make(map[*worker]struct{}, 1)
				reg.holders[u] = hs
			}
			hs[w] = struct{}{}
		}
	}
	for _, sp := range s.specs {
		s.noteDue(sp)
	}
	return nil
}

// heapOf returns the heap a unit of status st belongs in, given the heap
// it claims (an AVAILABLE unit is in the available or the delayed heap).
func heapOf(st coordinate.Status, claimed uint8) uint8 {
	switch st {
	case coordinate.StatusAvailable:
		if claimed == inDelayed {
			return inDelayed
		}
		return inAvailable
	case coordinate.StatusPending:
		return inPending
	}
	return inNoHeap
}
