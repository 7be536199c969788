package memory

import (
	"cmp"
	"math"
	"slices"
)

// The expiry pass (opExpire) and the check before every method
// (needsExpire) run on the request path under the namespace lock, so they
// must not walk every spec. state.due holds the specs that have a delayed
// or pending unit, ordered by the earliest time one of those units is
// due; the pass visits only the specs at its top.

// dueAt is the earliest time sp has something for the expiry pass: a
// delayed unit whose not-before has come (notBefore <= now) or a lease
// that has run out (expiration < now, coordinate.LeaseExpired). ok is false
// when sp has no delayed or pending unit.
func (sp *spec) dueAt() (t int64, ok bool) {
	if u := sp.delayed.top(); u != nil {
		t, ok = u.notBefore, true
	}
	if u := sp.pending.top(); u != nil {
		e := u.expiration
		if e < math.MaxInt64 {
			e++ // due once now is past the expiration
		}
		if !ok || e < t {
			t, ok = e, true
		}
	}
	return t, ok
}

// noteDue re-files sp in state.due after its delayed or pending heap
// changed.
func (s *state) noteDue(sp *spec) {
	t, ok := sp.dueAt()
	switch {
	case !ok:
		if sp.dueIdx >= 0 {
			s.due.remove(sp.dueIdx)
		}
	case sp.dueIdx < 0:
		sp.due = t
		s.due.push(sp)
	case t != sp.due:
		sp.due = t
		s.due.fix(sp.dueIdx)
	}
}

// dueSpecs returns the specs with something due at now, sorted by name:
// the order of the expiry pass. A walk of every spec in name order would
// find nothing to do in the others, and the pass cannot make one of them
// due (it moves units only to AVAILABLE, FAILED or a later not-before),
// so journal replay applies the same changes in the same order.
func (s *state) dueSpecs(now int64) []*spec {
	var out []*spec
	h := s.due
	for stack := []int{0}; len(stack) > 0; {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].due > now {
			continue
		}
		out = append(out, h[i])
		stack = append(stack, 2*i+1, 2*i+2)
	}
	slices.SortFunc(out, func(a, b *spec) int { return cmp.Compare(a.name.Bytes, b.name.Bytes) })
	return out
}

// The order of state.due (an indexedHeap): by spec.due, the spec's
// place kept in spec.dueIdx.
func (sp *spec) before(other *spec) bool { return sp.due < other.due }
func (sp *spec) setHeapIndex(i int)      { sp.dueIdx = i }
