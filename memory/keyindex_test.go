package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// keyIndexNS returns a namespace with spec "s" holding n units keyed
// k000000, k000002, ... (even numbers, so odd keys fall between), with
// random priorities and every third unit FAILED.
func keyIndexNS(t *testing.T, n int) *namespace {
	t.Helper()
	ctx := t.Context()
	ns := newNamespace("", Options{Clock: coordinate.NewFakeClock(time.Unix(1e9, 0))})
	defineSpec(t, ctx, ns, "s")
	rng := rand.New(rand.NewPCG(7, 8))
	in := make([]coordinate.WorkUnitInput, n)
	for i := range in {
		p := float64(rng.IntN(4))
		in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: evenKey(i)}, Data: coordinate.EmptyMap, Priority: &p}
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 3 {
		if err := ns.UpdateWorkUnit(ctx, "s", evenKey(i), coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func evenKey(i int) string { return fmt.Sprintf("k%06d", 2*i) }

func listKeys(us []*coordinate.WorkUnit) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Key.Bytes
	}
	return out
}

// churn, run between the chunks of a listing, deletes and adds units
// there with ordinary calls: each time a few existing even keys spread
// over the spec (ahead of the walk and behind it) and as many new odd
// keys. It records what it deleted.
type churn struct {
	t       *testing.T
	ns      *namespace
	n       int // even keys at the start
	rng     *rand.Rand
	deleted map[string]bool
	calls   int
}

func (c *churn) run() {
	c.calls++
	ctx := context.Background()
	var del []string
	var add []coordinate.WorkUnitInput
	for range 20 {
		i := c.rng.IntN(c.n)
		k := evenKey(i)
		del = append(del, k)
		c.deleted[k] = true
		odd := fmt.Sprintf("k%06d", 2*c.rng.IntN(c.n)+1)
		add = append(add, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: odd}, Data: coordinate.EmptyMap})
	}
	if _, err := c.ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Keys: del}); err != nil {
		c.t.Error(err)
	}
	if err := c.ns.AddWorkUnits(ctx, "s", add); err != nil {
		c.t.Error(err)
	}
	// A new unit FAILED behind or ahead of the walk, too.
	if err := c.ns.UpdateWorkUnit(ctx, "s", add[0].Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
		c.t.Error(err)
	}
}

// TestListingPagesUnderConcurrentChanges: a listing long enough to let go
// of the lock several times, while units are deleted and added between
// its chunks, never lists a key twice or out of order, and lists every
// unit that existed in a listed status throughout.
func TestListingPagesUnderConcurrentChanges(t *testing.T) {
	const n = 4*keyChunk + 123
	failed := []coordinate.Status{coordinate.StatusFailed}
	for _, tc := range []struct {
		name string
		q    coordinate.WorkUnitQuery
	}{
		{"by key", coordinate.WorkUnitQuery{}},
		{"by key from a start", coordinate.WorkUnitQuery{Start: evenKey(n / 3)}},
		{"by key, limited", coordinate.WorkUnitQuery{Limit: n / 2}},
		{"failed by key", coordinate.WorkUnitQuery{Statuses: failed, KeyOrder: true}},
		{"failed by priority", coordinate.WorkUnitQuery{Statuses: failed}},
		{"failed by priority, limited", coordinate.WorkUnitQuery{Statuses: failed, Limit: n}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := keyIndexNS(t, n)
			sp := ns.st.specs["s"]
			// Which units may be missed: those deleted meanwhile (and
			// those added meanwhile, which are not in want).
			var want []string
			for k, u := range sp.units {
				if k >= tc.q.Start && (len(tc.q.Statuses) == 0 || slices.Contains(tc.q.Statuses, u.status)) {
					want = append(want, k)
				}
			}
			c := &churn{t: t, ns: ns, n: n, rng: rand.New(rand.NewPCG(1, 2)), deleted: map[string]bool{}}
			ns.betweenChunks = c.run
			got, err := ns.ListWorkUnits(t.Context(), "s", tc.q)
			ns.betweenChunks = nil
			if err != nil {
				t.Fatal(err)
			}
			if c.calls < 3 {
				t.Fatalf("the listing let go of the lock %d times, want at least 3", c.calls)
			}
			seen := map[string]bool{}
			for i, u := range got {
				k := u.Key.Bytes
				if seen[k] {
					t.Fatalf("key %q listed twice", k)
				}
				seen[k] = true
				if i == 0 {
					continue
				}
				prev := got[i-1]
				inOrder := prev.Key.Bytes < k
				if len(tc.q.Statuses) > 0 && !tc.q.KeyOrder {
					inOrder = viewFirst(prev, u)
				}
				if !inOrder {
					t.Fatalf("%q listed after %q: out of order", k, prev.Key.Bytes)
				}
			}
			if tc.q.Limit > 0 && len(got) > tc.q.Limit {
				t.Fatalf("listed %d units, limit %d", len(got), tc.q.Limit)
			}
			missed := 0
			for _, k := range want {
				if !c.deleted[k] && !seen[k] {
					missed++
				}
			}
			if tc.q.Limit > 0 && len(got) == tc.q.Limit {
				return // the rest may be past the limit
			}
			if missed > 0 {
				t.Fatalf("%d units that existed throughout were not listed (%d listed)", missed, len(got))
			}
			checkInvariants(t, ns.st)
		})
	}
}

// otherCallGoesThrough, run between the chunks of a call on ns, requires
// the namespace lock to be free and call, from another goroutine, to
// complete; it reports (with t.Error) and returns false if the lock is
// held.
func otherCallGoesThrough(t *testing.T, ns *namespace, call func() error) bool {
	t.Helper()
	if !ns.mu.TryLock() {
		t.Error("the namespace lock is held between chunks")
		return false
	}
	ns.mu.Unlock()
	done := make(chan error)
	go func() { done <- call() }()
	if err := <-done; err != nil {
		t.Error(err)
	}
	return true
}

// TestListingLetsOtherCallsThrough: while a listing reads a big spec,
// another goroutine's call gets the namespace and completes before the
// listing returns.
func TestListingLetsOtherCallsThrough(t *testing.T) {
	ns := keyIndexNS(t, 3*keyChunk)
	ctx := t.Context()
	var events []string
	ns.betweenChunks = func() {
		events = append(events, "between chunks")
		if len(events) > 1 {
			return
		}
		if !otherCallGoesThrough(t, ns, func() error {
			_, err := ns.CountWorkUnits(ctx, "s")
			return err
		}) {
			return
		}
		events = append(events, "other call done")
	}
	got, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusFailed}, KeyOrder: true})
	events = append(events, "listing returned")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != keyChunk {
		t.Errorf("listed %d failed units, want %d", len(got), keyChunk)
	}
	if len(events) < 4 || events[0] != "between chunks" || events[1] != "other call done" || events[len(events)-1] != "listing returned" {
		t.Errorf("events %q: want the other call done between two chunks of the listing", events)
	}
}

// TestKeyIndexBuildUnderChanges: the index a listing builds while units
// are added and deleted between the chunks of the build holds exactly the
// spec's units afterwards, and stays so as units come and go.
func TestKeyIndexBuildUnderChanges(t *testing.T) {
	const n = 5 * keyChunk
	ns := keyIndexNS(t, n)
	sp := ns.st.specs["s"]
	if sp.keys != nil {
		t.Fatal("a spec nobody listed has a key index")
	}
	c := &churn{t: t, ns: ns, n: n, rng: rand.New(rand.NewPCG(3, 4)), deleted: map[string]bool{}}
	ns.betweenChunks = c.run
	if _, err := ns.ListWorkUnits(t.Context(), "s", coordinate.WorkUnitQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	ns.betweenChunks = nil
	// Collecting and inserting n units, less those the churn deleted.
	if want := 2*(n/keyChunk) - 2; c.calls < want {
		t.Fatalf("the build let go of the lock %d times, want at least %d", c.calls, want)
	}
	if sp.keys == nil || sp.keysBuilt != nil {
		t.Fatal("no key index after a listing by key")
	}
	checkInvariants(t, ns.st)
	c.run()
	if _, err := ns.DeleteWorkUnits(t.Context(), "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.StatusFailed}}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, ns.st)
	if _, err := ns.DeleteWorkUnits(t.Context(), "s", coordinate.DeleteQuery{All: true}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, ns.st)
	if sp.keys.Len() != 0 {
		t.Errorf("key index holds %d units after deleting all", sp.keys.Len())
	}
}

// TestListingSpecDeletedMidway: a spec deleted between the chunks of its
// listing ends the listing with ErrNoSuchWorkSpec; a spec of the same name
// made afterwards lists normally.
func TestListingSpecDeletedMidway(t *testing.T) {
	ns := keyIndexNS(t, 3*keyChunk)
	ctx := t.Context()
	for _, built := range []bool{false, true} {
		if built {
			defineSpec(t, ctx, ns, "s")
			in := make([]coordinate.WorkUnitInput, 3*keyChunk)
			for i := range in {
				in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: evenKey(i)}, Data: coordinate.EmptyMap}
			}
			if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
				t.Fatal(err)
			}
			if _, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{Limit: 1}); err != nil {
				t.Fatal(err)
			}
		}
		deleted := false
		ns.betweenChunks = deleteSpecOnce(t, ctx, ns, "s", &deleted)
		_, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{})
		ns.betweenChunks = nil
		if !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
			t.Fatalf("index built %v: listing a spec deleted midway: %v, want ErrNoSuchWorkSpec", built, err)
		}
	}
	defineSpec(t, ctx, ns, "s")
	if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "a"}, Data: coordinate.EmptyMap}}); err != nil {
		t.Fatal(err)
	}
	got, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{})
	if err != nil || !slices.Equal(listKeys(got), []string{"a"}) {
		t.Fatalf("listing the new spec: %q, %v", listKeys(got), err)
	}
	checkInvariants(t, ns.st)
}

// TestListByPriorityMatchesSort: every listing, by key or by priority,
// from the heaps or from a walk of the key index, equals the units sorted
// the same way, truncated: statuses mixed, many delayed and pending units
// (with the heaps read, and with the key index walked instead), starts
// and limits across chunks.
func TestListByPriorityMatchesSort(t *testing.T) {
	ctx := t.Context()
	clock := coordinate.NewFakeClock(time.Unix(1e9, 0))
	ns := newNamespace("", Options{Clock: clock})
	defineSpec(t, ctx, ns, "s")
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 3 * keyChunk
	in := make([]coordinate.WorkUnitInput, n)
	for i := range in {
		p := float64(rng.IntN(5))
		in[i] = coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("k%06d", rng.IntN(10*n))}, Data: coordinate.EmptyMap, Priority: &p}
		if i%3 == 0 {
			in[i].Delay = time.Hour
		}
	}
	if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: keyChunk + 500}); err != nil {
		t.Fatal(err)
	}
	sp := ns.st.specs["s"]
	for k, u := range sp.units {
		switch rng.IntN(8) {
		case 0:
			if u.status == coordinate.StatusPending {
				continue
			}
			if err := ns.UpdateWorkUnit(ctx, "s", k, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := ns.UpdateWorkUnit(ctx, "s", k, coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sp.delayed.Len()+sp.pending.Len() <= keyChunk {
		t.Fatalf("only %d delayed and pending units: the walk does not let go of the lock", sp.delayed.Len()+sp.pending.Len())
	}
	// The heaps are read up to heapScanMax delayed and pending units (and
	// a limit up to it), the key index walked beyond: with the best
	// AVAILABLE units from their heap at 200, without at 0.
	for _, ns.heapScanMax = range []int{heapScanMax, 200, 0} {
		listAllWays(t, ns, sp)
	}
	checkInvariants(t, ns.st)
}

func listAllWays(t *testing.T, ns *namespace, sp *spec) {
	ctx := t.Context()
	A, P, F, X := coordinate.StatusAvailable, coordinate.StatusPending, coordinate.StatusFinished, coordinate.StatusFailed
	for _, statuses := range [][]coordinate.Status{nil, {A}, {P}, {A, P}, {F}, {X, A}, {F, X, P}} {
		for _, keyOrder := range []bool{false, true} {
			if keyOrder && ns.heapScanMax != heapScanMax {
				continue // walked the same way whatever the heaps hold
			}
			for _, start := range []string{"", "k015000"} {
				var all []*unit
				for _, u := range sp.units {
					if u.key >= start && (statuses == nil || slices.Contains(statuses, u.status)) {
						all = append(all, u)
					}
				}
				less := availableFirst
				if statuses == nil || keyOrder {
					less = func(a, b *unit) bool { return a.key < b.key }
				}
				slices.SortFunc(all, func(a, b *unit) int {
					if less(a, b) {
						return -1
					}
					return 1
				})
				for _, limit := range []int{0, 100, keyChunk + 1} {
					q := coordinate.WorkUnitQuery{Statuses: statuses, KeyOrder: keyOrder, Start: start, Limit: limit}
					got, err := ns.ListWorkUnits(ctx, "s", q)
					if err != nil {
						t.Fatal(err)
					}
					want := all
					if limit > 0 {
						want = all[:min(limit, len(all))]
					}
					wantKeys := make([]string, len(want))
					for i, u := range want {
						wantKeys[i] = u.key
					}
					if !slices.Equal(listKeys(got), wantKeys) {
						t.Errorf("heaps read up to %d: %+v: listed %d units, want %d (first difference at %d)",
							ns.heapScanMax, q, len(got), len(wantKeys), firstDiff(listKeys(got), wantKeys))
					}
				}
			}
		}
	}
}

// TestListingCancelled: a listing whose context ends between chunks
// returns its error and leaves the namespace usable; an index build it
// had begun is finished all the same, and complete.
func TestListingCancelled(t *testing.T) {
	ns := keyIndexNS(t, 3*keyChunk)
	for _, built := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		ns.betweenChunks = cancel
		_, err := ns.ListWorkUnits(ctx, "s", coordinate.WorkUnitQuery{})
		ns.betweenChunks = nil
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("index built %v: listing cancelled midway: %v, want context.Canceled", built, err)
		}
		sp := ns.st.specs["s"]
		if sp.keys == nil || sp.keysBuilt != nil {
			t.Fatalf("index built %v: the key index was left unfinished", built)
		}
		checkInvariants(t, ns.st)
		got, err := ns.ListWorkUnits(t.Context(), "s", coordinate.WorkUnitQuery{Limit: 2})
		if err != nil || !slices.Equal(listKeys(got), []string{evenKey(0), evenKey(1)}) {
			t.Fatalf("listing after a cancelled one: %q, %v", listKeys(got), err)
		}
	}
}
