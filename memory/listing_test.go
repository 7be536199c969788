package memory

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectUnitsMatchesFullSort compares the bounded selection with a
// full sort for many limits.
func TestSelectUnitsMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	units := map[string]*unit{}
	for i := range 500 {
		k := fmt.Sprintf("k%03d", i)
		units[k] = &unit{key: k, priority: float64(r.IntN(5))}
	}
	keep := func(u *unit) bool { return u.key[len(u.key)-1] != '7' }
	all := selectUnits(maps.Values(units), keep, availableFirst, 0)
	if len(all) != 450 {
		t.Fatalf("kept %d units, want 450", len(all))
	}
	for i := 1; i < len(all); i++ {
		if availableFirst(all[i], all[i-1]) {
			t.Fatalf("full listing out of order at %d", i)
		}
	}
	for _, limit := range []int{1, 2, 10, 449, 450, 1000} {
		got := selectUnits(maps.Values(units), keep, availableFirst, limit)
		want := all[:min(limit, len(all))]
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: bounded selection differs from the sorted prefix", limit)
		}
	}
}
