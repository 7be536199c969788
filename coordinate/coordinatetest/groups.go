package coordinatetest

import (
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// groupTests cover unit groups (docs/dependencies.md): status, cancel, stall detection.
var groupTests = []test{
	{"Status", testGroupStatus},
	{"Cancel", testGroupCancel},
	{"Stall", testGroupStall},
	{"StallWaitsOutDelays", testGroupStallDelayed},
	{"EndedDelayStaysProgress", testGroupEndedDelayStaysProgress},
	{"ReAddKeepsGroup", testGroupReAdd},
	{"ExpiryIsProgress", testGroupExpiryProgress},
	{"RemovalIsProgress", testGroupRemovalProgress},
}

// A member deleted, archived or gone with its spec is progress of its
// group, dated when it goes; a group left with no member reports no last
// progress (and is not stalled).
func testGroupRemovalProgress(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "t"})
	e.add("s", e.grouped("a", "g"), e.grouped("b", "g"), e.grouped("c", "g"), e.grouped("d", "g"))
	e.add("t", e.grouped("x", "g"), e.grouped("y", "h"))
	step := func(what string, remove func()) {
		e.t.Helper()
		e.clock.Add(time.Hour) // past the stall timeout: without progress, g stalls
		now := e.clock.Now()
		remove()
		gs := e.groupStatus("g")
		e.checkTime("last progress after "+what, gs.LastProgress, now)
		if gs.Stalled {
			e.t.Errorf("group stalled right after %s: %+v", what, gs)
		}
	}
	step("a delete by key", func() {
		if _, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"a"}}); err != nil {
			e.t.Fatal(err)
		}
	})
	e.finish("s", "b", nil)
	step("an archive", func() {
		if err := e.ns.Archive(e.ctx, []string{"s"}, coordinate.RetentionPolicy{MaxCount: 0}); err != nil {
			e.t.Fatal(err)
		}
	})
	step("a delete by status", func() {
		if _, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.StatusAvailable}}); err != nil {
			e.t.Fatal(err)
		}
	})
	e.add("s", e.grouped("e", "g"))
	step("a spec's deletion", func() {
		if err := e.ns.DeleteWorkSpec(e.ctx, "s"); err != nil {
			e.t.Fatal(err)
		}
	})
	if _, err := e.ns.DeleteWorkUnits(e.ctx, "t", coordinate.DeleteQuery{All: true}); err != nil {
		e.t.Fatal(err)
	}
	for _, g := range []string{"g", "h"} {
		if gs := e.groupStatus(g); len(gs.Counts) != 0 || !gs.LastProgress.IsZero() || gs.Stalled {
			e.t.Errorf("group %s with no member left: %+v, want no counts and no last progress", g, gs)
		}
	}
}

// A lease lapsing changes its unit's status: progress for the unit's
// group, dated when the call that applies it runs.
func testGroupExpiryProgress(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.grouped("k", "g"))
	e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 5 * time.Minute})
	e.clock.Add(6 * time.Minute)
	now := e.clock.Now()
	gs := e.groupStatus("g")
	if gs.Counts[coordinate.StatusAvailable] != 1 {
		e.t.Fatalf("group after the lease lapsed: %+v", gs)
	}
	e.checkTime("last progress after the lapse", gs.LastProgress, now)
}

// A unit re-added without a group keeps the one it had; re-added with
// another, it moves to that one.
func testGroupReAdd(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.grouped("k", "g1"))
	e.add("s", e.unit("k", m{"again": 1}))
	if gs := e.groupStatus("g1"); gs.Counts[coordinate.StatusAvailable] != 1 || gs.Complete {
		e.t.Errorf("g1 after a re-add without a group: %+v, want its unit still in it", gs)
	}
	e.add("s", e.grouped("k", "g2"))
	if gs := e.groupStatus("g1"); gs.Counts[coordinate.StatusAvailable] != 0 {
		e.t.Errorf("g1 after the unit moved to g2: %+v", gs)
	}
	if gs := e.groupStatus("g2"); gs.Counts[coordinate.StatusAvailable] != 1 {
		e.t.Errorf("g2 after the unit moved in: %+v", gs)
	}
}

// grouped is a unit input of group g, optionally depending on keys of "s".
func (e *env) grouped(key, g string, on ...string) coordinate.WorkUnitInput {
	in := e.dep(key, on...)
	in.Group = g
	return in
}

func (e *env) groupStatus(g string) *coordinate.GroupStatus {
	e.t.Helper()
	gs, err := e.ns.GroupStatus(e.ctx, g)
	if err != nil {
		e.t.Fatalf("GroupStatus(%q): %v", g, err)
	}
	return gs
}

func testGroupStatus(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "t"})
	e.add("s", e.grouped("a", "g"), e.grouped("b", "g", "a"), e.grouped("c", "g"), e.grouped("x", "other"), e.unit("plain", m{}))
	tin := e.unit("t1", m{})
	tin.Group = "g"
	e.add("t", tin)
	if u := e.mustGet("s", "a"); u.Group != "g" {
		e.t.Errorf("unit group = %q, want g", u.Group)
	}
	gs := e.groupStatus("g")
	want := map[coordinate.Status]int{coordinate.StatusAvailable: 3, coordinate.StatusBlocked: 1}
	if gs.Group != "g" || !equalCounts(gs.Counts, want) || gs.Complete {
		e.t.Errorf("group status = %+v, want counts %v, not complete", gs, want)
	}
	e.finish("s", "a", nil)
	e.fail("s", "c")
	e.finish("s", "b", nil)
	gs = e.groupStatus("g")
	if gs.Complete {
		e.t.Errorf("group complete with t1 still available: %+v", gs)
	}
	e.finish("t", "t1", nil)
	gs = e.groupStatus("g")
	want = map[coordinate.Status]int{coordinate.StatusFinished: 3, coordinate.StatusFailed: 1}
	if !equalCounts(gs.Counts, want) || !gs.Complete || gs.Stalled {
		e.t.Errorf("group status = %+v, want counts %v, complete", gs, want)
	}
	if gs := e.groupStatus("other"); !equalCounts(gs.Counts, map[coordinate.Status]int{coordinate.StatusAvailable: 1}) {
		e.t.Errorf("other group = %+v", gs)
	}
}

func equalCounts(a, b map[coordinate.Status]int) bool {
	n := 0
	for s, c := range a {
		if c == 0 {
			continue
		}
		n++
		if b[s] != c {
			return false
		}
	}
	return n == len(b)
}

func testGroupCancel(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.grouped("a", "g"), e.grouped("b", "g", "a"), e.grouped("done", "g"), e.grouped("c", "g"), e.unit("outside", m{}))
	e.finish("s", "done", nil)
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, LeaseTime: time.Hour})
	if len(as) != 1 || as[0].Key.Bytes != "a" {
		e.t.Fatalf("GetWork = %q, want a", attemptKeys(as))
	}
	n, err := e.ns.CancelGroup(e.ctx, "g")
	if err != nil || n != 3 {
		e.t.Errorf("CancelGroup = %d, %v; want 3 (a pending, b blocked, c available)", n, err)
	}
	for _, k := range []string{"a", "b", "c"} {
		u := e.mustGet("s", k)
		if u.Status != coordinate.StatusFailed {
			e.t.Errorf("cancelled unit %q status = %v, want failed", k, u.Status)
		}
		if tb := dataField(e.t, u.Data, "traceback"); !strings.Contains(tb, "cancel") {
			e.t.Errorf("cancelled unit %q traceback = %q, want it to say cancelled", k, tb)
		}
	}
	e.checkStatus("s", coordinate.StatusFinished, "done")
	e.checkStatus("s", coordinate.StatusAvailable, "outside")
	err = e.ns.UpdateAttempt(e.ctx, ref(as[0]), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateAttempt on a cancelled unit", err, coordinate.ErrLostLease)
	e.checkStatus("s", coordinate.StatusFailed, "a")
	if gs := e.groupStatus("g"); !gs.Complete {
		e.t.Errorf("cancelled group not complete: %+v", gs)
	}
	n, err = e.ns.CancelGroup(e.ctx, "g")
	if err != nil || n != 0 {
		e.t.Errorf("second CancelGroup = %d, %v; want 0", n, err)
	}
}

// stalledGroups returns the names StalledGroups reports, checking each is
// marked stalled.
func (e *env) stalledGroups() []string {
	e.t.Helper()
	gss, err := e.ns.StalledGroups(e.ctx)
	if err != nil {
		e.t.Fatalf("StalledGroups: %v", err)
	}
	var names []string
	for _, gs := range gss {
		if !gs.Stalled {
			e.t.Errorf("StalledGroups listed %q without Stalled set: %+v", gs.Group, gs)
		}
		names = append(names, gs.Group)
	}
	return names
}

func testGroupStall(e *env) {
	// Group h's only unit is leased for the whole test: a group waiting on
	// its workers is not stalled.
	e.spec(m{"name": "busy"})
	e.add("busy", e.grouped("h1", "h"))
	if as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 24 * time.Hour, WorkSpecs: []string{"busy"}}); len(as) != 1 {
		e.t.Fatalf("GetWork = %q, want h1", attemptKeys(as))
	}
	e.spec(m{"name": "s"})
	e.add("s", e.grouped("a", "g"), e.grouped("b", "g"))
	if gs := e.groupStatus("g"); gs.Stalled {
		e.t.Errorf("new group stalled: %+v", gs)
	}
	e.clock.Add(9 * time.Minute)
	if gs := e.groupStatus("g"); gs.Stalled {
		e.t.Errorf("group stalled after 9 minutes (default stall timeout 10): %+v", gs)
	}
	if as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: time.Hour}); len(as) != 1 {
		e.t.Fatalf("GetWork = %q, want one unit", attemptKeys(as))
	}
	e.checkTime("last progress", e.groupStatus("g").LastProgress, Epoch.Add(9*time.Minute))
	e.clock.Add(9 * time.Minute)
	if gs := e.groupStatus("g"); gs.Stalled {
		e.t.Errorf("group stalled 9 minutes after progress: %+v", gs)
	}
	e.clock.Add(2 * time.Minute)
	if gs := e.groupStatus("g"); !gs.Stalled {
		e.t.Errorf("group not stalled 11 minutes after the last progress: %+v", gs)
	}
	if got := e.stalledGroups(); len(got) != 1 || got[0] != "g" {
		e.t.Errorf("StalledGroups = %q, want [g]", got)
	}
	e.finish("s", "a", nil)
	if gs := e.groupStatus("g"); gs.Stalled {
		e.t.Errorf("group stalled right after progress: %+v", gs)
	}
	e.clock.Add(11 * time.Minute)
	if gs := e.groupStatus("g"); !gs.Stalled {
		e.t.Errorf("group not stalled 11 minutes after the last progress: %+v", gs)
	}
	e.finish("s", "b", nil)
	e.clock.Add(time.Hour)
	if gs := e.groupStatus("g"); gs.Stalled || !gs.Complete {
		e.t.Errorf("complete group reported stalled or incomplete: %+v", gs)
	}
	if got := e.stalledGroups(); len(got) != 0 {
		e.t.Errorf("StalledGroups = %q with every group complete or busy", got)
	}
}

// A group whose only AVAILABLE units wait out a delay has nothing a
// worker could take: not stalled however long the delay. The end of the
// delay is progress; the stall timeout runs from it.
// The end of a unit's delay is progress that stays recorded when the
// unit is then re-added without a delay, or with another: the group's
// last progress does not move back (PostgreSQL derived it from the
// unit's delay alone; found by the differential test,
// postgres/difftest_test.go).
func testGroupEndedDelayStaysProgress(e *env) {
	e.spec(m{"name": "s"})
	d := e.grouped("a", "g")
	d.Delay = time.Minute
	e.add("s", d)
	e.clock.Add(5 * time.Minute)
	e.checkTime("last progress after the delay ended", e.groupStatus("g").LastProgress, Epoch.Add(time.Minute))
	e.add("s", e.unit("a", m{"again": 1}))
	gs := e.groupStatus("g")
	e.checkTime("last progress after a re-add without a delay", gs.LastProgress, Epoch.Add(time.Minute))
	if gs.Counts[coordinate.StatusAvailable] != 1 {
		e.t.Errorf("group after the re-add: %+v", gs)
	}
	d = e.grouped("a", "g")
	d.Delay = time.Hour
	e.add("s", d)
	e.checkTime("last progress after a re-add with a new delay", e.groupStatus("g").LastProgress, Epoch.Add(time.Minute))
}

func testGroupStallDelayed(e *env) {
	e.spec(m{"name": "s"})
	d := e.grouped("a", "g")
	d.Delay = time.Hour
	e.add("s", d)
	e.clock.Add(30 * time.Minute)
	if gs := e.groupStatus("g"); gs.Stalled {
		e.t.Errorf("group with only a delayed unit stalled 30 minutes in: %+v", gs)
	}
	if got := e.stalledGroups(); len(got) != 0 {
		e.t.Errorf("StalledGroups = %q with the group's only unit delayed", got)
	}
	e.clock.Add(39 * time.Minute) // the delay ended 9 minutes ago
	gs := e.groupStatus("g")
	if gs.Stalled {
		e.t.Errorf("group stalled 9 minutes after its unit's delay ended: %+v", gs)
	}
	e.checkTime("last progress", gs.LastProgress, Epoch.Add(time.Hour))
	if got := e.stalledGroups(); len(got) != 0 {
		e.t.Errorf("StalledGroups = %q 9 minutes after the delay ended", got)
	}
	e.clock.Add(2 * time.Minute)
	if gs := e.groupStatus("g"); !gs.Stalled {
		e.t.Errorf("group not stalled 11 minutes after its unit's delay ended: %+v", gs)
	}
	if got := e.stalledGroups(); len(got) != 1 || got[0] != "g" {
		e.t.Errorf("StalledGroups = %q, want [g]", got)
	}
}
