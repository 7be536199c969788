package memory

import (
	"errors"
	"fmt"
	"io"

	"github.com/coordinated/coordinated/coordinate"
)

// Delta snapshots (docs/persistence.md, "Delta snapshots"). A delta holds
// what changed between the previous snapshot or delta and its boundary:
// the units changed or added since (their boundary values), the keys of
// the units deleted since, and the small parts whole (specs, workers,
// groups, the next lease id). Loading applies it to the state the
// snapshot and the deltas before it built. Its encoding:
//
//	"CDMD" version(uvarint 1) count(uvarint) namespace...
//
//	namespace: name nextLease specCount spec... workers groups
//	spec:      name definition meta archived... fresh(bool)
//	           goneCount key... batch... 0
//	batch:     count(uvarint, > 0) unit...
//
// Names, settings, units, workers and groups are encoded as in snapshot
// version 4 (snapshot.go). The specs listed are all the namespace's specs
// at the boundary: a spec not listed was deleted, a fresh one replaces
// any spec of its name before (its units there are not its own). A
// spec's deleted keys apply before its units (a key deleted and added
// again is in both). Units come in batches because the capture does not
// know in advance how many of its dirty units it will find alive. Which
// snapshot or delta a delta follows is recorded by the journal
// (journal.WriteDelta), which checks the chain.

const (
	deltaMagic   = "CDMD"
	deltaVersion = 1
)

// writeDeltaCaptures encodes delta captures (beginCapture with delta) as
// their units are walked, as writeCaptures does for a full snapshot. It
// returns the units and deleted keys written. Every capture is walked to
// its end, even after an error.
func writeDeltaCaptures(out io.Writer, caps []*capture, blobs *blobBatch, between func()) (units, gone int, err error) {
	e := newSnapWriter(out, blobs.refs)
	e.raw([]byte(deltaMagic))
	e.uint(deltaVersion)
	e.uint(uint64(len(caps)))
	var errs []error
	for _, c := range caps {
		e.namespaceHead(c.out)
		cur := -1 // the spec whose units are being written
		open := func(i int) {
			for ; cur < i; cur++ {
				if cur >= 0 {
					e.uint(0) // its batches end
				}
				sp := &c.out.specs[cur+1]
				e.specSettings(sp)
				e.bool(sp.fresh)
				e.uint(uint64(len(sp.gone)))
				for _, k := range sp.gone {
					e.str(k)
				}
				gone += len(sp.gone)
			}
		}
		err := c.units(false, between, func(i int, us []unit) error {
			open(i)
			e.uint(uint64(len(us)))
			for k := range us {
				if err := blobs.add(us[k].data); err != nil {
					return fmt.Errorf("namespace %q spec %q unit %q: %w", c.ns.name, c.out.specs[i].name.Bytes, us[k].key, err)
				}
				e.unit(&us[k])
			}
			units += len(us)
			return e.err
		})
		open(len(c.out.specs) - 1)
		if cur >= 0 {
			e.uint(0)
		}
		e.namespaceTail(c.out)
		errs = append(errs, err)
	}
	errs = append(errs, e.end())
	if err := errors.Join(errs...); err != nil {
		return units, gone, err
	}
	return units, gone, blobs.commit(false)
}

// decodeDelta decodes what writeDeltaCaptures wrote, passing it to emit
// piece by piece as decodeSnapshot does (a spec part carries its fresh
// flag and deleted keys), with the same checks against damage.
func decodeDelta(in io.Reader, maxBytes int64, blob blobReader, batch int, emit func(*snapPart) error) error {
	d := newSnapReader(in, maxBytes, blob)
	magic := make([]byte, len(deltaMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != deltaMagic {
		return fmt.Errorf("not a memory-backend delta snapshot (magic %q)", magic)
	}
	d.left -= int64(len(deltaMagic))
	if v := d.uint(); d.err == nil && v != deltaVersion {
		return fmt.Errorf("delta snapshot format version %d, this build reads %d", v, deltaVersion)
	}
	d.version = snapshotVersion // its items are encoded as in this version
	for range d.count(minNamespaceBytes) {
		c := &capturedNamespace{name: d.str(), nextLease: d.int()}
		if d.err != nil {
			break
		}
		if err := emit(&snapPart{ns: c}); err != nil {
			return err
		}
		for range d.count(minSpecBytes) {
			sp := d.specSettings()
			sp.fresh = d.bool()
			sp.gone = make([]string, d.count(1))
			for k := range sp.gone {
				sp.gone[k] = d.str()
			}
			if d.err != nil {
				break
			}
			if err := emit(&snapPart{spec: sp}); err != nil {
				return err
			}
			for d.err == nil {
				n := d.count(minUnitBytes)
				if n == 0 || d.err != nil {
					break
				}
				if err := d.emitUnits(n, batch, emit); err != nil {
					return err
				}
			}
		}
		d.namespaceTail(c)
		if d.err != nil {
			break
		}
		if err := emit(&snapPart{ns: c, end: true}); err != nil {
			return err
		}
	}
	return d.end()
}

// deltaApplier applies a decoded delta's pieces, in order, to the
// namespaces recovery has built so far (Backend.loadDelta).
type deltaApplier struct {
	b       *Backend
	name    string // the namespace being applied
	s       *state
	sp      *spec
	seen    map[string]bool // specs the delta lists
	gone    map[coordinate.UnitRef]bool
	dropped []coordinate.UnitRef // units dropped because their data is lost
	units   int                  // units applied
	deleted int                  // deleted keys listed
}

func (a *deltaApplier) part(p *snapPart) error {
	var err error
	switch {
	case p.spec != nil:
		err = a.spec(p.spec)
	case p.units != nil:
		err = a.applyUnits(p.units, p.lost)
	case p.end:
		err = a.end(p.ns)
	default:
		if a.s != nil {
			return errors.New("delta namespace not ended")
		}
		ns := a.b.replayNamespace(p.ns.name)
		a.name, a.s, a.sp, a.seen = p.ns.name, ns.st, nil, map[string]bool{}
		a.s.nextLease = p.ns.nextLease
		a.s.workers = newWorkerRegistry() // the delta lists them all
	}
	if err != nil {
		return fmt.Errorf("delta namespace %q: %w", a.name, err)
	}
	return nil
}

// spec applies a spec's settings and deleted keys; its units follow.
func (a *deltaApplier) spec(cs *capturedSpec) error {
	s := a.s
	if s == nil {
		return errors.New("spec outside a namespace")
	}
	name := cs.name.Bytes
	if a.seen[name] {
		return fmt.Errorf("spec %q listed twice", name)
	}
	a.seen[name] = true
	sp := s.specs[name]
	if sp != nil && cs.fresh {
		s.dropRestoredSpec(sp)
		sp = nil
	}
	if sp == nil {
		sp = newSpec(cs.name)
		sp.fresh = false
		s.specs[name] = sp
	}
	sp.name, sp.definition, sp.meta, sp.archived = cs.name, cs.definition, cs.meta, cs.archived
	a.deleted += len(cs.gone)
	for _, k := range cs.gone {
		if u := sp.units[k]; u != nil {
			s.unlinkRestored(u)
		}
	}
	a.sp = sp
	return nil
}

// applyUnits puts the units of the current spec in place of those of the
// same keys; lost lists, in order, the indexes in us of units to drop
// because their data is lost.
func (a *deltaApplier) applyUnits(us []unit, lost []int) error {
	sp, s := a.sp, a.s
	if sp == nil {
		return errors.New("units outside a spec")
	}
	for j := range us {
		u := &us[j]
		if old := sp.units[u.key]; old != nil {
			s.unlinkRestored(old)
		}
		if len(lost) > 0 && lost[0] == j {
			lost = lost[1:]
			r := coordinate.UnitRef{Spec: sp.name.Bytes, Key: u.key}
			if a.gone == nil {
				a.gone = map[coordinate.UnitRef]bool{}
			}
			a.gone[r] = true
			a.dropped = append(a.dropped, r)
			continue
		}
		if err := s.linkRestored(sp, u); err != nil {
			return err
		}
		switch h := heapFor(sp, u.where); {
		case h == nil:
		case s.loose:
			h.load(u) // heapified once the chain is in (endLooseRestore)
		default:
			h.push(u)
		}
		a.units++
	}
	return nil
}

// end drops the specs the delta does not list and restores the workers
// and groups' progress.
func (a *deltaApplier) end(c *capturedNamespace) error {
	s := a.s
	if s == nil {
		return errors.New("namespace end without its start")
	}
	for name, sp := range s.specs {
		if !a.seen[name] {
			s.dropRestoredSpec(sp)
		}
	}
	a.s, a.sp = nil, nil
	return s.restoreWorkersAndGroups(c.workers, c.groups, a.gone)
}

// unlinkRestored takes a restored unit out of its spec and the state's
// indexes (the reverse of linkRestored and a heap insert; in O(1) while
// the heaps are loose). Workers are restored afterwards
// (restoreWorkersAndGroups), so they are not touched.
func (s *state) unlinkRestored(u *unit) {
	sp := u.spec
	switch h := heapFor(sp, u.where); {
	case h == nil:
	case s.loose:
		h.unload(u)
	default:
		h.remove(u)
	}
	sp.counts[u.status]--
	s.unlink(sp, u)
	if u.ext == nil {
		return
	}
	if g := u.ext.group; g != "" {
		if gr := s.groups[g]; gr != nil {
			delete(gr.members, u)
			gr.sub(u)
			if len(gr.members) == 0 {
				delete(s.groups, g)
			}
		}
	}
	for _, d := range u.ext.deps {
		s.dropEdge(d, u)
	}
}

// dropRestoredSpec removes a restored spec and its units.
func (s *state) dropRestoredSpec(sp *spec) {
	for _, u := range sp.units {
		s.unlinkRestored(u)
	}
	delete(s.specs, sp.name.Bytes)
	s.noteDue(sp) // its heaps are empty: out of the due order
}
