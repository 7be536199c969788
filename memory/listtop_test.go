package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// A limited listing by AVAILABLE and/or PENDING walks the heaps; it must
// return what a full scan (a listing without a limit) returns, truncated.
func TestListFromHeapsMatchesScan(t *testing.T) {
	ctx := t.Context()
	clock := coordinate.NewFakeClock(time.Unix(1_000_000, 0))
	b := New(Options{Clock: clock})
	ns, _ := b.Namespace(ctx, "")
	defineSpec(t, ctx, ns, "s")
	rng := rand.New(rand.NewPCG(1, 2))
	var in []coordinate.WorkUnitInput
	for i := range 2000 {
		u := coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("k%04d", rng.IntN(5000))}, Data: coordinate.EmptyMap}
		p := float64(rng.IntN(5)) // many ties, broken by key
		u.Priority = &p
		if i%7 == 0 {
			u.Delay = time.Duration(1+rng.IntN(100)) * time.Second
		}
		in = append(in, u)
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Minute, MaxJobs: 300}); err != nil {
		t.Fatal(err)
	}
	keys := func(us []*coordinate.WorkUnit) []string {
		out := make([]string, len(us))
		for i, u := range us {
			out[i] = u.Key.Bytes
		}
		return out
	}
	for _, statuses := range [][]coordinate.Status{
		{coordinate.StatusAvailable}, {coordinate.StatusPending},
		{coordinate.StatusAvailable, coordinate.StatusPending},
	} {
		for _, start := range []string{"", "k2500", "k9"} {
			all, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Statuses: statuses, Start: start})
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []int{1, 10, 101, 5000} {
				got, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Statuses: statuses, Start: start, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				want := keys(all)[:min(limit, len(all))]
				if !slices.Equal(keys(got), want) {
					t.Errorf("statuses %v start %q limit %d: heap walk lists %d units, scan %d (first difference at %d)",
						statuses, start, limit, len(got), len(want), firstDiff(keys(got), want))
				}
			}
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
