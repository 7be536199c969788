package memory

import "github.com/coordinated/coordinated/coordinate"

// Deleting a whole spec (opDeleteWorkSpec) without visiting its units
// (docs/architecture.md, "Listing units without stalling the namespace").
//
// Removing a spec's units one by one in key order (state.removeUnit) costs
// O(n log n) under the namespace lock: seconds at a million units. Most of
// that work only keeps the spec's own bookkeeping (heaps, counts, key
// index, map) in step, and all of it goes with the spec. What reaches
// outside the spec is:
//
//   - groups and dependency edges: a unit of the spec in a group, waiting
//     for dependencies, or that units elsewhere wait for (they fail when it
//     goes, with a traceback naming it, in the order of the walk);
//   - the copy-on-write of a snapshot capture under way (cow.go) and dirty
//     tracking (dirty.go);
//   - the workers' outstanding sets (workers.go);
//   - the namespace's due order (due.go).
//
// When no capture is under way, no unit of the spec has an ext (so none is
// in a group or waits for anything: sp.extUnits, kept by state.link/unlink
// and unit.extend) and no unit of the spec has dependents (sp.waited, kept
// by state.link/unlink and addEdge/dropTarget), the walk would
// change nothing outside the spec but the outstanding sets and the due
// order; dropSpecUnits does just that and leaves the units to the garbage
// collector. Dirty tracking records nothing either way: the spec is
// untracked (dirty.go) and the next snapshot, without the spec, says its
// units are gone. Otherwise the walk runs, in chunks for a spec of more
// than deleteChunk units (unitdelete.go). Both ways leave the
// same state (TestDeleteSpecFastMatchesWalk), as journal replay, which
// may take either, requires.

// canDropWhole reports whether deleting sp may skip the unit-by-unit walk,
// in O(1).
func (s *state) canDropWhole(sp *spec) bool {
	return !s.walkSpecDeletes && !s.deleteWalks(sp)
}

// waitedFor reports whether units wait for the unit of spec name and key
// (whether or not it exists): O(1), and no lookup at all while no unit
// waits for a unit of that spec name.
func (s *state) waitedFor(name, key string) bool {
	if len(s.dependents) == 0 || s.depTargets[name] == 0 {
		return false
	}
	_, ok := s.dependents[coordinate.UnitRef{Spec: name, Key: key}]
	return ok
}

// deleteWalks reports whether opDeleteWorkSpec on sp must visit its
// units (a capture under way, or units entangled with others: the file
// comment): DeleteWorkSpec then removes them a chunk per lock hold first
// (unitdelete.go). walkSpecDeletes (tests) makes it visit them anyway.
func (s *state) deleteWalks(sp *spec) bool {
	return s.cow != nil || sp.extUnits > 0 || sp.waited > 0
}

// dropSpecUnits removes sp's units from what outside sp refers to them,
// given canDropWhole(sp): the workers' outstanding sets, in
// O(min(outstanding units, n)), and the due order.
func (s *state) dropSpecUnits(sp *spec) {
	if hs := s.workers.holders; len(hs) <= len(sp.units) {
		for u := range hs {
			if u.spec == sp {
				s.workers.dropUnit(u)
			}
		}
	} else {
		for _, u := range sp.units {
			s.workers.dropUnit(u)
		}
	}
	if sp.dueIdx >= 0 {
		s.due.remove(sp.dueIdx)
	}
}
