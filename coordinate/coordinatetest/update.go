package coordinatetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// updateTests cover the update_work_unit transition table (SEMANTICS §5.3).
var updateTests = []test{
	{"TransitionTable", testUpdateTransitionTable},
	{"LeaseOnly", testUpdateLeaseOnly},
	{"NegativeLeaseReleases", testUpdateNegativeLeaseReleases},
	{"PendingToPendingWorker", testUpdatePendingWorker},
	{"AvailableToPendingDefaultLease", testUpdateAvailableToPendingDefault},
	{"NothingToDo", testUpdateNothingToDo},
	{"Unknown", testUpdateUnknown},
	{"FinishWins", testUpdateFinishWins},
	{"DataKeptOnRetry", testUpdateDataKeptOnRetry},
	{"RetryWorkUnits", testUpdateRetryWorkUnits},
	{"FailedToFinishedChains", testUpdateFailedToFinishedChains},
	{"NoDoubleChaining", testUpdateNoDoubleChaining},
}

// putInStatus makes unit key of spec "s" (already added) reach status st
// the way a client would: PENDING through GetWork by worker "holder".
func putInStatus(e *env, key string, st coordinate.Status) {
	e.t.Helper()
	switch st {
	case coordinate.StatusAvailable:
	case coordinate.StatusPending:
		as := e.work(coordinate.WorkRequest{Worker: text("holder"), MaxJobs: 1, WorkSpecs: []string{"s"}, LeaseTime: time.Hour})
		if len(as) != 1 || as[0].Key.Bytes != key {
			e.t.Fatalf("GetWork to make %q pending returned %q", key, attemptKeys(as))
		}
	case coordinate.StatusFinished, coordinate.StatusFailed:
		putInStatus(e, key, coordinate.StatusPending)
		e.update("s", key, coordinate.WorkUnitUpdate{Status: st})
	}
}

func testUpdateTransitionTable(e *env) {
	statuses := []coordinate.Status{coordinate.StatusAvailable, coordinate.StatusPending, coordinate.StatusFinished, coordinate.StatusFailed}
	// result[from][to] is the status the table of SEMANTICS §5.3 leads to.
	result := map[coordinate.Status]map[coordinate.Status]coordinate.Status{
		coordinate.StatusAvailable: {
			coordinate.StatusAvailable: coordinate.StatusAvailable, coordinate.StatusPending: coordinate.StatusPending,
			coordinate.StatusFinished: coordinate.StatusFinished, coordinate.StatusFailed: coordinate.StatusFailed,
		},
		coordinate.StatusPending: {
			coordinate.StatusAvailable: coordinate.StatusAvailable, coordinate.StatusPending: coordinate.StatusPending,
			coordinate.StatusFinished: coordinate.StatusFinished, coordinate.StatusFailed: coordinate.StatusFailed,
		},
		coordinate.StatusFinished: {
			coordinate.StatusAvailable: coordinate.StatusAvailable, coordinate.StatusPending: coordinate.StatusPending,
			coordinate.StatusFinished: coordinate.StatusFinished, coordinate.StatusFailed: coordinate.StatusFinished,
		},
		coordinate.StatusFailed: {
			coordinate.StatusAvailable: coordinate.StatusAvailable, coordinate.StatusPending: coordinate.StatusPending,
			coordinate.StatusFinished: coordinate.StatusFinished, coordinate.StatusFailed: coordinate.StatusFailed,
		},
	}
	for _, from := range statuses {
		for _, to := range statuses {
			for _, withLease := range []bool{false, true} {
				name := fmt.Sprintf("%v->%v lease=%v", from, to, withLease)
				e.t.Run(name, func(t *testing.T) { testTransition(sub(e, t), from, to, result[from][to], withLease) })
			}
		}
		// No status, a positive lease: the status stays (a PENDING unit is
		// renewed).
		e.t.Run(fmt.Sprintf("%v lease only", from), func(t *testing.T) { testTransition(sub(e, t), from, 0, from, true) })
	}
}

// testTransition checks one cell of the table on a fresh spec.
func testTransition(e *env, from, to, want coordinate.Status, withLease bool) {
	e.spec(m{"name": "s", "then": "next"})
	e.spec(m{"name": "next"})
	e.add("s", e.unit("k", m{"v": "old"}))
	putInStatus(e, "k", from)
	e.clock.Add(10 * time.Second)
	now := e.now()
	upd := coordinate.WorkUnitUpdate{Status: to, Data: enc(e.t, m{"v": "new", "output": []any{"chained"}})}
	if withLease {
		upd.LeaseTime = ptr(30 * time.Second)
	}
	e.update("s", "k", upd)
	u := e.mustGet("s", "k")
	if u.Status != want {
		e.t.Errorf("status = %v, want %v", u.Status, want)
	}
	// The data is always replaced when the call is accepted.
	checkData(e.t, "data", u.Data, m{"v": "new", "output": []any{"chained"}})
	switch want {
	case coordinate.StatusAvailable:
		if u.Worker != nil {
			e.t.Errorf("available unit worker = %q, want none", u.Worker.Bytes)
		}
	case coordinate.StatusPending:
		lease := 300 * time.Second // AVAILABLE/completed -> PENDING without a lease: default
		if withLease {
			lease = 30 * time.Second
		} else if from == coordinate.StatusPending {
			lease = time.Hour - 10*time.Second // from GetWork 10 s ago; not renewed
		}
		e.checkTime("lease expiry", u.Expiration, now.Add(lease))
	case coordinate.StatusFinished, coordinate.StatusFailed:
		if from != want {
			e.checkTime("completion time", u.Expiration, now)
		}
		if from == coordinate.StatusPending && (u.Worker == nil || u.Worker.Bytes != "holder") {
			e.t.Errorf("completed unit worker = %v, want last holder", u.Worker)
		}
	}
	// Chaining happens exactly when the unit becomes FINISHED from another status.
	chained := e.get("next", "chained") != nil
	if wantChain := want == coordinate.StatusFinished && from != coordinate.StatusFinished; chained != wantChain {
		e.t.Errorf("chained unit created = %v, want %v", chained, wantChain)
	}
}

func testUpdateLeaseOnly(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k", "f", "a")
	a := e.workOne("w")
	if a.Key.Bytes != "a" {
		e.t.Fatalf("GetWork returned %q, want a", a.Key.Bytes)
	}
	e.clock.Add(100 * time.Second)
	e.update("s", "a", coordinate.WorkUnitUpdate{LeaseTime: ptr(time.Hour)})
	u := e.mustGet("s", "a")
	if u.Status != coordinate.StatusPending || u.Worker == nil || u.Worker.Bytes != "w" {
		e.t.Errorf("renewed unit = %v worker %v, want pending by w", u.Status, u.Worker)
	}
	e.checkTime("renewed expiry", u.Expiration, e.now().Add(time.Hour))
	// Past the original 300 s lease the unit is still pending.
	e.clock.Add(30 * time.Minute)
	e.checkStatus("s", coordinate.StatusPending, "a")
	// A lease on an AVAILABLE unit changes only its reported expiration.
	e.update("s", "k", coordinate.WorkUnitUpdate{LeaseTime: ptr(time.Minute)})
	e.checkStatus("s", coordinate.StatusAvailable, "k")
	e.checkTime("available unit expiration", e.mustGet("s", "k").Expiration, e.now().Add(time.Minute))
	// A lease on a FINISHED unit leaves it finished.
	e.finish("s", "f", nil)
	e.update("s", "f", coordinate.WorkUnitUpdate{LeaseTime: ptr(time.Minute)})
	e.checkStatus("s", coordinate.StatusFinished, "f")
}

func testUpdateNegativeLeaseReleases(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	e.workOne("w")
	e.update("s", "k", coordinate.WorkUnitUpdate{LeaseTime: ptr(-time.Second), Data: enc(e.t, m{"v": 2})})
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusAvailable || u.Worker != nil {
		e.t.Errorf("after negative lease: %v worker %v, want available without worker", u.Status, u.Worker)
	}
	checkData(e.t, "data after release", u.Data, m{"v": 2})
	a := e.workOne("w2")
	if a.Key.Bytes != "k" {
		e.t.Errorf("released unit not handed out again: got %q", a.Key.Bytes)
	}
	checkData(e.t, "data handed out after release", a.Data, m{"v": 2})
	// Zero releases too.
	e.update("s", "k", coordinate.WorkUnitUpdate{LeaseTime: ptr(time.Duration(0))})
	if a := e.workOne("w3"); a.Key.Bytes != "k" {
		e.t.Errorf("unit released with lease 0 not handed out again: got %q", a.Key.Bytes)
	}
}

func testUpdatePendingWorker(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	e.workOne("w1")
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, Worker: ptr(text("w2"))})
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusPending || u.Worker == nil || u.Worker.Bytes != "w2" {
		e.t.Errorf("after PENDING->PENDING with worker: %v worker %v, want pending by w2", u.Status, u.Worker)
	}
}

func testUpdateAvailableToPendingDefault(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending})
	e.checkTime("default lease", e.mustGet("s", "k").Expiration, Epoch.Add(300*time.Second))
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.clock.Add(301 * time.Second)
	e.checkStatus("s", coordinate.StatusAvailable, "k")
}

func testUpdateNothingToDo(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	err := e.ns.UpdateWorkUnit(e.ctx, "s", "k", coordinate.WorkUnitUpdate{Data: enc(e.t, m{"v": 2})})
	e.wantErr("data-only update", err, coordinate.ErrNothingToDo)
	checkData(e.t, "data after rejected update", e.mustGet("s", "k").Data, m{"v": 1})
	// The request's own checks come before the spec is looked up, as in
	// the Python daemon.
	err = e.ns.UpdateWorkUnit(e.ctx, "nope", "k", coordinate.WorkUnitUpdate{Data: enc(e.t, m{"v": 2})})
	e.wantErr("data-only update in an unknown spec", err, coordinate.ErrNothingToDo)
	err = e.ns.UpdateWorkUnit(e.ctx, "nope", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusBlocked})
	e.wantErr("status 2 in an unknown spec", err, coordinate.ErrInvalidWorkUnit)
	err = e.ns.UpdateAttempt(e.ctx, coordinate.AttemptRef{Spec: "nope", Key: "k", ID: 1}, coordinate.WorkUnitUpdate{Status: 9})
	e.wantErr("status 9 of a lost lease", err, coordinate.ErrInvalidWorkUnit)
}

func testUpdateUnknown(e *env) {
	e.spec(m{"name": "s"})
	err := e.ns.UpdateWorkUnit(e.ctx, "nope", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("update in unknown spec", err, coordinate.ErrNoSuchWorkSpec)
	err = e.ns.UpdateWorkUnit(e.ctx, "s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("update of unknown unit", err, coordinate.ErrNoSuchWorkUnit)
	if e.get("s", "k") != nil {
		e.t.Errorf("updating an unknown unit created it")
	}
}

func testUpdateFinishWins(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	e.workOne("w")
	e.finish("s", "k", m{"v": "done"})
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: enc(e.t, m{"v": "failed"})})
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusFinished {
		e.t.Errorf("FINISHED then failed: status %v, want finished", u.Status)
	}
	checkData(e.t, "data replaced by the ignored fail", u.Data, m{"v": "failed"})
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFinished: 1})
}

func testUpdateDataKeptOnRetry(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	e.workOne("w")
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: enc(e.t, m{"traceback": "boom"})})
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable, LeaseTime: ptr(time.Duration(0))})
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusAvailable || u.Worker != nil {
		e.t.Errorf("retried unit: %v worker %v, want available without worker", u.Status, u.Worker)
	}
	checkData(e.t, "retried unit", u.Data, m{"traceback": "boom"})
	a := e.workOne("w2")
	checkData(e.t, "retried unit handed out", a.Data, m{"traceback": "boom"})
}

// testUpdateRetryWorkUnits: RetryWorkUnits retries the FAILED units named
// and leaves every other unit as it is, a leased one keeping its lease.
func testUpdateRetryWorkUnits(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("avail", m{}), e.unit("f1", m{}), e.unit("f2", m{}), e.unit("fin", m{}), e.unit("lease", m{}))
	e.update("s", "f1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed, Data: enc(e.t, m{"traceback": "boom"})})
	e.fail("s", "f2")
	e.finish("s", "fin", nil)
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, LeaseTime: time.Hour})
	if len(as) != 1 || as[0].Key.Bytes != "avail" {
		e.t.Fatalf("GetWork returned %q, want avail", attemptKeys(as))
	}
	e.update("s", "lease", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending})

	n, err := e.ns.RetryWorkUnits(e.ctx, "s", []string{"f1", "avail", "fin", "lease", "nope", "f2", "f1"})
	if err != nil || n != 2 {
		e.t.Fatalf("RetryWorkUnits = %d, %v; want 2 (f1, f2)", n, err)
	}
	e.checkStatus("s", coordinate.StatusAvailable, "f1", "f2")
	e.checkStatus("s", coordinate.StatusFinished, "fin")
	e.checkStatus("s", coordinate.StatusPending, "avail", "lease")
	checkData(e.t, "retried f1", e.mustGet("s", "f1").Data, m{"traceback": "boom"})
	if err := e.ns.UpdateAttempt(e.ctx, coordinate.AttemptRef{Spec: "s", Key: "avail", ID: as[0].ID},
		coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		e.t.Errorf("the lease on a unit named in RetryWorkUnits but not failed was lost: %v", err)
	}

	if n, err := e.ns.RetryWorkUnits(e.ctx, "s", []string{"f1", "nope"}); err != nil || n != 0 {
		e.t.Errorf("RetryWorkUnits of no failed unit = %d, %v; want 0", n, err)
	}
	_, err = e.ns.RetryWorkUnits(e.ctx, "missing", []string{"f1"})
	e.wantErr("RetryWorkUnits of a missing spec", err, coordinate.ErrNoSuchWorkSpec)
	_, err = e.ns.RetryWorkUnits(e.ctx, "missing", nil)
	e.wantErr("RetryWorkUnits of no key in a missing spec", err, coordinate.ErrNoSuchWorkSpec)
}

func testUpdateFailedToFinishedChains(e *env) {
	e.spec(m{"name": "s", "then": "next"})
	e.spec(m{"name": "next"})
	e.add("s", e.unit("k", m{"output": []any{"old"}}))
	e.fail("s", "k")
	if c := e.counts("next"); len(c) != 0 {
		e.t.Errorf("failing chained units: %v", c)
	}
	e.finish("s", "k", m{"output": []any{"new"}})
	e.checkKeys("chained from FAILED->FINISHED with new data", e.list("next", coordinate.WorkUnitQuery{}), []string{"new"})
}

func testUpdateNoDoubleChaining(e *env) {
	e.spec(m{"name": "s", "then": "next"})
	e.spec(m{"name": "next"})
	e.add("s", e.unit("k", m{"output": []any{"c1"}}))
	e.finish("s", "k", nil)
	e.checkKeys("chained", e.list("next", coordinate.WorkUnitQuery{}), []string{"c1"})
	if _, err := e.ns.DeleteWorkUnits(e.ctx, "next", coordinate.DeleteQuery{All: true}); err != nil {
		e.t.Fatal(err)
	}
	e.finish("s", "k", m{"output": []any{"c2"}})
	e.checkKeys("after finishing a FINISHED unit again", e.list("next", coordinate.WorkUnitQuery{}), nil)
}
