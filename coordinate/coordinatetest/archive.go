package coordinatetest

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// archiveTests cover retention (SEMANTICS §12).
var archiveTests = []test{
	{"ByCount", testArchiveByCount},
	{"ByAge", testArchiveByAge},
	{"NoLimit", testArchiveNoLimit},
	{"NamedSpecsOnly", testArchiveNamedSpecsOnly},
	{"DeleteAllResetsCounts", testArchiveDeleteAll},
	{"DeleteStatusResetsCounts", testArchiveDeleteStatus},
}

// archiveFixture makes spec s with f0..f2 FINISHED (at epoch, +10s, +20s),
// x0..x1 FAILED (at +30s, +40s), and a0 AVAILABLE, p0 PENDING.
func archiveFixture(e *env, spec string) {
	e.spec(m{"name": spec})
	e.addKeys(spec, "a0", "f0", "f1", "f2", "p0", "x0", "x1")
	for _, k := range []string{"f0", "f1", "f2"} {
		e.finish(spec, k, nil)
		e.clock.Add(10 * time.Second)
	}
	for _, k := range []string{"x0", "x1"} {
		e.fail(spec, k)
		e.clock.Add(10 * time.Second)
	}
	e.update(spec, "p0", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: ptr(time.Hour)})
}

var fixtureCounts = map[coordinate.Status]int{
	coordinate.StatusAvailable: 1, coordinate.StatusPending: 1,
	coordinate.StatusFinished: 3, coordinate.StatusFailed: 2,
}

func (e *env) archive(names []string, p coordinate.RetentionPolicy) {
	e.t.Helper()
	if err := e.ns.Archive(e.ctx, names, p); err != nil {
		e.t.Fatalf("Archive(%q, %+v): %v", names, p, err)
	}
}

func testArchiveByCount(e *env) {
	archiveFixture(e, "s")
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: 1})
	e.checkCounts("s", fixtureCounts)
	e.checkKeys("listed after archive", e.list("s", coordinate.WorkUnitQuery{}), []string{"a0", "f2", "p0", "x1"})
	e.checkKeys("finished listed", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusFinished}}), []string{"f2"})
	for _, k := range []string{"f0", "f1", "x0"} {
		if u := e.get("s", k); u != nil {
			e.t.Errorf("archived unit %q still returned: %v", k, u.Status)
		}
	}
	// Archiving again changes nothing.
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: 1})
	e.checkCounts("s", fixtureCounts)
	// MaxCount 0 keeps none.
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: 0})
	e.checkKeys("after MaxCount 0", e.list("s", coordinate.WorkUnitQuery{}), []string{"a0", "p0"})
	e.checkCounts("s", fixtureCounts)
	// An archived key behaves as deleted: adding it again makes a new unit,
	// and the archived count stays.
	e.add("s", e.unit("f0", m{"again": true}))
	checkData(e.t, "re-added archived key", e.mustGet("s", "f0").Data, m{"again": true})
	e.checkCounts("s", map[coordinate.Status]int{
		coordinate.StatusAvailable: 2, coordinate.StatusPending: 1,
		coordinate.StatusFinished: 3, coordinate.StatusFailed: 2,
	})
}

func testArchiveByAge(e *env) {
	archiveFixture(e, "s") // clock now at +50s
	e.clock.Add(20 * time.Second)
	// Completed at 0, 10, 20 (finished) and 30, 40 (failed); now 70.
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: -1, MaxAge: 55 * time.Second})
	e.checkKeys("after MaxAge 55s", e.list("s", coordinate.WorkUnitQuery{}), []string{"a0", "f2", "p0", "x0", "x1"})
	e.checkCounts("s", fixtureCounts)
}

func testArchiveNoLimit(e *env) {
	archiveFixture(e, "s")
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: -1})
	e.checkKeys("after an unlimited policy", e.list("s", coordinate.WorkUnitQuery{}),
		[]string{"a0", "f0", "f1", "f2", "p0", "x0", "x1"})
}

func testArchiveNamedSpecsOnly(e *env) {
	archiveFixture(e, "s")
	archiveFixture(e, "t")
	e.archive([]string{"t"}, coordinate.RetentionPolicy{MaxCount: 0})
	if n := len(e.list("s", coordinate.WorkUnitQuery{})); n != 7 {
		e.t.Errorf("spec s not named but %d of 7 units remain", n)
	}
	e.checkKeys("t after archive", e.list("t", coordinate.WorkUnitQuery{}), []string{"a0", "p0"})
}

func testArchiveDeleteAll(e *env) {
	archiveFixture(e, "s")
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: 0})
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{All: true})
	if err != nil || n != 7 {
		e.t.Errorf("DeleteWorkUnits(all) = %d, %v; want 7 (2 units and 5 archived)", n, err)
	}
	e.checkCounts("s", nil)
}

func testArchiveDeleteStatus(e *env) {
	archiveFixture(e, "s")
	e.archive(nil, coordinate.RetentionPolicy{MaxCount: 1})
	n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.StatusFinished}})
	if err != nil || n != 3 {
		e.t.Errorf("DeleteWorkUnits(finished) = %d, %v; want 3 (f2 and 2 archived)", n, err)
	}
	e.checkCounts("s", map[coordinate.Status]int{
		coordinate.StatusAvailable: 1, coordinate.StatusPending: 1, coordinate.StatusFailed: 2,
	})
	// Deleting by key does not touch archived counts.
	n, err = e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"x0", "x1"}})
	if err != nil || n != 1 {
		e.t.Errorf("DeleteWorkUnits(keys x0 x1) = %d, %v; want 1 (x0 is archived)", n, err)
	}
	e.checkCounts("s", map[coordinate.Status]int{
		coordinate.StatusAvailable: 1, coordinate.StatusPending: 1, coordinate.StatusFailed: 1,
	})
}
