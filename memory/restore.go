package memory

import (
	"fmt"

	"github.com/coordinated/coordinated/coordinate"
)

// restore builds a live state from a decoded snapshot: units go back to
// their heap positions, and the derived indexes (counts, group members,
// dependents, children, holders, the specs' due order) are rebuilt from the units and workers.
func (c *capturedNamespace) restore() (*state, error) {
	s := newState()
	s.nextLease = c.nextLease
	units := c.units
	for i := range c.specs {
		cs := &c.specs[i]
		sp := newSpec(cs.name)
		sp.definition = cs.definition
		sp.meta = cs.meta
		sp.archived = cs.archived
		if _, dup := s.specs[cs.name.Bytes]; dup {
			return nil, fmt.Errorf("spec %q listed twice", cs.name.Bytes)
		}
		s.specs[cs.name.Bytes] = sp
		if cs.units < 0 || cs.units > len(units) {
			return nil, fmt.Errorf("spec %q claims %d units, %d left", cs.name.Bytes, cs.units, len(units))
		}
		mine := units[:cs.units]
		units = units[cs.units:]
		var sizes [inPending + 1]int
		for j := range mine {
			u := &mine[j]
			if !u.status.Valid() || u.where != heapOf(u.status, u.where) {
				return nil, fmt.Errorf("spec %q unit %q: status %d does not fit heap %d", cs.name.Bytes, u.key, u.status, u.where)
			}
			sizes[u.where]++
		}
		sp.available.reset(sizes[inAvailable])
		sp.delayed.reset(sizes[inDelayed])
		sp.pending.reset(sizes[inPending])
		sp.units = make(map[string]*unit, len(mine))
		for j := range mine {
			u := &mine[j]
			u.spec = sp
			if _, dup := sp.units[u.key]; dup {
				return nil, fmt.Errorf("spec %q unit %q listed twice", cs.name.Bytes, u.key)
			}
			sp.units[u.key] = u
			sp.counts[u.status]++
			var h *unitHeap
			switch u.where {
			case inNoHeap:
			case inAvailable:
				h = &sp.available
			case inDelayed:
				h = &sp.delayed
			case inPending:
				h = &sp.pending
			default:
				return nil, fmt.Errorf("spec %q unit %q: invalid heap %d", cs.name.Bytes, u.key, u.where)
			}
			if h != nil {
				if !h.restoreAt(u) {
					return nil, fmt.Errorf("spec %q unit %q: heap position %d taken or out of range", cs.name.Bytes, u.key, u.heapIdx)
				}
			}
			if u.ext == nil {
				continue
			}
			if g := u.ext.group; g != "" {
				gr := s.groups[g]
				if gr == nil {
					gr = &group{members: make(map[*unit]struct{})}
					s.groups[g] = gr
				}
				gr.members[u] = struct{}{}
				gr.counts[u.status]++
			}
			for _, d := range u.ext.deps {
				set := s.dependents[d]
				if set == nil {
					set = make(map[*unit]struct{})
					s.dependents[d] = set
				}
				set[u] = struct{}{}
			}
		}
	}
	for _, cg := range c.groups {
		if gr := s.groups[cg.name]; gr != nil {
			gr.lastProgress = cg.lastProgress
		}
	}
	reg := &s.workers
	for i := range c.workers {
		cw := &c.workers[i]
		w := &worker{
			id: cw.id, mode: cw.mode, data: cw.data, parent: cw.parent,
			lastHeard: cw.lastHeard, expires: cw.expires, heapIdx: i,
			outstanding: make(map[*unit]int64, len(cw.outstanding)),
		}
		if _, dup := reg.byID[w.id.Bytes]; dup {
			return nil, fmt.Errorf("worker %q listed twice", w.id.Bytes)
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
			u := s.lookup(r)
			if u == nil {
				return nil, fmt.Errorf("worker %q holds missing unit %v", w.id.Bytes, r)
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
	return s, nil
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
