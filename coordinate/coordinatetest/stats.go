package coordinatetest

import (
	"errors"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// statsTests cover the optional monitoring interfaces (coordinate/stats.go)
// that the daemon's /metrics and dashboard read. Every backend of this
// module implements them, so the suite requires them.
var statsTests = []test{
	{"Counts", testStatsCounts},
	{"Events", testStatsEvents},
	{"OldestAvailable", testStatsOldestAvailable},
	{"OldestAvailablePaths", testStatsOldestAvailablePaths},
	{"GroupUnits", testStatsGroupUnits},
	{"WorkerUnits", testStatsWorkerUnits},
}

func (e *env) stats() map[string]coordinate.SpecStats {
	e.t.Helper()
	r, ok := e.ns.(coordinate.StatsReader)
	if !ok {
		e.t.Fatalf("namespace %T does not implement coordinate.StatsReader", e.ns)
	}
	st, err := r.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	out := map[string]coordinate.SpecStats{}
	for i, s := range st.Specs {
		if i > 0 && st.Specs[i-1].Name.Bytes >= s.Name.Bytes {
			e.t.Errorf("Stats specs out of order: %q before %q", st.Specs[i-1].Name.Bytes, s.Name.Bytes)
		}
		out[s.Name.Bytes] = s
	}
	return out
}

// testStatsCounts: Stats agrees with CountWorkUnits and the spec flags.
func testStatsCounts(e *env) {
	e.spec(m{"name": "a"})
	e.spec(m{"name": "b", "continuous": true})
	e.spec(m{"name": "c"})
	e.addKeys("a", "1", "2", "3", "4", "5")
	e.add("a", e.dep("6", "1"))
	e.finish("a", "1", nil)
	e.fail("a", "2")
	e.workOne("w") // 3, 4 or 5 becomes PENDING
	e.control("b", coordinate.WorkSpecControl{Paused: ptr(true), Continuous: ptr(true)})
	e.addKeys("c", "x")
	if err := e.ns.DeleteWorkSpec(e.ctx, "c"); err != nil {
		e.t.Fatal(err)
	}
	st := e.stats()
	if len(st) != 2 {
		e.t.Fatalf("Stats lists %d specs, want a and b", len(st))
	}
	for _, name := range []string{"a", "b"} {
		want := e.counts(name)
		got := st[name].Counts
		for s := coordinate.StatusAvailable; s <= coordinate.StatusFailed; s++ {
			if got[s] != want[s] {
				e.t.Errorf("Stats %s %v = %d, CountWorkUnits says %d", name, s, got[s], want[s])
			}
		}
	}
	if c := st["a"].Counts; c[coordinate.StatusAvailable] != 2 || c[coordinate.StatusBlocked] != 1 || c[coordinate.StatusPending] != 1 || c.Total() != 6 {
		e.t.Errorf("Stats a counts = %v, want 2 available, 1 blocked (on s/1), 1 pending, 6 in all", c)
	}
	if b := st["b"]; !b.Paused || !b.Continuous || st["a"].Paused || st["a"].Continuous {
		e.t.Errorf("Stats flags: a paused %v continuous %v, b paused %v continuous %v; want only b's", st["a"].Paused, st["a"].Continuous, b.Paused, b.Continuous)
	}
}

// testStatsEvents: transition counters (every backend keeps them).
func testStatsEvents(e *env) {
	e.spec(m{"name": "s", "then": "t", "max_retries": 1})
	e.spec(m{"name": "t"})
	e.addKeys("s", "a", "b", "c", "d")
	e.finish("s", "a", m{"output": []any{"o1", "o2"}}) // two chained units in t
	e.fail("s", "b")
	e.update("s", "b", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}) // retry
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 3, WorkSpecs: []string{"s"}, LeaseTime: time.Minute})
	if len(as) != 3 {
		e.t.Fatalf("GetWork leased %d units, want 3", len(as))
	}
	e.clock.Add(2 * time.Minute) // the three leases lapse
	st := e.stats()
	ev := st["s"].Events
	if ev == nil {
		e.t.Fatal("Stats reports no transition counters for spec s")
	}
	want := coordinate.SpecEvents{Added: 4, Leased: 3, Finished: 1, Failed: 1, Retried: 1, Expired: 3}
	if *ev != want {
		e.t.Errorf("spec s events = %+v, want %+v", *ev, want)
	}
	if tev := st["t"].Events; tev == nil || tev.Added != 2 {
		e.t.Errorf("spec t events = %+v, want 2 added (chained outputs)", tev)
	}
}

// testStatsOldestAvailable: the age of the oldest runnable AVAILABLE unit.
func testStatsOldestAvailable(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "empty"})
	e.add("s", e.unit("old", m{}))
	e.clock.Add(10 * time.Second)
	high := e.unit("new", m{})
	high.Priority = ptr(10.0)
	e.add("s", high)
	st := e.stats()
	if got := st["s"].OldestAvailable; !got.Equal(Epoch) {
		e.t.Errorf("oldest available of s = %v, want %v (the first unit's add)", got, Epoch)
	}
	if got := st["empty"].OldestAvailable; !got.IsZero() {
		e.t.Errorf("oldest available of an empty spec = %v, want zero", got)
	}
	e.workOne("w") // takes "new"
	e.workOne("w") // takes "old"
	if got := e.stats()["s"].OldestAvailable; !got.IsZero() {
		e.t.Errorf("oldest available with nothing available = %v, want zero", got)
	}
}

// testStatsOldestAvailablePaths: a unit is AVAILABLE since it was added,
// its delay ended, its lease lapsed, it was retried or its last
// dependency finished.
func testStatsOldestAvailablePaths(e *env) {
	e.spec(m{"name": "s"})
	e.spec(m{"name": "d"})
	oldest := func(spec string, want time.Duration) {
		e.t.Helper()
		got := e.stats()[spec].OldestAvailable
		switch {
		case want < 0 && !got.IsZero():
			e.t.Errorf("oldest available of %s = %v, want none", spec, got)
		case want >= 0 && !got.Equal(Epoch.Add(want)):
			e.t.Errorf("oldest available of %s = %v, want %v", spec, got, Epoch.Add(want))
		}
	}
	delayed := e.unit("late", m{})
	delayed.Delay = time.Hour
	e.add("s", delayed)
	oldest("s", -1) // only a delayed unit
	e.addKeys("s", "a")
	e.clock.Add(10 * time.Second)
	e.add("d", e.dep("x", "a")) // BLOCKED on s/a
	oldest("s", 0)
	oldest("d", -1)
	e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, WorkSpecs: []string{"s"}, LeaseTime: time.Minute}) // a
	oldest("s", -1)
	e.clock.Add(2 * time.Minute) // a's lease lapses
	oldest("s", 130*time.Second)
	e.clock.Add(10 * time.Second)
	e.finish("s", "a", nil) // x's last dependency
	oldest("d", 140*time.Second)
	e.fail("d", "x")
	e.clock.Add(10 * time.Second)
	e.update("d", "x", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}) // retried
	oldest("d", 150*time.Second)
	e.clock.Add(time.Hour) // the delay ended at 1h; a backend may notice it later
	if got := e.stats()["s"].OldestAvailable; got.Before(Epoch.Add(time.Hour)) || got.After(e.clock.Now()) {
		e.t.Errorf("oldest available of s = %v, want from %v (its delay's end) to now", got, Epoch.Add(time.Hour))
	}
}

// testStatsGroupUnits: the units of a group with their dependencies.
func testStatsGroupUnits(e *env) {
	l, ok := e.ns.(coordinate.GroupLister)
	if !ok {
		e.t.Fatalf("namespace %T does not implement coordinate.GroupLister", e.ns)
	}
	e.spec(m{"name": "s"})
	e.spec(m{"name": "r"})
	e.add("s", e.grouped("a", "g"), e.grouped("b", "g", "a"), e.grouped("c", "g", "a", "b"), e.grouped("x", "other"))
	rin := e.unit("z", m{})
	rin.Group = "g"
	e.add("r", rin)
	us, more, err := l.GroupUnits(e.ctx, "g", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, u := range us {
		got = append(got, u.Spec.Bytes+"/"+u.Key.Bytes)
	}
	if want := "r/z s/a s/b s/c"; strings.Join(got, " ") != want || more {
		e.t.Errorf("GroupUnits(g) = %q more %v, want %q", strings.Join(got, " "), more, want)
	}
	if len(us) == 4 && (len(us[3].DependsOn) != 2 || us[3].Status != coordinate.StatusBlocked) {
		e.t.Errorf("s/c = %+v, want BLOCKED on a and b", us[3])
	}
	us, more, err = l.GroupUnits(e.ctx, "g", 2)
	if err != nil || len(us) != 2 || !more {
		e.t.Errorf("GroupUnits(g, 2) = %d units, more %v, err %v; want 2, true", len(us), more, err)
	}
	us, _, err = l.GroupUnits(e.ctx, "nope", 0)
	if err != nil || len(us) != 0 {
		e.t.Errorf("GroupUnits(nope) = %v, %v; want nothing", us, err)
	}
}

// testStatsWorkerUnits: the outstanding units of one worker, parent or not.
func testStatsWorkerUnits(e *env) {
	l, ok := e.ns.(coordinate.WorkerUnitLister)
	if !ok {
		e.t.Fatalf("namespace %T does not implement coordinate.WorkerUnitLister", e.ns)
	}
	e.spec(m{"name": "s"})
	e.addKeys("s", "a", "b", "c")
	hb := coordinate.Heartbeat{Worker: text("w"), Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Hour}
	if err := e.ns.WorkerHeartbeat(e.ctx, hb); err != nil {
		e.t.Fatal(err)
	}
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 2, LeaseTime: time.Minute})
	if len(as) != 2 {
		e.t.Fatalf("GetWork leased %d units, want 2", len(as))
	}
	e.finish("s", as[0].Key.Bytes, nil)
	us, err := l.WorkerUnits(e.ctx, "w")
	if err != nil {
		e.t.Fatal(err)
	}
	if len(us) != 1 || us[0].Key.Bytes != as[1].Key.Bytes || us[0].Spec.Bytes != "s" ||
		!us[0].Expires.Equal(Epoch.Add(time.Minute)) || us[0].Worker == nil || us[0].Worker.Bytes != "w" {
		e.t.Errorf("WorkerUnits(w) = %+v, want only s/%s, pending under w until %v", us, as[1].Key.Bytes, Epoch.Add(time.Minute))
	}
	if _, err := l.WorkerUnits(e.ctx, "nobody"); !errors.Is(err, coordinate.ErrNoSuchWorker) {
		e.t.Errorf("WorkerUnits(nobody) error = %v, want ErrNoSuchWorker", err)
	}
}
