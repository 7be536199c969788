package postgres

import (
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// events returns spec's transition counters from Stats.
func (e *fastEnv) events(ns coordinate.Namespace, spec string) coordinate.SpecEvents {
	e.t.Helper()
	st, err := ns.(coordinate.StatsReader).Stats(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range st.Specs {
		if s.Name.Bytes == spec {
			if s.Events == nil {
				e.t.Fatalf("Stats of %s has no events", spec)
			}
			return *s.Events
		}
	}
	e.t.Fatalf("Stats lists no spec %s", spec)
	return coordinate.SpecEvents{}
}

// TestEventsPaths: the transitions the SQL-only paths make (claims, fast
// finishes, the sweep, max_retries expiry) are counted once committed, and
// only by the daemon that committed them.
func TestEventsPaths(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s", "max_retries": 1})
	e.add("s", numbered(4)...)
	as := e.claim("s", 4)
	ctx := t.Context()
	finish := func(a coordinate.Attempt) {
		t.Helper()
		if err := e.ns.UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
			t.Fatal(err)
		}
	}
	e.paths()
	finish(as[0])
	finish(as[1])
	e.clock.Add(2 * time.Minute) // the other two lapse: the sweep makes them AVAILABLE
	if got, want := e.events(e.ns, "s"), (coordinate.SpecEvents{Added: 4, Leased: 4, Finished: 2, Expired: 2}); got != want {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	as = e.claim("s", 2) // second attempts: max_retries is used up
	finish(as[0])
	if fast, _ := e.paths(); fast != 3 {
		t.Fatalf("%d finishes took the fast path, want 3 (this test is about it)", fast)
	}
	e.clock.Add(2 * time.Minute) // the last lapses: FAILED for too many retries
	want := coordinate.SpecEvents{Added: 4, Leased: 6, Finished: 3, Failed: 1, Expired: 3}
	if got := e.events(e.ns, "s"); got != want {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	if c := e.status("s", as[1].Key.Bytes); c != coordinate.StatusFailed {
		t.Errorf("%s is %v, want FAILED", as[1].Key.Bytes, c)
	}

	// Another daemon on the same database counts its own transitions.
	b2, err := New(ctx, e.b.pool.Config().ConnString(), Options{Clock: e.clock, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	ns2, err := b2.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	e.add("s", unit("x", map[string]any{}))
	if err := ns2.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{unit("y", map[string]any{}), unit("z", map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	if got := e.events(ns2, "s"); got != (coordinate.SpecEvents{Added: 2}) {
		t.Errorf("second daemon's events = %+v, want its own 2 added", got)
	}
	if got := e.events(e.ns, "s").Added; got != 5 {
		t.Errorf("first daemon counted %d added, want 5", got)
	}
}

// TestEventsBound: at maxEventSpecs counted specs, Stats drops those no
// longer in the database and keeps the others.
func TestEventsBound(t *testing.T) {
	e := newFastEnv(t)
	e.spec(map[string]any{"name": "s"})
	e.add("s", numbered(1)...)
	for id := int64(-1); len(e.b.events.specs) < maxEventSpecs; id-- {
		e.b.events.specs[id] = &specCounters{} // ids no spec has
	}
	if got := e.events(e.ns, "s").Added; got != 1 {
		t.Errorf("s added = %d, want 1", got)
	}
	if n := len(e.b.events.specs); n != 1 {
		t.Errorf("%d specs counted after pruning, want 1 (s)", n)
	}
}

// TestImportAvailableSince: units imported AVAILABLE are so since the
// import, and the import counts as adding them.
func TestImportAvailableSince(t *testing.T) {
	e := newFastEnv(t)
	def, _ := cbor.Marshal(map[string]any{"name": "imp"})
	e.clock.Add(time.Minute)
	in := &coordinate.ImportedWorkSpec{Definition: def, Units: []coordinate.ImportedWorkUnit{
		{Key: coordinate.Name{Bytes: "a", Text: true}, Status: coordinate.StatusAvailable},
		{Key: coordinate.Name{Bytes: "b", Text: true}, Status: coordinate.StatusFinished},
	}}
	if err := e.ns.ImportWorkSpec(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Minute)
	st, err := e.ns.(coordinate.StatsReader).Stats(t.Context())
	if err != nil || len(st.Specs) != 1 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	s := st.Specs[0]
	if want := e.clock.Now().Add(-time.Minute); !s.OldestAvailable.Equal(want) {
		t.Errorf("oldest available = %v, want the import's %v", s.OldestAvailable, want)
	}
	if s.Events == nil || s.Events.Added != 2 || s.Events.Finished != 1 {
		t.Errorf("events = %+v, want 2 added, 1 finished", s.Events)
	}
}
