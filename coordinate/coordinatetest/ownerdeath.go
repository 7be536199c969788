package coordinatetest

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// ownerDeathTests cover workers that ask, in their heartbeat data, for
// their leases to end with their registration (docs/compat.md, "Go
// workers").
var ownerDeathTests = []test{
	{"ReleaseOnLapse", testOwnerDeathOnLapse},
	{"ReleaseOnUnregister", testOwnerDeathOnUnregister},
}

// ownerHeartbeat registers id, asking for the release or not.
func (e *env) ownerHeartbeat(id string, release bool, expire time.Duration) {
	e.t.Helper()
	data := m{"pid": 1}
	if release {
		data[coordinate.ReleaseLeasesKey] = true
	}
	hb := coordinate.Heartbeat{Worker: text(id), Mode: enc(e.t, "RUN"), Data: enc(e.t, data), Expire: expire}
	if err := e.ns.WorkerHeartbeat(e.ctx, hb); err != nil {
		e.t.Fatalf("WorkerHeartbeat(%s): %v", id, err)
	}
}

func (e *env) leaseOne(worker, spec string) {
	e.t.Helper()
	as := e.work(coordinate.WorkRequest{Worker: text(worker), MaxJobs: 1, WorkSpecs: []string{spec}, LeaseTime: time.Hour})
	if len(as) != 1 {
		e.t.Fatalf("%s leased %d units of %s, want 1", worker, len(as), spec)
	}
}

// When a worker that asked for it lapses, its leases end at once; other
// workers' leases, and units re-leased to another worker, are untouched.
func testOwnerDeathOnLapse(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "t"})
	e.spec(m{"name": "r", "max_retries": 1})
	e.addKeys("s", "dead", "kept")
	e.addKeys("t", "moved")
	e.addKeys("r", "exhausted")
	e.ownerHeartbeat("crash", true, 10*time.Second)
	e.ownerHeartbeat("legacy", false, 10*time.Second)
	e.ownerHeartbeat("other", false, time.Hour)
	e.leaseOne("crash", "s")
	e.leaseOne("legacy", "s")
	e.leaseOne("crash", "t")
	e.update("t", "moved", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.leaseOne("other", "t")
	e.leaseOne("crash", "r") // attempt 1
	e.update("r", "exhausted", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
	e.leaseOne("crash", "r") // attempt 2 of max_retries 1

	e.clock.Add(9 * time.Second)
	e.checkStatus("s", coordinate.StatusPending, "dead", "kept")
	e.clock.Add(2 * time.Second)
	e.checkStatus("s", coordinate.StatusAvailable, "dead")
	e.checkStatus("s", coordinate.StatusPending, "kept")
	e.checkStatus("t", coordinate.StatusPending, "moved")
	e.checkStatus("r", coordinate.StatusFailed, "exhausted")
	if u := e.mustGet("s", "dead"); u.Worker != nil || u.Attempts != 1 {
		e.t.Errorf("released unit: worker %v, %d attempts; want none, 1", u.Worker, u.Attempts)
	}
	e.leaseOne("other", "s")
}

// Unregistering ends the leases of a worker that asked for it, and only
// of such a worker.
func testOwnerDeathOnUnregister(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "a", "b")
	e.ownerHeartbeat("go", true, time.Hour)
	e.ownerHeartbeat("py", false, time.Hour)
	e.leaseOne("go", "s")
	e.leaseOne("py", "s")
	for _, id := range []string{"go", "py"} {
		if err := e.ns.UnregisterWorker(e.ctx, id); err != nil {
			e.t.Fatalf("UnregisterWorker(%s): %v", id, err)
		}
		if _, err := e.ns.Worker(e.ctx, id); err == nil {
			e.t.Errorf("worker %s still registered", id)
		}
	}
	e.checkStatus("s", coordinate.StatusAvailable, "a")
	e.checkStatus("s", coordinate.StatusPending, "b")
}
