package coordinatetest

import (
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// getWorkTests cover get_work's rules (SEMANTICS §8.1).
var getWorkTests = []test{
	{"NoSpecs", testGetWorkNoSpecs},
	{"OneSpecPerCall", testGetWorkOneSpecPerCall},
	{"MaxJobs", testGetWorkMaxJobs},
	{"MaxJobsBelowOne", testGetWorkMaxJobsBelowOne},
	{"MaxBytes", testGetWorkMaxBytes},
	{"MaxGetwork", testGetWorkMaxGetwork},
	{"MaxRunning", testGetWorkMaxRunning},
	{"MaxRunningCountsUpdatePending", testGetWorkMaxRunningCountsUpdatePending},
	{"WorkSpecNames", testGetWorkSpecNames},
	{"Runtime", testGetWorkRuntime},
	{"RuntimeTasks", testGetWorkRuntimeTasks},
	{"Paused", testGetWorkPaused},
	{"LeaseTime", testGetWorkLeaseTime},
	{"AttemptFields", testGetWorkAttemptFields},
	{"NeverTwice", testGetWorkNeverTwice},
	{"Delayed", testGetWorkDelayed},
	{"MinGBNotEnforcedByDefault", testGetWorkMinGB},
}

func testGetWorkNoSpecs(e *env) {
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.spec(m{"name": "s"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.addKeys("s", "k")
	e.finish("s", "k", nil)
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
}

func testGetWorkOneSpecPerCall(e *env) {
	e.spec(m{"name": "a"})
	e.spec(m{"name": "b"})
	e.addKeys("a", "a1", "a2")
	e.addKeys("b", "b1", "b2")
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	if len(as) != 2 || len(attemptSpecs(as)) != 1 {
		e.t.Errorf("first GetWork = %q from %q, want both units of one spec", attemptKeys(as), attemptSpecs(as))
	}
	as2 := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	if len(as2) != 2 || len(attemptSpecs(as2)) != 1 || attemptSpecs(as2)[0] == attemptSpecs(as)[0] {
		e.t.Errorf("second GetWork = %q from %q, want both units of the other spec", attemptKeys(as2), attemptSpecs(as2))
	}
}

func testGetWorkMaxJobs(e *env) {
	e.spec(m{"name": "s"})
	e.add("s",
		coordinate.WorkUnitInput{Key: text("a"), Data: enc(e.t, m{}), Priority: ptr(1.0)},
		coordinate.WorkUnitInput{Key: text("b"), Data: enc(e.t, m{})},
		coordinate.WorkUnitInput{Key: text("c"), Data: enc(e.t, m{}), Priority: ptr(2.0)},
		coordinate.WorkUnitInput{Key: text("d"), Data: enc(e.t, m{})},
		coordinate.WorkUnitInput{Key: text("e"), Data: enc(e.t, m{})},
	)
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 3})
	e.checkKeys("max_jobs 3 (best priority, then key)", attemptKeys(as), []string{"a", "b", "c"})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 3})
	e.checkKeys("the rest", attemptKeys(as), []string{"d", "e"})
}

// testGetWorkMaxBytes: leasing stops at the first unit whose data would
// pass MaxBytes (it does not skip to smaller ones), the first unit is
// leased however large, and the units left out stay available.
func testGetWorkMaxBytes(e *env) {
	e.spec(m{"name": "s"})
	blob := func(n int) coordinate.Data { return enc(e.t, m{"b": string(make([]byte, n))}) }
	size := int64(len(blob(100)))
	unit := func(k string, n int, prio float64) coordinate.WorkUnitInput {
		return coordinate.WorkUnitInput{Key: text(k), Data: blob(n), Priority: ptr(prio)}
	}
	e.add("s", unit("a", 100, 10), unit("b", 100, 9), unit("big", 1000, 8),
		unit("c", 100, 7), unit("d", 100, 6), unit("e", 100, 5))
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, MaxBytes: 3*size + size/2})
	e.checkKeys("max_bytes 3.5 units, the third too large", attemptKeys(as), []string{"a", "b"})
	e.checkStatus("s", coordinate.StatusAvailable, "big", "c", "d", "e")
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, MaxBytes: 1})
	e.checkKeys("max_bytes below the first unit", attemptKeys(as), []string{"big"})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, MaxBytes: 3 * size})
	e.checkKeys("max_bytes of exactly 3 units", attemptKeys(as), []string{"c", "d", "e"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkStatus("s", coordinate.StatusPending, "a", "b", "big", "c", "d", "e")
}

func testGetWorkMaxJobsBelowOne(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "a", "b", "c")
	for _, n := range []int{0, -5} {
		as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: n})
		if len(as) != 1 {
			e.t.Errorf("max_jobs %d returned %d units, want 1", n, len(as))
		}
	}
}

func testGetWorkMaxGetwork(e *env) {
	e.spec(m{"name": "s", "max_getwork": 2})
	e.addKeys("s", keysN("k", 5)...)
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("max_getwork 2", attemptKeys(as), []string{"k000", "k001"})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1})
	e.checkKeys("max_jobs below max_getwork", attemptKeys(as), []string{"k002"})
}

func testGetWorkMaxRunning(e *env) {
	e.spec(m{"name": "s", "max_running": 2})
	e.addKeys("s", keysN("k", 5)...)
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("max_running 2", attemptKeys(as), []string{"k000", "k001"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.finish("s", "k000", nil)
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("after one finished", attemptKeys(as), []string{"k002"})
	// An expired lease no longer counts as running.
	e.clock.Add(301 * time.Second)
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	if len(as) != 2 {
		e.t.Errorf("after leases expired: %q, want 2 units", attemptKeys(as))
	}
	// Raising max_running with ControlWorkSpec applies at once.
	e.control("s", coordinate.WorkSpecControl{MaxRunning: ptr(3)})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	if len(as) != 1 {
		e.t.Errorf("after raising max_running to 3: %q, want 1 more unit", attemptKeys(as))
	}
}

func testGetWorkMaxRunningCountsUpdatePending(e *env) {
	e.spec(m{"name": "s", "max_running": 1})
	e.addKeys("s", "a", "b")
	e.update("s", "b", coordinate.WorkUnitUpdate{Status: coordinate.StatusPending, LeaseTime: ptr(time.Minute)})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
}

func testGetWorkSpecNames(e *env) {
	e.spec(m{"name": "a", "weight": 100})
	e.spec(m{"name": "b", "weight": 1})
	e.addKeys("a", "a1")
	e.addKeys("b", "b1")
	e.noWork(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"zz"}})
	as := e.work(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"zz", "b"}})
	e.checkKeys("only b", attemptKeys(as), []string{"b1"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"b"}})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{}})
	e.checkKeys("empty filter = all specs", attemptKeys(as), []string{"a1"})
}

func testGetWorkRuntime(e *env) {
	e.spec(m{"name": "go", "runtime": "go", "weight": 100})
	e.spec(m{"name": "py"})
	e.addKeys("go", "g1", "g2")
	e.addKeys("py", "p1")
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("Runtimes nil: only runtime \"\"", attemptKeys(as), []string{"p1"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"go"}})
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, Runtimes: []string{"go"}})
	e.checkKeys("Runtimes [go]", attemptKeys(as), []string{"g1"})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, Runtimes: []string{"rust"}})
}

// A Go worker lists its tasks: it gets only runtime specs whose task
// (`task`, else the spec's name) it has; Python requests are unaffected.
func testGetWorkRuntimeTasks(e *env) {
	e.spec(m{"name": "hello", "runtime": "go"})
	e.spec(m{"name": "greeting", "runtime": "go", "task": "hello", "priority": 1})
	e.spec(m{"name": "other", "runtime": "go", "priority": 2})
	e.spec(m{"name": "py", "task": "hello"})
	e.addKeys("hello", "h1")
	e.addKeys("greeting", "g1")
	e.addKeys("other", "o1")
	e.addKeys("py", "p1")
	for name, want := range map[string]string{"hello": "hello", "greeting": "hello", "other": "other", "py": ""} {
		ws, err := e.ns.WorkSpec(e.ctx, name)
		if err != nil {
			e.t.Fatal(err)
		}
		if ws.Meta.Task != want {
			e.t.Errorf("spec %q: Task = %q, want %q", name, ws.Meta.Task, want)
		}
	}
	goReq := func(tasks ...string) coordinate.WorkRequest {
		return coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, Runtimes: []string{"go"}, Tasks: tasks}
	}
	e.noWork(goReq([]string{}...))
	e.noWork(goReq("nothing"))
	as := e.work(goReq("hello"))
	e.checkKeys("task hello: greeting first (priority 1)", attemptKeys(as), []string{"g1"})
	as = e.work(goReq("hello"))
	e.checkKeys("task hello: then spec hello", attemptKeys(as), []string{"h1"})
	e.noWork(goReq("hello"))
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, Tasks: []string{"hello"}})
	e.checkKeys("no runtime: tasks do not apply", attemptKeys(as), []string{"p1"})
	as = e.work(goReq("hello", "other"))
	e.checkKeys("task other", attemptKeys(as), []string{"o1"})
}

func testGetWorkPaused(e *env) {
	e.spec(m{"name": "a", "disabled": true})
	e.addKeys("a", "k")
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	e.noWork(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"a"}})
	e.control("a", coordinate.WorkSpecControl{Paused: ptr(false)})
	e.workOne("w")
	e.addKeys("a", "k2")
	e.control("a", coordinate.WorkSpecControl{Paused: ptr(true)})
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	// Everything except GetWork works on a paused spec.
	e.finish("a", "k", nil)
	e.addKeys("a", "k3")
	e.checkCounts("a", map[coordinate.Status]int{coordinate.StatusAvailable: 2, coordinate.StatusFinished: 1})
}

func testGetWorkLeaseTime(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", e.unit("k", m{"v": 1}))
	as := e.work(coordinate.WorkRequest{Worker: text("w"), LeaseTime: 60 * time.Second})
	if len(as) != 1 {
		e.t.Fatalf("GetWork = %d attempts", len(as))
	}
	e.checkTime("attempt expiry", as[0].Expires, Epoch.Add(time.Minute))
	u := e.mustGet("s", "k")
	if u.Status != coordinate.StatusPending || u.Worker == nil || u.Worker.Bytes != "w" {
		e.t.Errorf("leased unit: %v worker %v", u.Status, u.Worker)
	}
	e.checkTime("unit expiration", u.Expiration, Epoch.Add(time.Minute))
	if u.Attempts != 1 {
		e.t.Errorf("attempts = %d, want 1", u.Attempts)
	}
	// Modified data is kept through expiry.
	e.update("s", "k", coordinate.WorkUnitUpdate{LeaseTime: ptr(60 * time.Second), Data: enc(e.t, m{"v": 2})})
	e.clock.Add(60 * time.Second)
	e.checkStatus("s", coordinate.StatusPending, "k") // expiry is strictly after the lease time
	e.noWork(coordinate.WorkRequest{Worker: text("w2")})
	e.clock.Add(time.Second)
	u = e.mustGet("s", "k")
	if u.Status != coordinate.StatusAvailable || u.Worker != nil {
		e.t.Errorf("after expiry: %v worker %v, want available without worker", u.Status, u.Worker)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 1})
	e.checkKeys("listed available", e.list("s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusAvailable}}), []string{"k"})
	checkData(e.t, "data after expiry", u.Data, m{"v": 2})
	a := e.workOne("w2")
	checkData(e.t, "re-leased data", a.Data, m{"v": 2})
	if u := e.mustGet("s", "k"); u.Attempts != 2 {
		e.t.Errorf("attempts after re-lease = %d, want 2", u.Attempts)
	}
}

func testGetWorkAttemptFields(e *env) {
	e.spec(m{"name": []byte("s")})
	e.add("s",
		coordinate.WorkUnitInput{Key: bin("b\x00"), Data: enc(e.t, m{"x": "y"}), Priority: ptr(2.5)},
		coordinate.WorkUnitInput{Key: text("t"), Data: enc(e.t, m{}), Priority: ptr(1.0)},
	)
	as := e.work(coordinate.WorkRequest{Worker: bin("w\xff"), MaxJobs: 2, LeaseTime: 90 * time.Second})
	if len(as) != 2 {
		e.t.Fatalf("GetWork = %d attempts, want 2", len(as))
	}
	first, second := as[0], as[1]
	if first.Key.Bytes != "b\x00" {
		first, second = second, first
	}
	if first.Spec != bin("s") || first.Key != bin("b\x00") || first.Priority != 2.5 || first.Worker != bin("w\xff") {
		e.t.Errorf("attempt = %+v", first)
	}
	if second.Key != text("t") || second.Priority != 1 {
		e.t.Errorf("attempt = %+v", second)
	}
	checkData(e.t, "attempt data", first.Data, m{"x": "y"})
	e.checkTime("attempt expiry", first.Expires, Epoch.Add(90*time.Second))
	if first.ID == second.ID {
		e.t.Errorf("two attempts share the lease id %d", first.ID)
	}
	if u := e.mustGet("s", "t"); u.Worker == nil || *u.Worker != bin("w\xff") {
		e.t.Errorf("unit worker = %v, want the requesting worker", u.Worker)
	}
}

func testGetWorkNeverTwice(e *env) {
	e.spec(m{"name": "a"})
	e.spec(m{"name": "b"})
	e.addKeys("a", keysN("a", 5)...)
	e.addKeys("b", keysN("b", 5)...)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1 + i%3})
		if len(as) == 0 {
			break
		}
		for _, a := range as {
			k := a.Spec.Bytes + "/" + a.Key.Bytes
			if seen[k] {
				e.t.Errorf("unit %s handed out twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 10 {
		e.t.Errorf("handed out %d distinct units, want 10", len(seen))
	}
}

func testGetWorkDelayed(e *env) {
	e.spec(m{"name": "s"})
	e.add("s", coordinate.WorkUnitInput{Key: text("later"), Data: enc(e.t, m{}), Delay: time.Minute, Priority: ptr(10.0)})
	e.addKeys("s", "now")
	u := e.mustGet("s", "later")
	if u.Status != coordinate.StatusAvailable {
		e.t.Errorf("delayed unit status = %v, want available", u.Status)
	}
	e.checkTime("not-before", u.NotBefore, Epoch.Add(time.Minute))
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusAvailable: 2})
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("before the delay", attemptKeys(as), []string{"now"})
	e.clock.Add(59 * time.Second)
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.clock.Add(time.Second)
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
	e.checkKeys("at the delay", attemptKeys(as), []string{"later"})
}

func testGetWorkMinGB(e *env) {
	e.spec(m{"name": "big", "min_gb": 64})
	e.addKeys("big", "k")
	as := e.work(coordinate.WorkRequest{Worker: text("w"), AvailableGB: 1})
	e.checkKeys("min_gb above available_gb, not enforced by default", attemptKeys(as), []string{"k"})
}
