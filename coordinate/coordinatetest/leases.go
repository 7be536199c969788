package coordinatetest

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// leaseTests cover attempts: lease ids, expiry, renewal and max_retries
// (SEMANTICS §6).
var leaseTests = []test{
	{"LapsedBeforeReAdd", testLeaseLapsedBeforeReAdd},
	{"LapsedBeforeSpecChange", testLeaseLapsedBeforeSpecChange},
	{"UpdateAttempt", testLeaseUpdateAttempt},
	{"StaleAfterReLease", testLeaseStaleAfterReLease},
	{"ExpiredNotReLeased", testLeaseExpiredNotReLeased},
	{"CompletedByOther", testLeaseCompletedByOther},
	{"Deleted", testLeaseDeleted},
	{"Renew", testLeaseRenew},
	{"UpdateAttemptChains", testLeaseUpdateAttemptChains},
	{"MaxRetries", testLeaseMaxRetries},
}

func ref(a coordinate.Attempt) coordinate.AttemptRef {
	return coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}
}

func testLeaseUpdateAttempt(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	a := e.workOne("w")
	err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished, Data: enc(e.t, m{"r": 1})})
	if err != nil {
		e.t.Fatalf("UpdateAttempt finish: %v", err)
	}
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusFinished {
		e.t.Errorf("status = %v, want finished", u.Status)
	}
	checkData(e.t, "data", u.Data, m{"r": 1})
	// The lease is over: a second update through it fails.
	err = e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed})
	e.wantErr("UpdateAttempt after finishing", err, coordinate.ErrLostLease)
	e.checkStatus("s", coordinate.StatusFinished, "k")
}

func testLeaseStaleAfterReLease(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	old := e.work(coordinate.WorkRequest{Worker: text("w1"), LeaseTime: time.Minute})[0]
	e.clock.Add(61 * time.Second)
	cur := e.work(coordinate.WorkRequest{Worker: text("w2"), LeaseTime: time.Minute})
	if len(cur) != 1 || cur[0].Key.Bytes != "k" {
		e.t.Fatalf("re-lease = %q", attemptKeys(cur))
	}
	if cur[0].ID == old.ID {
		e.t.Fatalf("re-lease reused the lease id %d", old.ID)
	}
	for _, upd := range []coordinate.WorkUnitUpdate{
		{Status: coordinate.StatusFinished, Data: enc(e.t, m{"v": "stale"})},
		{Status: coordinate.StatusFailed},
		{Status: coordinate.StatusAvailable},
		{LeaseTime: ptr(time.Hour)},
	} {
		err := e.ns.UpdateAttempt(e.ctx, ref(old), upd)
		e.wantErr("stale UpdateAttempt", err, coordinate.ErrLostLease)
	}
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusPending || u.Worker == nil || u.Worker.Bytes != "w2" {
		e.t.Errorf("after stale updates: %v worker %v, want pending by w2", u.Status, u.Worker)
	}
	e.checkTime("current lease", u.Expiration, cur[0].Expires)
	checkData(e.t, "data after stale updates", u.Data, m{"v": 1})
	if err := e.ns.UpdateAttempt(e.ctx, ref(cur[0]), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		e.t.Errorf("current lease UpdateAttempt: %v", err)
	}
}

func testLeaseExpiredNotReLeased(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	a := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: time.Minute})[0]
	e.clock.Add(61 * time.Second)
	err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateAttempt on an expired lease", err, coordinate.ErrLostLease)
	e.checkStatus("s", coordinate.StatusAvailable, "k")
}

func testLeaseCompletedByOther(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	a := e.workOne("w")
	e.fail("s", "k")
	err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateAttempt after another client failed the unit", err, coordinate.ErrLostLease)
	e.checkStatus("s", coordinate.StatusFailed, "k")
	// Retried by another client, the old lease stays lost.
	e.update("s", "k", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	err = e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateAttempt after another client retried the unit", err, coordinate.ErrLostLease)
	e.checkStatus("s", coordinate.StatusAvailable, "k")
}

func testLeaseDeleted(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	a := e.workOne("w")
	if _, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"k"}}); err != nil {
		e.t.Fatal(err)
	}
	err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateAttempt on a deleted unit", err, coordinate.ErrLostLease)
	if e.get("s", "k") != nil {
		e.t.Errorf("UpdateAttempt re-created a deleted unit")
	}
}

func testLeaseRenew(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	a := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: time.Minute})[0]
	e.clock.Add(50 * time.Second)
	if err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{LeaseTime: ptr(2 * time.Minute)}); err != nil {
		e.t.Fatalf("renew: %v", err)
	}
	e.checkTime("renewed expiry", e.mustGet("s", "k").Expiration, Epoch.Add(170*time.Second))
	e.clock.Add(100 * time.Second) // past the first lease, within the renewal
	e.checkStatus("s", coordinate.StatusPending, "k")
	e.noWork(coordinate.WorkRequest{Worker: text("w2")})
	// Renewing keeps the same lease: the attempt still finishes the unit.
	if err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		e.t.Errorf("finish after renewal: %v", err)
	}
	e.checkStatus("s", coordinate.StatusFinished, "k")
}

func testLeaseUpdateAttemptChains(e *env) {
	e.spec(m{"name": "s", "then": "t"})
	e.spec(m{"name": "t"})
	e.addKeys("s", "k")
	a := e.workOne("w")
	err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{
		Status: coordinate.StatusFinished, Data: enc(e.t, m{"output": []any{"next"}}),
	})
	if err != nil {
		e.t.Fatalf("UpdateAttempt: %v", err)
	}
	e.checkKeys("chained through UpdateAttempt", e.list("t", coordinate.WorkUnitQuery{}), []string{"next"})
}

func testLeaseMaxRetries(e *env) {
	e.spec(m{"name": "s", "max_retries": 2})
	e.add("s", e.unit("k", m{"v": 1}))
	leases := 0
	for i := 0; i < 6; i++ {
		as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 10 * time.Second})
		if len(as) == 0 {
			break
		}
		leases++
		e.clock.Add(11 * time.Second)
		if leases <= 2 {
			e.checkStatus("s", coordinate.StatusAvailable, "k")
		}
	}
	if leases != 3 {
		e.t.Errorf("unit with max_retries 2 was leased %d times, want 3 (one try and two retries)", leases)
	}
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusFailed {
		e.t.Fatalf("status after exhausting retries = %v, want failed", u.Status)
	}
	checkData(e.t, "failed data", u.Data, m{"v": 1, "traceback": "too many retries"})
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFailed: 1})
	// A unit that finishes within its retries is unaffected.
	e.addKeys("s", "ok")
	e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 10 * time.Second})
	e.clock.Add(11 * time.Second)
	e.workOne("w")
	e.finish("s", "ok", nil)
	e.checkStatus("s", coordinate.StatusFinished, "ok")
}

// Every call first applies the leases that lapsed (SEMANTICS §5.2): a
// unit re-added after its lease lapsed is re-added as the AVAILABLE unit
// the lapse made it, so the new item's dependencies apply (a PENDING unit
// would have kept running and ignored them).
func testLeaseLapsedBeforeReAdd(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 10 * time.Second})
	e.clock.Add(20 * time.Second)
	e.add("s", coordinate.WorkUnitInput{Key: text("k"), Data: enc(e.t, m{}), DependsOn: []coordinate.UnitRef{{Spec: "s", Key: "later"}}})
	if u := e.mustGet("s", "k"); u.Status != coordinate.StatusBlocked || len(u.DependsOn) != 1 {
		e.t.Errorf("re-added after its lease lapsed: %v depending on %v, want blocked on s/later", u.Status, u.DependsOn)
	}
}

// A lease that lapsed before set_work_spec changed max_retries lapsed
// under the settings it was taken with: two tries under no limit leave
// the unit AVAILABLE, not failed by the limit set afterwards.
func testLeaseLapsedBeforeSpecChange(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	for range 2 {
		if as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 10 * time.Second}); len(as) != 1 {
			e.t.Fatalf("get_work: %v", attemptKeys(as))
		}
		e.clock.Add(20 * time.Second)
	}
	e.spec(m{"name": "s", "max_retries": 1})
	e.checkStatus("s", coordinate.StatusAvailable, "k")
}
