package coordinatetest

import (
	"sort"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// depTests cover work-unit dependencies (docs/dependencies.md, DECISIONS §9): a unit
// with unmet dependencies is BLOCKED, becomes AVAILABLE when all of them
// are FINISHED, and fails when one of them fails.
var depTests = []test{
	{"Diamond", testDepDiamond},
	{"Chain", testDepChain},
	{"AcrossSpecs", testDepAcrossSpecs},
	{"DependencyAddedLater", testDepAddedLater},
	{"AlreadyFinished", testDepAlreadyFinished},
	{"FailurePropagates", testDepFailurePropagates},
	{"WideDeepCascade", testDepWideDeepCascade},
	{"ExhaustedLeaseFailsDependents", testDepExhaustedLease},
	{"BlockedLeasedByHandExpiresBlocked", testDepBlockedLeaseExpiry},
	{"DeletingOtherUnitsKeepsWaiters", testDepDeleteOthers},
	{"ArchivedDependencyFailsWaiters", testDepArchived},
	{"ArchivedInTwoSpecsFailsWaitersTransitively", testDepArchivedAcrossSpecs},
	{"RetryRoot", testDepRetryRoot},
	{"FinishingFailedRootReleasesDependents", testDepFinishFailedRoot},
	{"RetryDependent", testDepRetryDependent},
	{"OwnFailureSurvivesRetryOfDependency", testDepOwnFailureSurvivesRetry},
	{"CycleRejected", testDepCycleRejected},
	{"CycleInOneCall", testDepCycleInOneCall},
	{"CycleOnlyInAReplacedItem", testDepCycleReplaced},
	{"SelfCycle", testDepSelfCycle},
	{"CycleThroughKeptEdges", testDepCycleThroughKeptEdges},
	{"ReAddDropsEdgesOfFailedUnit", testDepReAddDropsEdgesOfFailedUnit},
	{"ReAddsTakeEffectInOrder", testDepReAddsInOrder},
	{"ReAddedFailedDependencyAndDependent", testDepReAddFailedAndDependent},
	{"FailureSpreadsBeforeLaterItem", testDepFailureSpreadsBeforeLaterItem},
	{"UnfailSpreadsBeforeLaterItem", testDepUnfailSpreadsBeforeLaterItem},
}

// dep makes a unit input of spec "s" depending on keys of spec "s".
func (e *env) dep(key string, on ...string) coordinate.WorkUnitInput {
	in := e.unit(key, m{"k": key})
	for _, o := range on {
		in.DependsOn = append(in.DependsOn, coordinate.UnitRef{Spec: "s", Key: o})
	}
	return in
}

// checkDeps fails unless unit s/key is BLOCKED on exactly the unmet keys
// of spec "s" given (or not blocked when none are given).
func (e *env) checkDeps(key string, unmet ...string) {
	e.t.Helper()
	u := e.mustGet("s", key)
	var got []string
	for _, r := range u.DependsOn {
		if r.Spec != "s" {
			e.t.Errorf("unit %q depends on %v, outside spec s", key, r)
		}
		got = append(got, r.Key)
	}
	sort.Strings(got)
	sort.Strings(unmet)
	e.checkKeys("unmet dependencies of "+key, got, unmet)
	want := coordinate.StatusBlocked
	if len(unmet) == 0 {
		want = coordinate.StatusAvailable
	}
	if u.Status != want && !(want == coordinate.StatusAvailable && u.Status.Completed()) {
		e.t.Errorf("unit %q status = %v, want %v", key, u.Status, want)
	}
}

// drain takes every unit GetWork hands out and returns their keys sorted.
func (e *env) drain() []string {
	e.t.Helper()
	var keys []string
	for i := 0; i < 100; i++ {
		as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 100})
		if len(as) == 0 {
			break
		}
		keys = append(keys, attemptKeys(as)...)
	}
	sort.Strings(keys)
	return keys
}

func testDepDiamond(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("D", "B", "C"), e.dep("B", "A"), e.dep("C", "A"), e.dep("A"))
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: 3})
	e.checkDeps("D", "B", "C")
	e.checkDeps("B", "A")
	e.checkKeys("blocked listing", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusBlocked}}),
		[]string{"B", "C", "D"})
	e.checkKeys("first round", e.drain(), []string{"A"})
	e.finish("s", "A", nil)
	e.checkDeps("B")
	e.checkDeps("C")
	e.checkDeps("D", "B", "C")
	e.checkKeys("second round", e.drain(), []string{"B", "C"})
	e.finish("s", "B", nil)
	e.checkDeps("D", "C")
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.finish("s", "C", nil)
	e.checkDeps("D")
	e.checkKeys("third round", e.drain(), []string{"D"})
	e.finish("s", "D", nil)
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFinished: 4})
}

func testDepChain(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("1"), e.dep("2", "1"), e.dep("3", "2"), e.dep("4", "3"))
	for _, k := range []string{"1", "2", "3", "4"} {
		e.checkKeys("round "+k, e.drain(), []string{k})
		e.finish("s", k, nil)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFinished: 4})
}

func testDepAcrossSpecs(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "other"})
	e.addKeys("other", "up")
	in := e.unit("down", m{})
	in.DependsOn = []coordinate.UnitRef{{Spec: "other", Key: "up"}}
	e.add("s", in)
	u := e.mustGet("s", "down")
	if u.Status != coordinate.StatusBlocked || len(u.DependsOn) != 1 || u.DependsOn[0] != (coordinate.UnitRef{Spec: "other", Key: "up"}) {
		e.t.Errorf("down = %v depends on %v, want blocked on other/up", u.Status, u.DependsOn)
	}
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("only the dependency", attemptKeys(as), []string{"up"})
	e.finish("other", "up", nil)
	e.checkStatus("s", coordinate.StatusAvailable, "down")
}

func testDepAddedLater(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("B", "X"))
	e.checkDeps("B", "X")
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.add("s", e.dep("X"))
	e.checkDeps("B", "X")
	e.checkKeys("the dependency", e.drain(), []string{"X"})
	e.finish("s", "X", nil)
	e.checkDeps("B")
	e.checkKeys("the dependent", e.drain(), []string{"B"})
}

func testDepAlreadyFinished(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "A")
	e.finish("s", "A", nil)
	e.add("s", e.dep("B", "A"))
	e.checkDeps("B")
	e.checkKeys("dependent of a finished unit", e.drain(), []string{"B"})
}

func testDepFailurePropagates(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("L1", "root"), e.dep("L2", "L1"), e.dep("L3", "L2"), e.dep("other"))
	e.update("s", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending})
	e.fail("s", "root")
	for _, k := range []string{"L1", "L2", "L3"} {
		u := e.mustGet("s", k)
		if u.Status != coordinate.StatusFailed {
			e.t.Errorf("dependent %q status = %v, want failed", k, u.Status)
		}
		if tb := dataField(e.t, u.Data, "traceback"); !strings.Contains(tb, "root") {
			e.t.Errorf("dependent %q traceback = %q, want it to name the failed root", k, tb)
		}
	}
	e.checkStatus("s", coordinate.StatusAvailable, "other")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 4, coordinate.StatusAvailable: 1})
}

// A unit whose lease expires with its max_retries used up fails like one
// failed by update_work_unit: its dependents fail with it, whichever call
// (or sweep) applies the expiry.
func testDepExhaustedLease(e *env) {
	e.spec(m{"name": "s", "max_retries": 1})
	e.add("s", e.dep("root"), e.dep("L1", "root"), e.dep("L2", "L1"))
	for range 2 { // one try and one retry
		as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 10 * time.Second})
		if len(as) != 1 || as[0].Key.Bytes != "root" {
			e.t.Fatalf("get_work = %v, want the root", attemptKeys(as))
		}
		e.clock.Add(11 * time.Second)
	}
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.checkStatus("s", coordinate.StatusFailed, "root", "L1", "L2")
	for _, k := range []string{"L1", "L2"} {
		if tb := dataField(e.t, e.mustGet("s", k).Data, "traceback"); !strings.Contains(tb, "root") {
			e.t.Errorf("dependent %q traceback = %q, want it to name the failed root", k, tb)
		}
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 3})
}

// Finish wins over fail: the fork worker's parent fails an overdue unit
// ("job expired") and its child then finishes it. Every dependency of the
// units failed because of it is then FINISHED, so they run: L1 becomes
// AVAILABLE, L2 waits for L1 again, and "other", failed on its own
// account of a second failed dependency, stays FAILED.
func testDepFinishFailedRoot(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("bad"), e.dep("L1", "root"), e.dep("L2", "L1"), e.dep("other", "root", "bad"))
	e.fail("s", "root")
	e.fail("s", "bad")
	e.checkStatus("s", coordinate.StatusFailed, "L1", "L2", "other")
	e.finish("s", "root", nil)
	e.checkStatus("s", coordinate.StatusAvailable, "L1")
	e.checkDeps("L1")
	e.checkDeps("L2", "L1")
	e.checkStatus("s", coordinate.StatusFailed, "other")
	e.checkKeys("work after the finish", e.drain(), []string{"L1"})
}

// A BLOCKED unit leased by hand (update_work_unit to PENDING) whose lease
// lapses goes back to BLOCKED, not AVAILABLE: it still waits for its
// dependency, and get_work must not hand it out before.
func testDepBlockedLeaseExpiry(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("up"), e.dep("down", "up"))
	e.update("s", "down", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: ptr(10 * time.Second)})
	e.checkStatus("s", coordinate.StatusPending, "down")
	e.clock.Add(time.Minute)
	e.checkDeps("down", "up")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: 1})
	e.checkKeys("handed out while up is unfinished", attemptKeys(e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})), []string{"up"})
	e.finish("s", "up", nil)
	e.checkKeys("after up finished", e.drain(), []string{"down"})
}

// Only deleting a unit fails the units waiting for it: deleting units
// that are not it (or none at all), or the spec of a key never added,
// leaves a unit waiting for a key not added yet BLOCKED. Deleting a spec
// fails the units waiting for its units.
func testDepDeleteOthers(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "t"})
	e.add("s", e.dep("waits", "later"), e.unit("other", m{}))
	e.add("s", coordinate.WorkUnitInput{Key: text("onT"), Data: enc(e.t, m{}), DependsOn: []coordinate.UnitRef{{Spec: "t", Key: "never"}}})
	e.add("s", coordinate.WorkUnitInput{Key: text("onTx"), Data: enc(e.t, m{}), DependsOn: []coordinate.UnitRef{{Spec: "t", Key: "x"}}})
	e.addKeys("t", "x")
	if n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"nokey"}}); err != nil || n != 0 {
		e.t.Fatalf("DeleteWorkUnits(nokey) = %d, %v", n, err)
	}
	if n, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"other"}}); err != nil || n != 1 {
		e.t.Fatalf("DeleteWorkUnits(other) = %d, %v", n, err)
	}
	e.checkDeps("waits", "later")
	if err := e.ns.DeleteWorkSpec(e.ctx, "t"); err != nil {
		e.t.Fatal(err)
	}
	e.checkStatus("s", coordinate.StatusBlocked, "waits", "onT")
	e.checkStatus("s", coordinate.StatusFailed, "onTx")
}

// An archived unit is a deleted one (SEMANTICS §12): a unit retried while
// its dependency was FAILED waits for it BLOCKED, and fails once the
// retention policy archives that dependency.
func testDepArchived(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("waits", "root"))
	e.fail("s", "root")
	e.update("s", "waits", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkDeps("waits", "root")
	if err := e.ns.Archive(e.ctx, nil, coordinate.RetentionPolicy{MaxCount: 0}); err != nil {
		e.t.Fatal(err)
	}
	if u := e.get("s", "root"); u != nil {
		e.t.Fatalf("root not archived: %v", u.Status)
	}
	e.checkStatus("s", coordinate.StatusFailed, "waits")
}

// A later item of a key replaces an earlier one, edges included: an item
// that would close a cycle but is replaced in the same call by one without
// dependencies closes none, and the call adds the later one.
func testDepCycleReplaced(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("a", "b"))
	e.add("s", e.dep("b", "a"), e.dep("b"))
	e.checkDeps("b")
	e.checkDeps("a", "b")
}

func testDepRetryRoot(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("L1", "root"), e.dep("L2", "L1"))
	e.fail("s", "root")
	e.checkStatus("s", coordinate.StatusFailed, "L1", "L2")
	e.update("s", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkStatus("s", coordinate.StatusAvailable, "root")
	e.checkDeps("L1", "root")
	e.checkDeps("L2", "L1")
	for _, k := range []string{"root", "L1", "L2"} {
		e.checkKeys("round "+k, e.drain(), []string{k})
		e.finish("s", k, nil)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFinished: 3})
}

// testDepRetryDependent: a dependent retried (update_work_unit to
// AVAILABLE, or RetryWorkUnits) while its dependency is still FAILED waits
// for it again, BLOCKED, and runs only after it.
func testDepRetryDependent(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("L1", "root"), e.dep("L2", "root"))
	e.fail("s", "root")
	e.checkStatus("s", coordinate.StatusFailed, "L1", "L2")
	e.update("s", "L1", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	if n, err := e.ns.RetryWorkUnits(e.ctx, "s", []string{"L2"}); err != nil || n != 1 {
		e.t.Fatalf("RetryWorkUnits(L2) = %d, %v; want 1", n, err)
	}
	e.checkDeps("L1", "root")
	e.checkDeps("L2", "root")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 1, coordinate.StatusBlocked: 2})
	e.checkKeys("nothing to run while root is failed", e.drain(), nil)
	e.update("s", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkKeys("root first", e.drain(), []string{"root"})
	e.finish("s", "root", nil)
	e.checkKeys("then its dependents", e.drain(), []string{"L1", "L2"})
}

// testDepOwnFailureSurvivesRetry: only a unit failed because a
// dependency failed is blocked again when that dependency is retried. A
// dependent that was retried, finished and made AVAILABLE, or leased by
// hand, and then failed on its own stays FAILED.
func testDepOwnFailureSurvivesRetry(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("root"), e.dep("L1", "root"), e.dep("L2", "root"), e.dep("L3", "root"), e.dep("L4", "root"))
	e.fail("s", "root")
	e.checkStatus("s", coordinate.StatusFailed, "L1", "L2", "L3", "L4")
	// L1: retried (BLOCKED again), then failed by an update of its own.
	e.update("s", "L1", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkDeps("L1", "root")
	e.update("s", "L1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
	// L2: finished by hand, made AVAILABLE again, then failed by hand.
	e.update("s", "L2", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.update("s", "L2", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.update("s", "L2", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
	// L4: leased by hand, then failed.
	e.update("s", "L4", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending})
	e.update("s", "L4", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
	// L3 is still failed because root failed.
	e.update("s", "root", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.checkStatus("s", coordinate.StatusFailed, "L1", "L2", "L4")
	e.checkDeps("L3", "root")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusFailed: 3, coordinate.StatusBlocked: 1})
}

func testDepCycleRejected(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("A", "B"), e.dep("C", "A"))
	err := e.ns.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{e.dep("new"), e.dep("B", "C")})
	e.wantErr("edge B->C closing A->B->C->A", err, coordinate.ErrCycle)
	if u := e.get("s", "B"); u != nil {
		e.t.Errorf("unit B added despite the cycle: %v", u.Status)
	}
	if u := e.get("s", "new"); u != nil {
		e.t.Errorf("other unit of the rejected call added: %v", u.Status)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusBlocked: 2})
	// Without the cycle B is fine.
	e.add("s", e.dep("B"))
	e.checkKeys("B", e.drain(), []string{"B"})
}

func testDepCycleInOneCall(e *env) {
	e.spec(m{"name": "s"})
	err := e.ns.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{e.dep("X", "Y"), e.dep("Y", "X")})
	e.wantErr("X<->Y in one call", err, coordinate.ErrCycle)
	e.checkCounts("s", nil)
}

func testDepSelfCycle(e *env) {
	e.spec(m{"name": "s"})
	err := e.ns.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{e.dep("X", "X")})
	e.wantErr("X depends on itself", err, coordinate.ErrCycle)
	e.checkCounts("s", nil)
}

// A BLOCKED unit re-added without dependencies keeps waiting on the ones
// it has, so an edge of the same call back to it closes a cycle through
// them: the call fails, rather than leaving both units BLOCKED on each
// other for ever (the memory backend accepted it; found by the
// differential test, postgres/difftest_test.go).
func testDepCycleThroughKeptEdges(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("a", "b"))
	err := e.ns.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{e.dep("a"), e.dep("b", "a")})
	e.wantErr("b->a while a, re-added without dependencies, still waits on b", err, coordinate.ErrCycle)
	if u := e.get("s", "b"); u != nil {
		e.t.Errorf("unit b added despite the cycle: %v", u.Status)
	}
	e.checkDeps("a", "b")
}

// A unit re-added without dependencies that becomes AVAILABLE (here one
// FAILED because its dependency failed) drops its edges, so an edge of
// the same call back to it closes no cycle (PostgreSQL refused it; found
// by the differential test).
func testDepReAddDropsEdgesOfFailedUnit(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("b"), e.dep("a", "b"))
	e.fail("s", "b")
	e.checkStatus("s", coordinate.StatusFailed, "a")
	e.add("s", e.dep("a"), e.dep("b", "a"))
	e.checkDeps("a")
	e.checkDeps("b", "a")
}

// The items of one add_work_units call take effect in order: re-running a
// finished pipeline by re-adding its units, dependencies first, blocks
// each dependent on its re-added dependency again; a dependent that comes
// first sees its dependency still finished.
func testDepReAddsInOrder(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("A"), e.dep("B", "A"))
	e.finish("s", "A", nil)
	e.finish("s", "B", nil)
	e.add("s", e.dep("A"), e.dep("B", "A"))
	e.checkDeps("A")
	e.checkDeps("B", "A")
	e.checkKeys("the re-run pipeline's first round", e.drain(), []string{"A"})
	e.finish("s", "A", nil)
	e.checkKeys("its second round", e.drain(), []string{"B"})
	e.finish("s", "B", nil)

	e.add("s", e.dep("B", "A"), e.dep("A"))
	e.checkDeps("B")
	e.checkDeps("A")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 2})
}

// Re-adding a failed unit and, later in the same call, its dependent
// failed because of it: the dependent waits for the re-added unit.
func testDepReAddFailedAndDependent(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("f"), e.dep("d", "f"))
	e.fail("s", "f")
	e.checkStatus("s", coordinate.StatusFailed, "d")
	e.add("s", e.dep("f"), e.dep("d", "f"))
	e.checkDeps("f")
	e.checkDeps("d", "f")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: 1})
}

// An item that fails at once (its dependency failed) fails the units
// waiting on it before a later item of the call re-adds one of them: x,
// failed by n, is then re-added and runs.
func testDepFailureSpreadsBeforeLaterItem(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("f"), e.dep("x", "n"))
	e.fail("s", "f")
	e.checkDeps("x", "n")
	e.add("s", e.dep("n", "f"), e.dep("x"))
	e.checkStatus("s", coordinate.StatusFailed, "f", "n")
	e.checkDeps("x")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 2, coordinate.StatusAvailable: 1})
}

// A failed unit re-added blocks again, at once, the dependent failed
// because of it, so that dependent re-added later in the same call
// without dependencies keeps waiting (a BLOCKED unit re-added without
// dependencies stays blocked).
func testDepUnfailSpreadsBeforeLaterItem(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.dep("b"), e.dep("a", "b"))
	e.fail("s", "b")
	e.checkStatus("s", coordinate.StatusFailed, "a")
	e.add("s", e.dep("b"), e.dep("a"))
	e.checkDeps("b")
	e.checkDeps("a", "b")
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1, coordinate.StatusBlocked: 1})
}
