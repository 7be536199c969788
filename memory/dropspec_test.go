package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// deleteScenario says what a spec about to be deleted ("t", beside "o")
// is entangled with.
type deleteScenario struct {
	seed       uint64
	depsInT    bool // units of t wait for units (of t or o)
	depsOnT    bool // units of o wait for units of t
	depsInO    bool // units of o wait for units of o (and for a key t lacks)
	manyDeps   bool // more units are waited for than t has
	groupsInT  bool
	groupsInO  bool
	registered bool // the workers taking work are registered
}

func (sc deleteScenario) String() string {
	return fmt.Sprintf("seed%d-depsInT%v-depsOnT%v-depsInO%v-manyDeps%v-groupsInT%v-groupsInO%v-registered%v",
		sc.seed, sc.depsInT, sc.depsOnT, sc.depsInO, sc.manyDeps, sc.groupsInT, sc.groupsInO, sc.registered)
}

// fastEligible is whether deleting t may skip the walk in sc.
func (sc deleteScenario) fastEligible() bool { return !sc.depsInT && !sc.depsOnT && !sc.groupsInT }

// build drives ns (deterministically for sc) to a state with t's units in
// every status and heap, leased by workers, some leases lapsed.
func (sc deleteScenario) build(t *testing.T, ns *namespace, clock *coordinate.FakeClock) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(sc.seed, 11))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	defineSpec(t, ctx, ns, "t")
	defineSpec(t, ctx, ns, "o")
	workers := []string{"w1", "w2", "w3"}
	if sc.registered {
		must(ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: "p", Text: true}, Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}))
		for _, w := range workers {
			must(ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: w, Text: true}, Parent: &coordinate.Name{Bytes: "p", Text: true},
				Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}))
		}
	}
	key := func(n int) coordinate.Name {
		return coordinate.Name{Bytes: fmt.Sprintf("k%03d", r.IntN(n)), Text: r.IntN(4) > 0}
	}
	if sc.manyDeps {
		var units []coordinate.WorkUnitInput
		for i := range 300 {
			units = append(units, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprint("m", i), Text: true}, Data: coordinate.EmptyMap,
				DependsOn: []coordinate.UnitRef{{Spec: "o", Key: fmt.Sprint("missing", i)}}})
		}
		must(ns.AddWorkUnits(ctx, "o", units))
	}
	for range 4 {
		for _, spec := range []string{"t", "o"} {
			var units []coordinate.WorkUnitInput
			for range 30 + r.IntN(30) {
				in := coordinate.WorkUnitInput{Key: key(150), Data: coordinate.EmptyMap}
				if r.IntN(3) == 0 {
					p := float64(r.IntN(5))
					in.Priority = &p
				}
				if r.IntN(6) == 0 {
					in.Delay = time.Duration(1+r.IntN(60)) * time.Second
				}
				deps := spec == "t" && sc.depsInT || spec == "o" && (sc.depsOnT || sc.depsInO)
				if deps && r.IntN(4) == 0 {
					target := "o"
					switch {
					case spec == "t":
						target = []string{"t", "o"}[r.IntN(2)]
					case sc.depsOnT && (!sc.depsInO || r.IntN(2) == 0):
						target = "t"
					case r.IntN(5) == 0:
						target = "t" // a key t lacks: not an edge from one of t's units
						in.DependsOn = []coordinate.UnitRef{{Spec: target, Key: "missing"}}
					}
					if in.DependsOn == nil {
						in.DependsOn = []coordinate.UnitRef{{Spec: target, Key: key(150).Bytes}}
					}
				}
				if (spec == "t" && sc.groupsInT || spec == "o" && sc.groupsInO) && r.IntN(3) == 0 {
					in.Group = fmt.Sprint("g", r.IntN(3))
				}
				units = append(units, in)
			}
			if err := ns.AddWorkUnits(ctx, spec, units); err != nil && !isExpected(err) { // a cycle refuses the batch
				t.Fatal(err)
			}
		}
		for range 6 {
			w := workers[r.IntN(len(workers))]
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: w, Text: true},
				LeaseTime: time.Duration(5+r.IntN(60)) * time.Second, MaxJobs: 1 + r.IntN(8)})
			must(err)
			for _, a := range as {
				st := []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed, coordinate.StatusAvailable, coordinate.StatusPending}[r.IntN(4)]
				if st == coordinate.StatusPending {
					continue // keep the lease
				}
				err := ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}, coordinate.WorkUnitUpdate{Status: st})
				if err != nil && !isExpected(err) {
					t.Fatal(err)
				}
			}
		}
		clock.Add(time.Duration(10+r.IntN(30)) * time.Second) // some leases lapse
	}
}

// observe renders what clients can see of a namespace beyond dump.
func observe(t *testing.T, ns *namespace) string {
	t.Helper()
	ctx := context.Background()
	var out []any
	add := func(v any, err error) {
		if err != nil {
			out = append(out, err.Error())
			return
		}
		out = append(out, v)
	}
	add(ns.ChildWorkUnits(ctx, "p"))
	for _, w := range []string{"w1", "w2", "w3"} {
		add(ns.WorkerUnits(ctx, w))
	}
	add(ns.Workers(ctx))
	for _, spec := range []string{"t", "o"} {
		add(ns.CountWorkUnits(ctx, spec))
		add(ns.ListWorkUnits(ctx, spec, coordinate.WorkUnitQuery{}))
	}
	for _, g := range []string{"g0", "g1", "g2"} {
		add(ns.GroupStatus(ctx, g))
	}
	add(ns.StalledGroups(ctx))
	specs, next, err := ns.ListWorkSpecs(ctx, "", 0)
	add([]any{specs, next}, err)
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func deleteScenarios(seeds int) []deleteScenario {
	var out []deleteScenario
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		bit := func(i uint) bool { return seed>>i&1 == 1 }
		out = append(out, deleteScenario{seed: seed,
			depsInT: bit(0) && bit(3), depsOnT: bit(1) && bit(4), depsInO: bit(2), manyDeps: bit(2) && bit(0),
			groupsInT: bit(3) && !bit(0), groupsInO: bit(1), registered: !bit(4) || bit(2)})
	}
	return out
}

// twinNamespaces builds sc in two volatile namespaces, each on its own
// fake clock, for tests that do one thing two ways and compare.
func twinNamespaces(t *testing.T, sc deleteScenario) ([2]*namespace, [2]*coordinate.FakeClock) {
	t.Helper()
	var nss [2]*namespace
	var clocks [2]*coordinate.FakeClock
	for i := range nss {
		clocks[i] = coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		nss[i] = newNamespace("", Options{Clock: clocks[i], StallTimeout: time.Minute})
		sc.build(t, nss[i], clocks[i])
	}
	return nss, clocks
}

// compareTwins requires the twin namespaces, left by the two ways named,
// to hold the same state and show clients the same (observe), first
// "after" them and again after more work on both: spec t made again with
// a key it had, the workers leasing, every lease lapsing. Nothing of the
// old units may linger either way.
func compareTwins(t *testing.T, nss [2]*namespace, clocks [2]*coordinate.FakeClock, ways [2]string, after string) {
	t.Helper()
	ctx := context.Background()
	compare := func(when string) {
		t.Helper()
		if a, b := dump(nss[0].st), dump(nss[1].st); a != b {
			t.Fatalf("%s, state differs (%s, %s):\n%s", when, ways[0], ways[1], dumpDiff(a, b))
		}
		if a, b := observe(t, nss[0]), observe(t, nss[1]); a != b {
			t.Fatalf("%s, clients see\n%s\nafter %s, and after %s\n%s", when, a, ways[0], ways[1], b)
		}
	}
	compare(after)
	for i, ns := range nss {
		defineSpec(t, ctx, ns, "t")
		if err := ns.AddWorkUnits(ctx, "t", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: "k001", Text: true}, Data: coordinate.EmptyMap}}); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"w1", "w2", "w3"} {
			if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: w, Text: true}, LeaseTime: time.Minute, MaxJobs: 5}); err != nil {
				t.Fatal(err)
			}
		}
		clocks[i].Add(2 * time.Hour)
		if _, err := ns.CountWorkUnits(ctx, "o"); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, ns.st)
	}
	compare("after more work")
}

// TestDeleteSpecFastMatchesWalk deletes a spec in the same state twice,
// once letting the namespace skip the unit-by-unit walk when it can and
// once forcing the walk, and requires everything observable to be the
// same, then and after more work on the namespace.
func TestDeleteSpecFastMatchesWalk(t *testing.T) {
	ctx := context.Background()
	fast := 0
	for _, sc := range deleteScenarios(32) {
		t.Run(sc.String(), func(t *testing.T) {
			nss, clocks := twinNamespaces(t, sc)
			for _, ns := range nss {
				checkInvariants(t, ns.st)
			}
			if a, b := dump(nss[0].st), dump(nss[1].st); a != b {
				t.Fatalf("the scenario is not deterministic:\n%s", dumpDiff(a, b))
			}
			sp := nss[0].st.specs["t"]
			if got := nss[0].st.canDropWhole(sp); got != sc.fastEligible() {
				t.Fatalf("canDropWhole = %v, want %v", got, sc.fastEligible())
			}
			if got := len(nss[0].st.dependents) > len(sp.units); got != sc.manyDeps {
				t.Fatalf("%d units waited for, t has %d: the scenario does not test what it says", len(nss[0].st.dependents), len(sp.units))
			}
			if got := nss[0].st.workers.holders; sc.registered && len(got) == 0 {
				t.Fatal("no unit is outstanding: the scenario proves little")
			}
			if sc.fastEligible() {
				fast++
			}
			nss[1].st.walkSpecDeletes = true
			for _, ns := range nss {
				if err := ns.DeleteWorkSpec(ctx, "t"); err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, ns.st)
			}
			compareTwins(t, nss, clocks, [2]string{"the fast path", "the walk"}, "after the delete")
		})
	}
	if fast == 0 || fast == 32 {
		t.Fatalf("%d of 32 scenarios could take the fast path: both paths must be compared", fast)
	}
}

// journaledScenario opens a journaled backend in a new directory, builds
// sc in its namespace and takes a full snapshot.
func journaledScenario(t *testing.T, sc deleteScenario) (dir string, clock *coordinate.FakeClock, b *Backend, ns *namespace) {
	t.Helper()
	dir = t.TempDir()
	clock = coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b = openPersistent(t, dir, clock, 1<<40)
	ns = nsOf(t, b, "")
	sc.build(t, ns, clock)
	snapshot(t, b)
	return dir, clock, b, ns
}

// restartedState crashes b (no final snapshot), opens dir again, checks
// the restored namespace's invariants and returns its state.
func restartedState(t *testing.T, b *Backend, dir string, clock *coordinate.FakeClock) string {
	t.Helper()
	crashClose(b)
	r := openPersistent(t, dir, clock, 1<<40)
	defer r.Close()
	checkInvariants(t, nsOf(t, r, "").st)
	return dumpAll(r)
}

// checkSnapshotAt flushes b's journal and requires the snapshots in a
// copy of dir, without the journal after them, to hold atBoundary.
func checkSnapshotAt(t *testing.T, b *Backend, dir string, clock *coordinate.FakeClock, atBoundary string) {
	t.Helper()
	if got := snapshotOnly(t, flushedCopy(t, b, dir), clock); got != atBoundary {
		t.Fatalf("the snapshot differs from the state at its boundary:\n%s", dumpDiff(got, atBoundary))
	}
}

// TestDeleteSpecJournalAndDelta deletes a spec in a journaled namespace
// (both ways) after a full snapshot, takes a delta snapshot, and requires
// a restart from the delta, and one from the journal alone, to restore
// the state the delete left, the same both ways.
func TestDeleteSpecJournalAndDelta(t *testing.T) {
	ctx := context.Background()
	for _, sc := range deleteScenarios(8) {
		t.Run(sc.String(), func(t *testing.T) {
			var wants [2]string
			for walk := range 2 {
				for _, delta := range []bool{false, true} {
					dir, clock, b, ns := journaledScenario(t, sc)
					b.wal.maxDeltas, b.wal.deltaShare = 1000, 0
					ns.st.walkSpecDeletes = walk == 1
					if err := ns.DeleteWorkSpec(ctx, "t"); err != nil {
						t.Fatal(err)
					}
					want := dumpAll(b)
					if delta {
						if st := snapshot(t, b); !st.Delta || st.Gone != 0 {
							t.Fatalf("snapshot after the delete: %+v; want a delta without tombstones", st)
						}
					}
					if got := restartedState(t, b, dir, clock); got != want {
						t.Fatalf("walk=%v delta=%v: restored state differs:\n%s", walk == 1, delta, dumpDiff(got, want))
					}
					if wants[walk] == "" {
						wants[walk] = want
					}
				}
			}
			if wants[0] != wants[1] {
				t.Fatalf("the fast path and the walk leave different states:\n%s", dumpDiff(wants[0], wants[1]))
			}
		})
	}
}

// TestDeleteSpecDuringCapture deletes a spec that could be dropped whole
// while a snapshot (full or delta) is being captured: the delete must walk
// its units (the capture saves their pre-images, and tombstones are kept),
// the snapshot must hold the state at its boundary and a restart the state
// after the delete.
func TestDeleteSpecDuringCapture(t *testing.T) {
	ctx := context.Background()
	sc := deleteScenarios(1)[0]
	if !sc.fastEligible() || !sc.registered {
		t.Fatalf("scenario %v: want one a delete may drop whole, with leases", sc)
	}
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("full%v", full), func(t *testing.T) {
			dir, clock, b, ns := journaledScenario(t, sc)
			defer b.Close()
			defineSpec(t, ctx, ns, "s")
			fill(t, ns, ctx, "more", 60) // dirty units, so that a delta's capture lets go of the lock too
			old := ns.st.specs["t"]
			n := len(old.units)
			w := b.wal
			w.needBase = full
			w.maxDeltas, w.deltaShare, w.captureChunk = 1000, 0, 3
			deleted := false
			w.betweenChunks = deleteSpecOnce(t, ctx, ns, "t", &deleted)
			atBoundary := dumpAll(b)
			st := snapshot(t, b)
			w.betweenChunks = nil
			if !deleted || st.Delta == full {
				t.Fatalf("snapshot %+v: deleted during it %v", st, deleted)
			}
			if !ns.st.track || len(old.gone) != n {
				t.Fatalf("the delete during a capture left %d tombstones for %d units: it did not walk them", len(old.gone), n)
			}
			checkSnapshotAt(t, b, dir, clock, atBoundary)
			want := dumpAll(b)
			if got := restartedState(t, b, dir, clock); got != want {
				t.Fatalf("restored state differs from the live one:\n%s", dumpDiff(got, want))
			}
		})
	}
}

// deleteSpecOnce returns a betweenChunks hook that deletes spec name the
// first time it runs and sets *deleted.
func deleteSpecOnce(t *testing.T, ctx context.Context, ns *namespace, name string, deleted *bool) func() {
	return func() {
		if !*deleted {
			*deleted = true
			if err := ns.DeleteWorkSpec(ctx, name); err != nil {
				t.Error(err)
			}
		}
	}
}
