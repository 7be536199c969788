package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// chunkedCall is a call that works in chunks on a big spec
// (unitdelete.go), on spec "t" of a deleteScenario; it returns the count
// the call reports (0 for those that report none).
type chunkedCall struct {
	name string
	call func(ctx context.Context, ns *namespace) (int, error)
}

func chunkedCalls() []chunkedCall {
	del := func(q coordinate.DeleteQuery) func(context.Context, *namespace) (int, error) {
		return func(ctx context.Context, ns *namespace) (int, error) { return ns.DeleteWorkUnits(ctx, "t", q) }
	}
	statuses := func(sts ...coordinate.Status) coordinate.DeleteQuery { return coordinate.DeleteQuery{Statuses: sts} }
	archive := func(specs []string, p coordinate.RetentionPolicy) func(context.Context, *namespace) (int, error) {
		return func(ctx context.Context, ns *namespace) (int, error) { return 0, ns.Archive(ctx, specs, p) }
	}
	return []chunkedCall{
		{"delete-failed", del(statuses(coordinate.StatusFailed))},
		{"delete-blocked", del(statuses(coordinate.StatusBlocked))},
		{"delete-blocked-failed", del(statuses(coordinate.StatusBlocked, coordinate.StatusFailed))},
		{"delete-available-pending-finished", del(statuses(coordinate.StatusAvailable, coordinate.StatusPending, coordinate.StatusFinished))},
		{"delete-all", del(coordinate.DeleteQuery{All: true})},
		{"archive-keep-3", archive([]string{"t"}, coordinate.RetentionPolicy{MaxCount: 3})},
		{"archive-every-spec-keep-none", archive(nil, coordinate.RetentionPolicy{MaxCount: 0})},
		{"archive-by-age", archive([]string{"o", "t", "missing"}, coordinate.RetentionPolicy{MaxCount: -1, MaxAge: 70 * time.Second})},
		{"delete-spec", func(ctx context.Context, ns *namespace) (int, error) { return 0, ns.DeleteWorkSpec(ctx, "t") }},
	}
}

// chunkedScenarios are deleteScenarios varied enough for the chunked
// calls: dependencies beside t and many targets (5), groups in and beside
// t (10), dependencies in t (11), everything but groups in t (31).
func chunkedScenarios() []deleteScenario {
	all := deleteScenarios(31)
	var out []deleteScenario
	for _, seed := range []int{5, 10, 11, 31} {
		out = append(out, all[seed-1])
	}
	return out
}

// someChunkedCalls are the chunkedCalls the persistence tests run: each
// kind of victim selection once.
func someChunkedCalls() []chunkedCall {
	var out []chunkedCall
	for _, c := range chunkedCalls() {
		switch c.name {
		case "delete-blocked-failed", "archive-every-spec-keep-none", "delete-spec":
			out = append(out, c)
		}
	}
	return out
}

// countDrops makes ns count the chunks (opDropUnits) it commits.
func countDrops(ns *namespace, n *int) {
	ns.journal = func(o op) {
		if _, ok := o.(*opDropUnits); ok {
			*n++
		}
	}
}

// TestChunkedDeleteMatchesOneShot runs each chunked call on the same
// state twice, in chunks of 3 units and as the one-shot op, with nothing
// else running, and requires the same count and everything observable to
// be the same (dependents failed, groups, archived counts, workers), then
// and after more work on the namespace.
func TestChunkedDeleteMatchesOneShot(t *testing.T) {
	ctx := context.Background()
	multi := map[string]int{}
	for _, sc := range chunkedScenarios() {
		for _, c := range chunkedCalls() {
			t.Run(sc.String()+"/"+c.name, func(t *testing.T) {
				nss, clocks := twinNamespaces(t, sc)
				for _, ns := range nss {
					// Archived counts, which deletes by status forget.
					if err := ns.Archive(ctx, []string{"t"}, coordinate.RetentionPolicy{MaxCount: 6}); err != nil {
						t.Fatal(err)
					}
				}
				nss[0].deleteChunk, nss[1].deleteChunk = 3, 1<<30
				drops := 0
				countDrops(nss[0], &drops)
				var counts [2]int
				for i, ns := range nss {
					n, err := c.call(ctx, ns)
					if err != nil {
						t.Fatal(err)
					}
					counts[i] = n
					checkInvariants(t, ns.st)
				}
				if drops > 1 {
					multi[c.name]++
				}
				if counts[0] != counts[1] {
					t.Fatalf("the call in chunks reports %d, the one-shot op %d", counts[0], counts[1])
				}
				compareTwins(t, nss, clocks, [2]string{"the chunks", "the one-shot op"}, "after the call")
			})
		}
	}
	for _, c := range chunkedCalls() {
		if multi[c.name] == 0 {
			t.Errorf("%s never went in more than one chunk: the test compares nothing", c.name)
		}
	}
}

// churnedUnit is what TestChunkedDeleteUnderChanges knows of one key.
type churnedUnit struct {
	wanted     bool // it had a status the call asked for at some moment
	keptWanted bool // it had one at the start and kept it throughout
}

// TestChunkedDeleteUnderChanges deletes the FAILED units of a spec, and
// archives its FINISHED ones, in chunks while other calls, between the
// chunks, retry, fail, finish, lease and add units, and checks what the
// call promises: every unit that kept the status throughout is gone,
// nothing that never had it is, and the count is what went. The first
// time it lets go of the lock, a call from another goroutine goes through.
func TestChunkedDeleteUnderChanges(t *testing.T) {
	for _, archive := range []bool{false, true} {
		t.Run(fmt.Sprint("archive=", archive), func(t *testing.T) {
			ctx := context.Background()
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ns := newNamespace("", Options{Clock: clock, StallTimeout: time.Minute})
			ns.deleteChunk = 7
			defineSpec(t, ctx, ns, "s")
			want := coordinate.StatusFailed
			if archive {
				want = coordinate.StatusFinished
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			units := map[string]*churnedUnit{}
			setStatus := func(key string, st coordinate.Status) {
				t.Helper()
				must(ns.UpdateWorkUnit(ctx, "s", key, coordinate.WorkUnitUpdate{Status: st}))
				clock.Add(time.Millisecond) // completion times differ
			}
			const n = 400
			var in []coordinate.WorkUnitInput
			for i := range n {
				in = append(in, coordinate.WorkUnitInput{Key: coordinate.Name{Bytes: fmt.Sprintf("u%03d", i), Text: true}, Data: coordinate.EmptyMap})
			}
			must(ns.AddWorkUnits(ctx, "s", in))
			statuses := []coordinate.Status{coordinate.StatusFailed, coordinate.StatusFinished, coordinate.StatusAvailable}
			if archive { // which keeps FAILED units by the same rule: none here
				statuses[0] = coordinate.StatusAvailable
			}
			for i := range n {
				key := fmt.Sprintf("u%03d", i)
				st := statuses[i%3]
				if st != coordinate.StatusAvailable {
					setStatus(key, st)
				}
				units[key] = &churnedUnit{wanted: st == want, keptWanted: st == want}
			}
			// The archive keeps the 20 newest FINISHED units it finds.
			const keepNewest = 20
			completed := map[string]int64{}
			for k, u := range ns.st.specs["s"].units {
				completed[k] = u.expiration
			}
			rng := rand.New(rand.NewPCG(5, 6))
			pickWith := func(st coordinate.Status) string {
				sp := ns.st.specs["s"]
				keys := make([]string, 0, len(units))
				for k := range units {
					if u := sp.units[k]; u != nil && u.status == st {
						keys = append(keys, k)
					}
				}
				if len(keys) == 0 {
					return ""
				}
				slices.Sort(keys)
				return keys[rng.IntN(len(keys))]
			}
			changed := func(key string, to coordinate.Status) {
				u := units[key]
				u.keptWanted = false
				u.wanted = u.wanted || to == want
			}
			between, added := 0, 0
			ns.betweenChunks = func() {
				between++
				if between == 1 {
					if !otherCallGoesThrough(t, ns, func() error {
						_, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Hour, MaxJobs: 1})
						return err
					}) {
						return
					}
				}
				clock.Add(time.Second)
				switch rng.IntN(5) {
				case 0: // a wanted unit leaves the status
					if k := pickWith(want); k != "" {
						if archive {
							must(ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: k, Text: true}, Data: coordinate.EmptyMap}}))
						} else {
							_, err := ns.RetryWorkUnits(ctx, "s", []string{k})
							must(err)
						}
						changed(k, coordinate.StatusAvailable)
					}
				case 1: // an available unit takes it
					if k := pickWith(coordinate.StatusAvailable); k != "" {
						setStatus(k, want)
						changed(k, want)
					}
				case 2: // a wanted unit takes it again: a new completion time
					if k := pickWith(want); k != "" {
						setStatus(k, coordinate.StatusAvailable)
						setStatus(k, want)
						changed(k, want)
					}
				case 3: // a new unit with the status
					k := fmt.Sprintf("n%03d", added)
					added++
					must(ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: k, Text: true}, Data: coordinate.EmptyMap}}))
					units[k] = &churnedUnit{}
					setStatus(k, want)
					changed(k, want)
				case 4: // another status changes
					if archive {
						if k := pickWith(coordinate.StatusAvailable); k != "" {
							must(ns.UpdateWorkUnit(ctx, "s", k, coordinate.WorkUnitUpdate{Status: coordinate.StatusPending,
								Worker: &coordinate.Name{Bytes: "w", Text: true}}))
							changed(k, coordinate.StatusPending)
						}
					} else if k := pickWith(coordinate.StatusAvailable); k != "" {
						setStatus(k, coordinate.StatusFinished)
						changed(k, coordinate.StatusFinished)
					}
				}
			}
			var count int
			var err error
			if archive {
				err = ns.Archive(ctx, []string{"s"}, coordinate.RetentionPolicy{MaxCount: keepNewest})
				count = ns.st.specs["s"].archived[coordinate.StatusFinished] + ns.st.specs["s"].archived[coordinate.StatusFailed]
			} else {
				count, err = ns.DeleteWorkUnits(ctx, "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{want}})
			}
			ns.betweenChunks = nil
			must(err)
			checkInvariants(t, ns.st)
			if between < (n/3)/ns.deleteChunk {
				t.Fatalf("the call let go of the lock %d times: it did not work in chunks", between)
			}
			sp := ns.st.specs["s"]
			gone := 0
			// Of the units that kept the status throughout, the archive
			// keeps at most keepNewest, all newer than those it archives.
			var kept, archived []int64
			for k, u := range units {
				exists := sp.units[k] != nil
				if !exists {
					gone++
				}
				switch {
				case u.keptWanted && archive && exists:
					kept = append(kept, completed[k])
				case u.keptWanted && archive:
					archived = append(archived, completed[k])
				case u.keptWanted && exists:
					t.Errorf("unit %s kept status %v throughout and was not deleted", k, want)
				case !u.wanted && !exists:
					t.Errorf("unit %s never had status %v and was removed", k, want)
				}
			}
			if archive {
				if len(kept) > keepNewest || len(archived) == 0 ||
					len(kept) > 0 && slices.Max(archived) >= slices.Min(kept) {
					t.Errorf("of the unchanged units the archive kept %d, archived %d, not all older: %v, %v",
						len(kept), len(archived), kept, archived)
				}
			}
			if count != gone {
				t.Errorf("the call reports %d units removed, %d went", count, gone)
			}
		})
	}
}

// TestChunkedDeleteJournalAndDelta runs each chunked call in a journaled
// namespace after a full snapshot, optionally takes a delta after it,
// and requires a restart (from the delta, or from the journal alone) to
// restore the state the call left.
func TestChunkedDeleteJournalAndDelta(t *testing.T) {
	ctx := context.Background()
	sc := deleteScenarios(31)[30] // dependencies in, on and beside t, groups in o, leases
	if !sc.depsInT || !sc.depsOnT || !sc.groupsInO || !sc.registered {
		t.Fatalf("scenario %v: want dependencies in and on t, groups and leases", sc)
	}
	for _, c := range someChunkedCalls() {
		for _, delta := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delta=%v", c.name, delta), func(t *testing.T) {
				dir, clock, b, ns := journaledScenario(t, sc)
				b.wal.maxDeltas, b.wal.deltaShare = 1000, 0
				ns.deleteChunk = 3
				drops := 0
				countDrops(ns, &drops)
				if _, err := c.call(ctx, ns); err != nil {
					t.Fatal(err)
				}
				if drops < 2 {
					t.Fatalf("%d chunks: the call did not work in chunks", drops)
				}
				want := dumpAll(b)
				if delta {
					if st := snapshot(t, b); !st.Delta {
						t.Fatalf("snapshot after the call: %+v; want a delta", st)
					}
				}
				if got := restartedState(t, b, dir, clock); got != want {
					t.Fatalf("restored state differs:\n%s", dumpDiff(got, want))
				}
			})
		}
	}
}

// TestChunkedDeleteDuringCapture runs each chunked call while a snapshot
// (full or delta) is being captured, from between two chunks of the
// capture: the snapshot must hold the state at its boundary and a restart
// the state after the call.
func TestChunkedDeleteDuringCapture(t *testing.T) {
	ctx := context.Background()
	sc := deleteScenarios(31)[30]
	for _, c := range someChunkedCalls() {
		for _, full := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/full=%v", c.name, full), func(t *testing.T) {
				dir, clock, b, ns := journaledScenario(t, sc)
				defer b.Close()
				defineSpec(t, ctx, ns, "s")
				fill(t, ns, ctx, "more", 60) // dirty units, so that a delta's capture lets go of the lock too
				ns.deleteChunk = 3
				drops := 0
				countDrops(ns, &drops)
				w := b.wal
				w.needBase = full
				w.maxDeltas, w.deltaShare, w.captureChunk = 1000, 0, 3
				called := false
				w.betweenChunks = func() {
					if !called {
						called = true
						if _, err := c.call(ctx, ns); err != nil {
							t.Error(err)
						}
					}
				}
				atBoundary := dumpAll(b)
				st := snapshot(t, b)
				w.betweenChunks = nil
				if !called || st.Delta == full || drops < 2 {
					t.Fatalf("snapshot %+v: called during it %v, in %d chunks", st, called, drops)
				}
				checkSnapshotAt(t, b, dir, clock, atBoundary)
				want := dumpAll(b)
				if got := restartedState(t, b, dir, clock); got != want {
					t.Fatalf("restored state differs from the live one:\n%s", dumpDiff(got, want))
				}
			})
		}
	}
}

// TestChunkedSpecDeleteUnderChanges deletes a spec whose units are in a
// group and waited for elsewhere, in chunks, while other calls between
// the chunks add units to it (some grouped), lease them and make units of
// another spec wait for them: afterwards the spec is gone and nothing
// (group, worker, the namespace's invariants) still refers to a unit of
// it, and the units that waited for its units failed.
func TestChunkedSpecDeleteUnderChanges(t *testing.T) {
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := newNamespace("", Options{Clock: clock, StallTimeout: time.Minute})
	ns.deleteChunk = 5
	defineSpec(t, ctx, ns, "t")
	defineSpec(t, ctx, ns, "o")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	w := coordinate.Name{Bytes: "w", Text: true}
	must(ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: w, Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}))
	add := func(spec, key, group string, deps ...coordinate.UnitRef) {
		t.Helper()
		must(ns.AddWorkUnits(ctx, spec, []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: key, Text: true}, Data: coordinate.EmptyMap, Group: group, DependsOn: deps}}))
	}
	for i := range 200 {
		group := ""
		if i%3 == 0 {
			group = "g"
		}
		add("t", fmt.Sprintf("t%03d", i), group)
		if i%4 == 0 {
			add("o", fmt.Sprintf("o%03d", i), "h", coordinate.UnitRef{Spec: "t", Key: fmt.Sprintf("t%03d", i)})
		}
	}
	_, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Hour, MaxJobs: 20})
	must(err)
	between := 0
	ns.betweenChunks = func() {
		between++
		add("t", fmt.Sprintf("new%03d", between), "g")
		add("o", fmt.Sprintf("onew%03d", between), "h", coordinate.UnitRef{Spec: "t", Key: fmt.Sprintf("t%03d", 199-between%200)})
		if _, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: w, LeaseTime: time.Hour, MaxJobs: 2}); err != nil {
			t.Error(err)
		}
	}
	must(ns.DeleteWorkSpec(ctx, "t"))
	ns.betweenChunks = nil
	if between < 200/ns.deleteChunk {
		t.Fatalf("the delete let go of the lock %d times: it did not work in chunks", between)
	}
	checkInvariants(t, ns.st)
	if _, err := ns.CountWorkUnits(ctx, "t"); err == nil {
		t.Fatal("spec t still exists")
	}
	gs, err := ns.GroupStatus(ctx, "g")
	must(err)
	if gs != nil && len(gs.Counts) != 0 {
		t.Errorf("group g still counts units of the deleted spec: %v", gs.Counts)
	}
	held, err := ns.WorkerUnits(ctx, "w")
	must(err)
	for _, u := range held {
		if u.Spec.Bytes == "t" {
			t.Errorf("worker still holds %q of the deleted spec", u.Key.Bytes)
		}
	}
	// The units of o that waited for units of t failed when those went.
	gs, err = ns.GroupStatus(ctx, "h")
	must(err)
	if gs == nil || gs.Counts[coordinate.StatusFailed] == 0 || gs.Counts[coordinate.StatusAvailable] != 0 {
		t.Errorf("group h of the dependents in o: %+v; want failed units, none available", gs)
	}
}
