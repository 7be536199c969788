package memory

import (
	"github.com/coordinated/coordinated/coordinate"
)

// Work-unit dependencies (docs/dependencies.md). A unit with unmet dependencies is
// BLOCKED; state.dependents holds the reverse edges so a dependency's
// completion touches only its own dependents.

// lookup returns the unit a reference names, or nil.
func (s *state) lookup(r coordinate.UnitRef) *unit {
	sp := s.specs[r.Spec]
	if sp == nil {
		return nil
	}
	return sp.units[r.Key]
}

// addEdges records u's dependencies. It returns the status u should take:
// BLOCKED while some are unmet, FAILED (depFailed) when one has already
// failed, AVAILABLE when all are finished.
func (s *state) addEdges(u *unit, deps []coordinate.UnitRef) (coordinate.Status, *coordinate.UnitRef) {
	s.touch(u)
	var unmet []coordinate.UnitRef
	var failed *coordinate.UnitRef
	for _, d := range deps {
		du := s.lookup(d)
		if du != nil && du.status == coordinate.StatusFinished {
			continue
		}
		if containsRef(unmet, d) {
			continue
		}
		unmet = append(unmet, d)
		s.addEdge(d, u)
		if du != nil && du.status == coordinate.StatusFailed && failed == nil {
			d := d
			failed = &d
		}
	}
	if len(unmet) == 0 {
		if u.ext != nil {
			u.ext.deps = nil
		}
		return coordinate.StatusAvailable, nil
	}
	u.extend()
	u.ext.deps = unmet
	if failed != nil {
		return coordinate.StatusFailed, failed
	}
	return coordinate.StatusBlocked, nil
}

// addEdge records that u waits for d.
func (s *state) addEdge(d coordinate.UnitRef, u *unit) {
	set := s.dependents[d]
	if set == nil {
		set = make(map[*unit]struct{})
		s.dependents[d] = set
		s.depTargets[d.Spec]++
		if sp := s.specs[d.Spec]; sp != nil && sp.units[d.Key] != nil {
			sp.waited++
		}
	}
	set[u] = struct{}{}
}

// dropEdge forgets that u waits for d.
func (s *state) dropEdge(d coordinate.UnitRef, u *unit) {
	if set := s.dependents[d]; set != nil {
		delete(set, u)
		if len(set) == 0 {
			s.dropTarget(d)
		}
	}
}

// dropTarget forgets every unit waiting for d.
func (s *state) dropTarget(d coordinate.UnitRef) {
	if _, ok := s.dependents[d]; !ok {
		return
	}
	delete(s.dependents, d)
	if sp := s.specs[d.Spec]; sp != nil && sp.units[d.Key] != nil {
		sp.waited--
	}
	if s.depTargets[d.Spec]--; s.depTargets[d.Spec] == 0 {
		delete(s.depTargets, d.Spec)
	}
}

// dropEdges forgets u's own dependency edges.
func (s *state) dropEdges(u *unit) {
	s.touch(u)
	if u.ext == nil {
		return
	}
	for _, d := range u.ext.deps {
		s.dropEdge(d, u)
	}
	u.ext.deps = nil
	u.ext.depFailed = false
}

// resolveDependents: done finished; its waiting dependents lose that
// dependency and become AVAILABLE when none is left.
func (s *state) resolveDependents(done *unit, now int64) {
	r := done.ref()
	set := s.dependents[r]
	if set == nil {
		return
	}
	s.dropTarget(r)
	for _, d := range sortedUnits(set) {
		s.touch(d)
		d.ext.deps = removeRef(d.ext.deps, r)
		if len(d.ext.deps) == 0 && d.status == coordinate.StatusBlocked {
			s.place(d, coordinate.StatusAvailable, now)
		}
	}
}

// failDependents fails every unfinished unit waiting for r, and
// transitively their dependents; each traceback names the unit whose
// failure started the cascade. Units in s.cancelling are skipped: they are
// being failed for their own reason.
func (s *state) failDependents(r coordinate.UnitRef, now int64) {
	set := s.dependents[r]
	if len(set) == 0 {
		return
	}
	if s.failCause == nil {
		s.failCause = &r
		defer func() { s.failCause = nil }()
	}
	for _, d := range sortedUnits(set) {
		if d.status.Completed() || s.cancelling[d] {
			continue
		}
		s.touch(d)
		d.data = coordinate.WithTraceback(d.data, coordinate.DependencyFailedTraceback(*s.failCause))
		d.ext.depFailed = true
		d.expiration = now
		s.place(d, coordinate.StatusFailed, now)
	}
}

// reblockDependents: r was failed and is being retried; units failed
// because of it wait for it again, unless another dependency still failed.
func (s *state) reblockDependents(r coordinate.UnitRef, now int64) {
	set := s.dependents[r]
	for _, d := range sortedUnits(set) {
		if d.status != coordinate.StatusFailed || !d.ext.depFailed || s.anyDepFailed(d, r) {
			continue
		}
		s.touch(d)
		d.expiration = 0
		d.setWorker(nil)
		s.place(d, coordinate.StatusBlocked, now)
	}
}

func (s *state) anyDepFailed(d *unit, except coordinate.UnitRef) bool {
	for _, r := range d.ext.deps {
		if r == except {
			continue
		}
		if du := s.lookup(r); du != nil && du.status == coordinate.StatusFailed {
			return true
		}
	}
	return false
}

// findCycle reports the cycle that adding the edges in batch would close
// (coordinate.FindCycle over the stored reverse edges), or nil.
func (s *state) findCycle(batch map[coordinate.UnitRef][]coordinate.UnitRef, order []coordinate.UnitRef) []coordinate.UnitRef {
	return coordinate.FindCycle(order, batch, func(r coordinate.UnitRef) []coordinate.UnitRef {
		set := s.dependents[r]
		out := make([]coordinate.UnitRef, 0, len(set))
		for u := range set {
			out = append(out, u.ref())
		}
		return out
	})
}

func containsRef(refs []coordinate.UnitRef, r coordinate.UnitRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

func removeRef(refs []coordinate.UnitRef, r coordinate.UnitRef) []coordinate.UnitRef {
	out := refs[:0]
	for _, x := range refs {
		if x != r {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sortedUnits lists a set in (spec, key) order so ops apply identically on
// replay whatever the map iteration order.
func sortedUnits(set map[*unit]struct{}) []*unit {
	out := make([]*unit, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	sortUnitsByRef(out)
	return out
}

// Groups.

// joinGroup puts u (already placed) in group g.
func (s *state) joinGroup(u *unit, g string, now int64) {
	s.touch(u)
	if u.group() == g {
		return
	}
	if u.group() != "" {
		s.leaveGroup(u, now)
	}
	if g == "" {
		return
	}
	u.extend()
	u.ext.group = g
	gr := s.groups[g]
	if gr == nil {
		gr = &group{members: make(map[*unit]struct{})}
		s.groups[g] = gr
	}
	gr.members[u] = struct{}{}
	gr.add(u)
	gr.lastProgress = now
}

func (s *state) leaveGroup(u *unit, now int64) {
	s.touch(u)
	g := u.group()
	if g == "" {
		return
	}
	gr := s.groups[g]
	delete(gr.members, u)
	gr.sub(u)
	gr.lastProgress = now
	if len(gr.members) == 0 {
		delete(s.groups, g)
	}
	u.ext.group = ""
}
