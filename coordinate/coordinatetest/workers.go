package coordinatetest

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// workerTests cover the worker registry (SEMANTICS §11).
var workerTests = []test{
	{"Heartbeat", testWorkerHeartbeat},
	{"ListSorted", testWorkerListSorted},
	{"Unregister", testWorkerUnregister},
	{"Expiry", testWorkerExpiry},
	{"Reparent", testWorkerReparent},
	{"Children", testWorkerChildren},
	{"ChildLeaseLapsed", testWorkerChildLeaseLapsed},
	{"ChildGivenBackWithLeaseTime", testWorkerChildGivenBackWithLeaseTime},
	{"ChildrenUnknownParent", testWorkerChildrenUnknownParent},
	{"ChildUnitsDropOnDelete", testWorkerChildUnitsDropOnDelete},
	{"NoImplicitRecords", testWorkerNoImplicitRecords},
}

func testWorkerHeartbeat(e *env) {
	mode := coordinate.Data{0x63, 'R', 'U', 'N'}
	data := coordinate.Data{0xbf, 0x63, 'p', 'i', 'd', 0x19, 0x00, 0x07, 0xff} // non-canonical on purpose
	hb := coordinate.Heartbeat{Worker: bin("w\x00"), Mode: mode, Data: data, Parent: ptr(text("p")), Expire: time.Minute}
	if err := e.ns.WorkerHeartbeat(e.ctx, hb); err != nil {
		e.t.Fatalf("WorkerHeartbeat: %v", err)
	}
	w, err := e.ns.Worker(e.ctx, "w\x00")
	if err != nil {
		e.t.Fatalf("Worker: %v", err)
	}
	if w.ID != bin("w\x00") || w.Parent == nil || *w.Parent != text("p") {
		e.t.Errorf("worker = %+v", w)
	}
	checkBytes(e.t, "worker mode", w.Mode, mode)
	checkBytes(e.t, "worker data", w.Data, data)
	e.checkTime("last heard", w.LastHeard, Epoch)
	e.checkTime("expires", w.Expires, Epoch.Add(time.Minute))
	// A later heartbeat replaces the record.
	e.clock.Add(30 * time.Second)
	hb2 := coordinate.Heartbeat{Worker: bin("w\x00"), Mode: coordinate.Null, Data: enc(e.t, m{"pid": 8}), Expire: 2 * time.Minute}
	if err := e.ns.WorkerHeartbeat(e.ctx, hb2); err != nil {
		e.t.Fatalf("second WorkerHeartbeat: %v", err)
	}
	w, err = e.ns.Worker(e.ctx, "w\x00")
	if err != nil {
		e.t.Fatalf("Worker: %v", err)
	}
	checkBytes(e.t, "mode after second heartbeat", w.Mode, coordinate.Null)
	checkData(e.t, "data after second heartbeat", w.Data, m{"pid": 8})
	if w.Parent != nil {
		e.t.Errorf("parent after a heartbeat without one = %v, want nil", w.Parent)
	}
	e.checkTime("last heard", w.LastHeard, Epoch.Add(30*time.Second))
	e.checkTime("expires", w.Expires, Epoch.Add(150*time.Second))
}

func testWorkerListSorted(e *env) {
	if ws, err := e.ns.Workers(e.ctx); err != nil || len(ws) != 0 {
		e.t.Errorf("Workers on an empty namespace = %d, %v", len(ws), err)
	}
	for _, id := range []string{"c", "a", "b", "\xff", "ab"} {
		e.heartbeat(id, nil, time.Hour)
	}
	ws, err := e.ns.Workers(e.ctx)
	if err != nil {
		e.t.Fatalf("Workers: %v", err)
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID.Bytes
		if i == 0 {
			checkData(e.t, "listed worker data", w.Data, m{"id": w.ID.Bytes})
		}
	}
	e.checkKeys("Workers", ids, []string{"a", "ab", "b", "c", "\xff"})
}

func testWorkerUnregister(e *env) {
	e.heartbeat("a", nil, time.Hour)
	e.heartbeat("b", nil, time.Hour)
	if err := e.ns.UnregisterWorker(e.ctx, "a"); err != nil {
		e.t.Fatalf("UnregisterWorker: %v", err)
	}
	_, err := e.ns.Worker(e.ctx, "a")
	e.wantErr("Worker after unregister", err, coordinate.ErrNoSuchWorker)
	e.wantErr("second UnregisterWorker", e.ns.UnregisterWorker(e.ctx, "a"), coordinate.ErrNoSuchWorker)
	e.wantErr("UnregisterWorker unknown", e.ns.UnregisterWorker(e.ctx, "zz"), coordinate.ErrNoSuchWorker)
	_, err = e.ns.Worker(e.ctx, "zz")
	e.wantErr("Worker unknown", err, coordinate.ErrNoSuchWorker)
	ws, err := e.ns.Workers(e.ctx)
	if err != nil || len(ws) != 1 || ws[0].ID.Bytes != "b" {
		e.t.Errorf("Workers after unregister = %d, %v; want only b", len(ws), err)
	}
}

func testWorkerExpiry(e *env) {
	e.heartbeat("short", nil, time.Minute)
	e.heartbeat("long", nil, time.Hour)
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	e.work(coordinate.WorkRequest{Worker: text("short"), LeaseTime: time.Hour})
	e.clock.Add(61 * time.Second)
	_, err := e.ns.Worker(e.ctx, "short")
	e.wantErr("Worker after expiry", err, coordinate.ErrNoSuchWorker)
	ws, err := e.ns.Workers(e.ctx)
	if err != nil || len(ws) != 1 || ws[0].ID.Bytes != "long" {
		e.t.Errorf("Workers after expiry = %d, %v; want only long", len(ws), err)
	}
	// The expired worker's lease is untouched.
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusPending || u.Worker == nil || u.Worker.Bytes != "short" {
		e.t.Errorf("unit of an expired worker: %v worker %v, want still pending by short", u.Status, u.Worker)
	}
	// A new heartbeat brings it back.
	e.heartbeat("short", nil, time.Minute)
	if _, err := e.ns.Worker(e.ctx, "short"); err != nil {
		e.t.Errorf("Worker after a new heartbeat: %v", err)
	}
}

func testWorkerReparent(e *env) {
	e.heartbeat("p1", nil, time.Hour)
	e.heartbeat("p2", nil, time.Hour)
	e.heartbeat("c", ptr(text("p1")), time.Hour)
	e.heartbeat("c", ptr(text("p2")), time.Hour)
	if ch := e.children("p1"); len(ch) != 0 {
		e.t.Errorf("old parent still lists %d children", len(ch))
	}
	if ch := e.children("p2"); len(ch) != 1 || ch[0].Worker.Bytes != "c" {
		e.t.Errorf("new parent children = %+v, want c", ch)
	}
}

// children calls ChildWorkUnits and fails the test on error.
func (e *env) children(parent string) []coordinate.ChildWorker {
	e.t.Helper()
	ch, err := e.ns.ChildWorkUnits(e.ctx, parent)
	if err != nil {
		e.t.Fatalf("ChildWorkUnits(%q): %v", parent, err)
	}
	return ch
}

// childUnits returns the outstanding units of one child, by key.
func childUnits(ch []coordinate.ChildWorker, child string) map[string]coordinate.ChildWorkUnit {
	for _, c := range ch {
		if c.Worker.Bytes == child {
			out := map[string]coordinate.ChildWorkUnit{}
			for _, u := range c.Units {
				out[u.Key.Bytes] = u
			}
			return out
		}
	}
	return nil
}

func testWorkerChildren(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("u1", m{"n": 1}), e.unit("u2", m{"n": 2}), e.unit("u3", m{"n": 3}))
	e.heartbeat("p", nil, time.Hour)
	e.heartbeat("c2", ptr(text("p")), time.Hour)
	e.heartbeat("c1", ptr(text("p")), time.Hour)
	e.heartbeat("other", nil, time.Hour)
	as := e.work(coordinate.WorkRequest{Worker: text("c1"), MaxJobs: 2, LeaseTime: time.Minute})
	e.checkKeys("c1's work", attemptKeys(as), []string{"u1", "u2"})

	ch := e.children("p")
	if len(ch) != 2 || ch[0].Worker.Bytes != "c1" || ch[1].Worker.Bytes != "c2" {
		e.t.Fatalf("children = %+v, want c1 then c2", ch)
	}
	if len(ch[1].Units) != 0 {
		e.t.Errorf("c2 has %d units, want none", len(ch[1].Units))
	}
	c1 := childUnits(ch, "c1")
	e.checkKeys("c1 units", sortedKeys(c1), []string{"u1", "u2"})
	if u, ok := c1["u1"]; ok {
		if u.Spec.Bytes != "s" || u.Worker == nil || u.Worker.Bytes != "c1" {
			e.t.Errorf("u1 = %+v, want spec s held by c1", u)
		}
		e.checkTime("u1 expires", u.Expires, Epoch.Add(time.Minute))
		checkData(e.t, "u1 data", u.Data, m{"n": 1})
	}

	// u1's lease expires: it stays listed, without a holder, with the
	// time its lease lapsed (Python's past lease time). u2, given back,
	// has no time: its lease did not lapse.
	e.update("s", "u2", coordinate.WorkUnitUpdate{LeaseTime: ptr(time.Hour)})
	e.clock.Add(61 * time.Second)
	e.update("s", "u2", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	c1 = childUnits(e.children("p"), "c1")
	e.checkKeys("c1 units after u1 expired", sortedKeys(c1), []string{"u1", "u2"})
	if u, ok := c1["u1"]; ok {
		if u.Worker != nil {
			e.t.Errorf("expired u1 worker = %q, want nil", u.Worker.Bytes)
		}
		e.checkTime("expired u1 expires", u.Expires, Epoch.Add(time.Minute))
	}
	if u, ok := c1["u2"]; ok && (u.Worker != nil || !u.Expires.IsZero()) {
		e.t.Errorf("u2 given back: worker %v expires %v, want neither", u.Worker, u.Expires)
	}
	// Re-leased to c2 it is listed under both, with its current holder.
	as = e.work(coordinate.WorkRequest{Worker: text("c2"), MaxJobs: 1, LeaseTime: time.Minute})
	e.checkKeys("c2's work", attemptKeys(as), []string{"u1"})
	ch = e.children("p")
	c1, c2 := childUnits(ch, "c1"), childUnits(ch, "c2")
	e.checkKeys("c1 units after re-lease", sortedKeys(c1), []string{"u1", "u2"})
	e.checkKeys("c2 units after re-lease", sortedKeys(c2), []string{"u1"})
	if u, ok := c1["u1"]; ok {
		if u.Worker == nil || u.Worker.Bytes != "c2" {
			e.t.Errorf("re-leased u1 listed under c1 with worker %v, want c2", u.Worker)
		}
		e.checkTime("re-leased u1 expires", u.Expires, e.clock.Now().Add(time.Minute))
	}
	// Finishing or failing removes units from every list.
	e.finish("s", "u1", nil)
	e.fail("s", "u2")
	ch = e.children("p")
	if n := len(childUnits(ch, "c1")) + len(childUnits(ch, "c2")); n != 0 {
		e.t.Errorf("completed units still listed: %+v", ch)
	}
	if len(ch) != 2 {
		e.t.Errorf("children = %d, want 2 (children without units are listed)", len(ch))
	}
	// Expired children disappear.
	e.clock.Add(2 * time.Hour)
	if ch := e.children("p"); len(ch) != 0 {
		e.t.Errorf("children after they expired = %+v", ch)
	}
}

// testWorkerChildLeaseLapsed: a child's units whose leases lapsed keep
// the lapsed lease's expiry in get_child_work_units, whether the lapse was
// found by a later update of the unit or by the listing itself.
func testWorkerChildLeaseLapsed(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k1", m{}), e.unit("k2", m{}))
	e.heartbeat("p", nil, time.Hour)
	e.heartbeat("c", ptr(text("p")), time.Hour)
	as := e.work(coordinate.WorkRequest{Worker: text("c"), MaxJobs: 2, LeaseTime: time.Second})
	e.checkKeys("c's work", attemptKeys(as), []string{"k1", "k2"})
	e.clock.Add(2 * time.Second)
	e.update("s", "k1", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}) // finds the lapse first
	units := childUnits(e.children("p"), "c")
	e.checkKeys("c's units", sortedKeys(units), []string{"k1", "k2"})
	for _, k := range []string{"k1", "k2"} {
		if u, ok := units[k]; ok {
			if u.Worker != nil {
				e.t.Errorf("%s worker %q after its lease lapsed, want nil", k, u.Worker.Bytes)
			}
			e.checkTime(k+" expires after its lease lapsed", u.Expires, Epoch.Add(time.Second))
		}
	}
}

// testWorkerChildGivenBackWithLeaseTime: a unit given back with a lease
// time not in the future (the Python worker's update(-1)) keeps that past
// time in the child's entry, as a lapsed lease does, and each backend
// records it whether the unit was leased by get_work or by hand; one given
// back with a status keeps none.
func testWorkerChildGivenBackWithLeaseTime(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k1", m{}), e.unit("k2", m{}))
	e.heartbeat("p", nil, time.Hour)
	e.heartbeat("c", ptr(text("p")), time.Hour)
	as := e.work(coordinate.WorkRequest{Worker: text("c"), MaxJobs: 2, LeaseTime: time.Minute})
	e.checkKeys("c's work", attemptKeys(as), []string{"k1", "k2"})
	e.clock.Add(10 * time.Second)
	e.update("s", "k1", coordinate.WorkUnitUpdate{LeaseTime: ptr(-time.Second)})
	e.update("s", "k2", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	units := childUnits(e.children("p"), "c")
	e.checkKeys("c's units", sortedKeys(units), []string{"k1", "k2"})
	if u, ok := units["k1"]; ok {
		if u.Worker != nil {
			e.t.Errorf("k1 worker %q after it was given back, want nil", u.Worker.Bytes)
		}
		e.checkTime("k1 expires after a give-back with lease time -1s", u.Expires, Epoch.Add(9*time.Second))
	}
	if u, ok := units["k2"]; ok && (u.Worker != nil || !u.Expires.IsZero()) {
		e.t.Errorf("k2 given back with a status: worker %v expires %v, want neither", u.Worker, u.Expires)
	}
}

func testWorkerChildrenUnknownParent(e *env) {
	if ch := e.children("nobody"); len(ch) != 0 {
		e.t.Errorf("children of an unknown parent = %+v", ch)
	}
}

func testWorkerChildUnitsDropOnDelete(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "u1", "u2")
	e.heartbeat("p", nil, time.Hour)
	e.heartbeat("c", ptr(text("p")), time.Hour)
	e.work(coordinate.WorkRequest{Worker: text("c"), MaxJobs: 2})
	if _, err := e.ns.DeleteWorkUnits(e.ctx, "s", coordinate.DeleteQuery{Keys: []string{"u1"}}); err != nil {
		e.t.Fatal(err)
	}
	e.checkKeys("after deleting u1", sortedKeys(childUnits(e.children("p"), "c")), []string{"u2"})
	if err := e.ns.DeleteWorkSpec(e.ctx, "s"); err != nil {
		e.t.Fatal(err)
	}
	e.checkKeys("after deleting the spec", sortedKeys(childUnits(e.children("p"), "c")), nil)
}

func testWorkerNoImplicitRecords(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k")
	e.workOne("ghost")
	_, err := e.ns.Worker(e.ctx, "ghost")
	e.wantErr("Worker after GetWork from an unregistered worker", err, coordinate.ErrNoSuchWorker)
	if ch := e.children("ghost"); len(ch) != 0 {
		e.t.Errorf("children of an unregistered worker = %+v", ch)
	}
	ws, err := e.ns.Workers(e.ctx)
	if err != nil || len(ws) != 0 {
		e.t.Errorf("Workers = %d, %v; want none (no implicit records)", len(ws), err)
	}
}
