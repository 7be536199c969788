package coordinate

import (
	"errors"
	"fmt"
	"testing"
)

func ref(k string) UnitRef { return UnitRef{Spec: "s", Key: k} }

// graph is a stored dependency graph: unit -> its dependencies.
type graph map[string][]string

func (g graph) waiters(r UnitRef) []UnitRef {
	var out []UnitRef
	for u, deps := range g {
		for _, d := range deps {
			if d == r.Key {
				out = append(out, ref(u))
			}
		}
	}
	return out
}

func TestFindCycle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored graph
		batch  [][]string // unit, then its dependencies
		want   string     // "" = no cycle
	}{
		{"self", nil, [][]string{{"x", "x"}}, "s/x -> s/x"},
		{"two in one batch", nil, [][]string{{"x", "y"}, {"y", "x"}}, "s/x -> s/y -> s/x"},
		{"closing a stored chain", graph{"b": {"a"}, "c": {"b"}}, [][]string{{"a", "c"}}, "s/a -> s/c -> s/b -> s/a"},
		{"diamond is fine", graph{"b": {"a"}, "c": {"a"}}, [][]string{{"d", "b", "c"}}, ""},
		{"appending to a chain", graph{"b": {"a"}, "c": {"b"}}, [][]string{{"d", "c"}}, ""},
		{"dependency not yet added", nil, [][]string{{"x", "later"}}, ""},
		{"a loop through three replaced units", graph{"b": {"a"}}, [][]string{{"b", "c"}, {"c", "a"}, {"a", "b"}}, "s/b -> s/c -> s/a -> s/b"},
		{"replacing an edge removes its loop", graph{"b": {"a"}}, [][]string{{"b", "c"}, {"a", "b"}}, ""},
		{"replaced edges do not count", graph{"b": {"a"}}, [][]string{{"b"}, {"a", "b"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := map[UnitRef][]UnitRef{}
			var order []UnitRef
			for _, row := range tc.batch {
				var deps []UnitRef
				for _, d := range row[1:] {
					deps = append(deps, ref(d))
				}
				order = append(order, ref(row[0]))
				batch[ref(row[0])] = deps
			}
			cycle := FindCycle(order, batch, tc.stored.waiters)
			got := ""
			if cycle != nil {
				err := CycleError(cycle)
				if !errors.Is(err, ErrCycle) {
					t.Fatalf("CycleError does not wrap ErrCycle: %v", err)
				}
				got = err.Error()[len(ErrCycle.Error())+2:]
			}
			if got != tc.want {
				t.Errorf("cycle = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFindCycleLongChainIsLinear appends one unit at a time to a 100,000
// unit chain; with a search of the whole chain per unit this would take
// minutes, so it shows the search stays local (it also checks no cycle is
// reported on the way).
func TestFindCycleLongChain(t *testing.T) {
	waiters := map[UnitRef][]UnitRef{}
	visits := 0
	lookup := func(r UnitRef) []UnitRef { visits++; return waiters[r] }
	for i := 1; i < 100_000; i++ {
		u, d := ref(fmt.Sprint(i)), ref(fmt.Sprint(i-1))
		if c := FindCycle([]UnitRef{u}, map[UnitRef][]UnitRef{u: {d}}, lookup); c != nil {
			t.Fatalf("unit %d: false cycle %v", i, c)
		}
		waiters[d] = append(waiters[d], u)
	}
	if visits > 2*100_000 {
		t.Errorf("%d stored-edge lookups for 100,000 appends: the search is not local", visits)
	}
}
