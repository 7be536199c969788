package memory

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/coordinate"
)

// checkInvariants verifies the bookkeeping a namespace's state relies on:
// counts match the units, every unit sits in the heap its status calls for
// at the index it records, the heaps are ordered, the specs are filed by
// when they are due (due.go), and groups, dependents and worker holdings
// point at live units.
func checkInvariants(t *testing.T, s *state) {
	t.Helper()
	for name, sp := range s.specs {
		var counts [coordinate.StatusFailed + 1]int
		extUnits := 0
		for key, u := range sp.units {
			if u.ext != nil {
				extUnits++
			}
			if u.key != key || u.spec != sp {
				t.Fatalf("spec %q: unit %q filed under %q", name, u.key, key)
			}
			if !u.status.Valid() {
				t.Fatalf("unit %q/%q has status %d", name, key, u.status)
			}
			counts[u.status]++
			var h *unitHeap
			switch u.where {
			case inAvailable:
				h = &sp.available
			case inDelayed:
				h = &sp.delayed
			case inPending:
				h = &sp.pending
			}
			wantWhere := map[coordinate.Status][]uint8{
				coordinate.StatusAvailable: {inAvailable, inDelayed},
				coordinate.StatusPending:   {inPending},
			}[u.status]
			if wantWhere == nil {
				wantWhere = []uint8{inNoHeap}
			}
			if !slices.Contains(wantWhere, u.where) {
				t.Fatalf("unit %q/%q status %v sits in heap %d", name, key, u.status, u.where)
			}
			if h != nil && (u.heapIdx < 0 || int(u.heapIdx) >= h.Len() || h.items[u.heapIdx] != h.entry(u)) {
				t.Fatalf("unit %q/%q heap index %d is wrong or its heap entry is stale", name, key, u.heapIdx)
			}
			if u.status == coordinate.StatusPending && u.leaseID == 0 {
				t.Fatalf("pending unit %q/%q has no lease id", name, key)
			}
			if u.status != coordinate.StatusPending && u.leaseID != 0 {
				t.Fatalf("%v unit %q/%q keeps lease id %d", u.status, name, key, u.leaseID)
			}
		}
		if counts != sp.counts {
			t.Fatalf("spec %q counts %v, units say %v", name, sp.counts, counts)
		}
		waited := 0
		for key := range sp.units {
			if _, ok := s.dependents[coordinate.UnitRef{Spec: name, Key: key}]; ok {
				waited++
			}
		}
		if waited != sp.waited {
			t.Fatalf("spec %q counts %d units waited for, there are %d", name, sp.waited, waited)
		}
		if extUnits != sp.extUnits {
			t.Fatalf("spec %q counts %d units with an ext, there are %d", name, sp.extUnits, extUnits)
		}
		if sp.keys != nil && sp.keysBuilt == nil {
			checkKeyIndex(t, sp)
		}
		if due, ok := sp.dueAt(); ok != (sp.dueIdx >= 0) ||
			ok && (sp.dueIdx >= len(s.due) || s.due[sp.dueIdx] != sp || sp.due != due) {
			t.Fatalf("spec %q is filed in the due order at %d for %d, its heaps say %d (%v)", name, sp.dueIdx, sp.due, due, ok)
		}
		for _, h := range []*unitHeap{&sp.available, &sp.delayed, &sp.pending} {
			for i := 1; i < h.Len(); i++ {
				if h.items[i].before(&h.items[(i-1)/2]) {
					t.Fatalf("spec %q heap out of order at %d", name, i)
				}
			}
		}
	}
	for i, sp := range s.due {
		if s.specs[sp.name.Bytes] != sp || sp.dueIdx != i || i > 0 && sp.due < s.due[(i-1)/2].due {
			t.Fatalf("due order holds spec %q at %d wrongly (gone, misplaced or out of order)", sp.name.Bytes, i)
		}
	}
	live := func(u *unit) bool {
		return u.status != 0 && s.specs[u.spec.name.Bytes] == u.spec && u.spec.units[u.key] == u
	}
	for g, gr := range s.groups {
		var counts [coordinate.StatusFailed + 1]int
		delayed := 0
		for u := range gr.members {
			if !live(u) || u.group() != g {
				t.Fatalf("group %q holds a stale unit %q", g, u.key)
			}
			counts[u.status]++
			if u.where == inDelayed {
				delayed++
			}
		}
		if counts != gr.counts || delayed != gr.delayed {
			t.Fatalf("group %q counts %v, %d delayed; members say %v, %d", g, gr.counts, gr.delayed, counts, delayed)
		}
	}
	targets := map[string]int{}
	for r := range s.dependents {
		targets[r.Spec]++
	}
	if !maps.Equal(targets, s.depTargets) {
		t.Fatalf("dependency targets by spec %v, dependents say %v", s.depTargets, targets)
	}
	for r, set := range s.dependents {
		for u := range set {
			if !live(u) || !slices.Contains(u.ext.deps, r) {
				t.Fatalf("dependents of %v hold %q which does not wait for it", r, u.key)
			}
		}
	}
	for u, hs := range s.workers.holders {
		if !live(u) || u.status.Completed() {
			t.Fatalf("workers hold %v unit %q", u.status, u.key)
		}
		for w := range hs {
			if _, ok := w.outstanding[u]; !ok || s.workers.byID[w.id.Bytes] != w {
				t.Fatalf("holder index and worker %q disagree on %q", w.id.Bytes, u.key)
			}
		}
	}
}

// checkKeyIndex verifies that a built key index holds exactly sp's units,
// in key order.
func checkKeyIndex(t *testing.T, sp *spec) {
	t.Helper()
	n, prev := 0, ""
	sp.keys.Ascend(func(u *unit) bool {
		if n > 0 && u.key <= prev {
			t.Fatalf("spec %q key index: %q after %q", sp.name.Bytes, u.key, prev)
		}
		if sp.units[u.key] != u {
			t.Fatalf("spec %q key index holds %q, which is not that key's unit", sp.name.Bytes, u.key)
		}
		n, prev = n+1, u.key
		return true
	})
	if n != len(sp.units) {
		t.Fatalf("spec %q key index holds %d units, the spec %d", sp.name.Bytes, n, len(sp.units))
	}
}

// dump renders a state deterministically, for comparing replays.
func dump(s *state) string {
	var b strings.Builder
	for _, name := range sortedSpecNames(s.specs) {
		sp := s.specs[name]
		fmt.Fprintf(&b, "spec %q %v def=%x meta=%+v counts=%v archived=%v\n", name, sp.name.Text, sp.definition, sp.meta, sp.counts, sp.archived)
		for _, u := range allUnits(sp) {
			fmt.Fprintf(&b, "  unit %q text=%v st=%v data=%x prio=%v exp=%d nb=%d lease=%d w=%q/%v/%v att=%d where=%d",
				u.key, u.keyText, u.status, u.data, u.priority, u.expiration, u.notBefore, u.leaseID,
				u.worker, u.workerKind != noWorker, u.workerKind == workerTextName, u.attempts, u.where)
			if u.ext != nil {
				fmt.Fprintf(&b, " group=%q deps=%v depFailed=%v", u.ext.group, u.ext.deps, u.ext.depFailed)
			}
			b.WriteByte('\n')
		}
		// The heaps in the order they hand units out (their layout may
		// differ after a restore: heaps are rebuilt, snapshot.go).
		for _, h := range sp.heaps() {
			es := slices.Clone(h.items)
			slices.SortFunc(es, func(x, y heapEntry) int {
				if x.before(&y) {
					return -1
				}
				return 1
			})
			fmt.Fprintf(&b, "  heap")
			for _, e := range es {
				fmt.Fprintf(&b, " %q", e.u.key)
			}
			b.WriteByte('\n')
		}
	}
	ids := make([]string, 0, len(s.workers.byID))
	for id := range s.workers.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := s.workers.byID[id]
		var out []string
		for u, lapsed := range w.outstanding {
			out = append(out, fmt.Sprintf("%s lapsed=%d", u.ref(), lapsed))
		}
		slices.Sort(out)
		fmt.Fprintf(&b, "worker %q mode=%x data=%x parent=%v heard=%d exp=%d out=%v\n", id, w.mode, w.data, w.parent, w.lastHeard, w.expires, out)
	}
	var refs []string
	for r, set := range s.dependents {
		var ds []string
		for u := range set {
			ds = append(ds, u.ref().String())
		}
		slices.Sort(ds)
		refs = append(refs, fmt.Sprintf("dependents %v: %v", r, ds))
	}
	slices.Sort(refs)
	for _, r := range refs {
		b.WriteString(r + "\n")
	}
	var gs []string
	for g, gr := range s.groups {
		gs = append(gs, fmt.Sprintf("group %q counts=%v delayed=%d progress=%d members=%d", g, gr.counts, gr.delayed, gr.lastProgress, len(gr.members)))
	}
	slices.Sort(gs)
	for _, g := range gs {
		b.WriteString(g + "\n")
	}
	fmt.Fprintf(&b, "nextLease %d\n", s.nextLease)
	return b.String()
}
