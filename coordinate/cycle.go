package coordinate

import (
	"fmt"
	"slices"
	"strings"
)

// FindCycle reports the dependency cycle that giving each unit of order
// the dependencies batch[unit] (replacing its current ones) would close, as
// a path in dependency order from a unit back to itself ("a -> b -> a": a
// depends on b, b on a); nil when there is none. waiters(r) lists the units
// whose stored dependencies include r; those in batch are skipped, since
// their edges are being replaced. The stored graph must be acyclic.
//
// A new cycle passes through a unit of the batch, so the search walks from
// the batch's units along reverse edges (to the units that wait on them),
// with marks kept across starts: it visits each unit downstream of the batch
// at most once. Units are normally added before their dependents, so that
// region is small, and appending to a long chain costs O(1), not O(chain).
// Both backends use it, so they reject exactly the same edges.
func FindCycle(order []UnitRef, batch map[UnitRef][]UnitRef, waiters func(UnitRef) []UnitRef) []UnitRef {
	waiting := make(map[UnitRef][]UnitRef) // the batch's edges, reversed
	for _, r := range order {
		for _, d := range batch[r] {
			waiting[d] = append(waiting[d], r)
		}
	}
	const (
		onPath = 1
		done   = 2
	)
	colour := make(map[UnitRef]uint8)
	var path []UnitRef
	var walk func(r UnitRef) bool
	step := func(w UnitRef) bool {
		switch colour[w] {
		case onPath:
			path = append(path, w)
			return true
		case done:
			return false
		}
		return walk(w)
	}
	walk = func(r UnitRef) bool {
		colour[r] = onPath
		path = append(path, r)
		for _, w := range waiting[r] {
			if step(w) {
				return true
			}
		}
		for _, w := range waiters(r) {
			if _, replaced := batch[w]; replaced {
				continue
			}
			if step(w) {
				return true
			}
		}
		path = path[:len(path)-1]
		colour[r] = done
		return false
	}
	for _, start := range order {
		if colour[start] != 0 || !walk(start) {
			continue
		}
		// path runs along "is waited on by" edges and ends at the unit
		// that closes the loop: keep the loop and read it backwards.
		last := path[len(path)-1]
		first := slices.Index(path, last)
		cycle := slices.Clone(path[first:])
		slices.Reverse(cycle)
		return cycle
	}
	return nil
}

// CycleError is the ErrCycle error naming a cycle found by FindCycle.
func CycleError(path []UnitRef) error {
	parts := make([]string, len(path))
	for i, r := range path {
		parts[i] = r.Spec + "/" + r.Key
	}
	return fmt.Errorf("%w: %s", ErrCycle, strings.Join(parts, " -> "))
}
