package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUnitHeapOrder pushes, removes, re-prioritises and pops random units
// and checks the heap hands them out in (priority desc, key asc) order.
func TestUnitHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := unitHeap{less: availableFirst}
	in := map[*unit]bool{}
	for i := range 2000 {
		switch x := r.IntN(10); {
		case x < 5:
			u := &unit{key: fmt.Sprintf("k%04d", r.IntN(5000)), priority: float64(r.IntN(7) - 3)}
			h.push(u)
			in[u] = true
		case x < 7 && len(in) > 0:
			u := anyUnit(in, r)
			h.remove(u)
			delete(in, u)
			if u.heapIdx != -1 {
				t.Fatalf("step %d: removed unit keeps index %d", i, u.heapIdx)
			}
		case len(in) > 0:
			u := anyUnit(in, r)
			u.priority = float64(r.IntN(7) - 3)
			h.fix(u)
		}
		for j, u := range h.items {
			if int(u.heapIdx) != j {
				t.Fatalf("step %d: item %d records index %d", i, j, u.heapIdx)
			}
		}
	}
	want := make([]*unit, 0, len(in))
	for u := range in {
		want = append(want, u)
	}
	slices.SortStableFunc(want, func(a, b *unit) int {
		switch {
		case availableFirst(a, b):
			return -1
		case availableFirst(b, a):
			return 1
		}
		return 0
	})
	for i := range want {
		got := h.pop()
		if got.priority != want[i].priority || got.key != want[i].key {
			t.Fatalf("pop %d = (%v, %q), want (%v, %q)", i, got.priority, got.key, want[i].priority, want[i].key)
		}
	}
	if h.Len() != 0 || h.top() != nil {
		t.Fatalf("heap not empty after popping everything")
	}
}

func anyUnit(set map[*unit]bool, r *rand.Rand) *unit {
	n := r.IntN(len(set))
	for u := range set {
		if n == 0 {
			return u
		}
		n--
	}
	return nil
}
