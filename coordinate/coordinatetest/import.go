package coordinatetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// importTests cover Namespace.ImportWorkSpec: a spec and its units stored
// exactly as another daemon saved them.
var importTests = []test{
	{"ExactState", testImportExactState},
	{"NoChainingOrSideEffects", testImportNoSideEffects},
	{"PastLeaseExpires", testImportPastLease},
	{"ExistingSpecRefused", testImportExisting},
	{"InvalidChangesNothing", testImportInvalid},
	{"ManyUnits", testImportMany},
}

// importFixture is spec "imp" (then "next", continuous, control settings
// changed) with one unit of each importable status.
func importFixture(e *env) *coordinate.ImportedWorkSpec {
	w := bin("worker-1")
	return &coordinate.ImportedWorkSpec{
		Definition: enc(e.t, m{"name": "imp", "then": "next", "continuous": true, "interval": 60, "max_running": 5}),
		Control: coordinate.WorkSpecControl{
			Paused: ptr(true), Continuous: ptr(false), Interval: ptr(90 * time.Second),
			MaxRunning: ptr(7), Weight: ptr(3),
		},
		NextContinuous: Epoch.Add(time.Hour),
		Archived:       map[coordinate.Status]int{coordinate.StatusFinished: 4, coordinate.StatusFailed: 2},
		Units: []coordinate.ImportedWorkUnit{
			{Key: text("avail"), Data: enc(e.t, m{"a": 1}), Status: coordinate.StatusAvailable, Priority: 2},
			{Key: bin("pend"), Data: enc(e.t, m{"p": 1}), Status: coordinate.StatusPending, Priority: -1,
				Expiration: Epoch.Add(10 * time.Minute), Worker: &w},
			{Key: text("done"), Data: enc(e.t, m{"output": []string{"x", "y"}}), Status: coordinate.StatusFinished,
				Expiration: Epoch.Add(-time.Hour), Worker: &w},
			{Key: text("bad"), Data: enc(e.t, m{"traceback": "boom"}), Status: coordinate.StatusFailed,
				Expiration: Epoch.Add(-2 * time.Hour)},
		},
	}
}

func (e *env) importSpec(in *coordinate.ImportedWorkSpec) {
	e.t.Helper()
	if err := e.ns.ImportWorkSpec(e.ctx, in); err != nil {
		e.t.Fatalf("ImportWorkSpec: %v", err)
	}
}

func testImportExactState(e *env) {
	e.importSpec(importFixture(e))
	ws := e.getSpec("imp")
	mt := ws.Meta
	if !mt.Paused || mt.Continuous || !mt.CanBeContinuous || mt.Interval != 90*time.Second || mt.MaxRunning != 7 || mt.Weight != 3 || mt.Then != "next" {
		e.t.Errorf("imported meta = %+v", mt)
	}
	e.checkTime("NextContinuous", mt.NextContinuous, Epoch.Add(time.Hour))
	checkData(e.t, "definition", ws.Definition, m{"name": "imp", "then": "next", "continuous": true, "interval": 60, "max_running": 5})
	e.checkCounts("imp", map[coordinate.Status]int{
		coordinate.StatusAvailable: 1, coordinate.StatusPending: 1,
		coordinate.StatusFinished: 5, coordinate.StatusFailed: 3,
	})
	type want struct {
		key     coordinate.Name
		status  coordinate.Status
		prio    float64
		expires time.Time
		worker  string
	}
	for _, w := range []want{
		{text("avail"), coordinate.StatusAvailable, 2, time.Time{}, ""},
		{bin("pend"), coordinate.StatusPending, -1, Epoch.Add(10 * time.Minute), "worker-1"},
		{text("done"), coordinate.StatusFinished, 0, Epoch.Add(-time.Hour), "worker-1"},
		{text("bad"), coordinate.StatusFailed, 0, Epoch.Add(-2 * time.Hour), ""},
	} {
		u := e.mustGet("imp", w.key.Bytes)
		if u.Key != w.key || u.Status != w.status || u.Priority != w.prio {
			e.t.Errorf("unit %q: key %+v status %v priority %v, want %+v %v %v", w.key.Bytes, u.Key, u.Status, u.Priority, w.key, w.status, w.prio)
		}
		e.checkTime("unit "+w.key.Bytes+" expiration", u.Expiration, w.expires)
		got := ""
		if u.Worker != nil {
			got = u.Worker.Bytes
		}
		if got != w.worker {
			e.t.Errorf("unit %q worker = %q, want %q", w.key.Bytes, got, w.worker)
		}
	}
	checkData(e.t, "failed unit data", e.mustGet("imp", "bad").Data, m{"traceback": "boom"})
	// The imported lease is a real one: the spec, once resumed, hands out
	// only the available unit, and the pending one can be finished.
	e.control("imp", coordinate.WorkSpecControl{Paused: ptr(false)})
	a := e.workOne("w2")
	if a.Key.Bytes != "avail" {
		e.t.Errorf("GetWork after import gave %q, want avail", a.Key.Bytes)
	}
	e.finish("imp", "pend", nil)
}

func testImportNoSideEffects(e *env) {
	e.spec(m{"name": "next"})
	e.importSpec(importFixture(e))
	// The finished unit's output was chained when it finished, on the
	// other daemon; importing it must not chain again.
	if keys := e.list("next", coordinate.WorkUnitQuery{}); len(keys) != 0 {
		e.t.Errorf("import created chained units %q", keys)
	}
}

func testImportPastLease(e *env) {
	w := bin("w")
	e.importSpec(&coordinate.ImportedWorkSpec{
		Definition: enc(e.t, m{"name": "s"}),
		Units: []coordinate.ImportedWorkUnit{{Key: text("k"), Data: enc(e.t, m{}), Status: coordinate.StatusPending,
			Expiration: Epoch.Add(-time.Second), Worker: &w}},
	})
	e.checkStatus("s", coordinate.StatusAvailable, "k")
	if a := e.workOne("w2"); a.Key.Bytes != "k" {
		e.t.Errorf("GetWork gave %q, want the unit whose imported lease had expired", a.Key.Bytes)
	}
}

func testImportExisting(e *env) {
	e.spec(m{"name": "imp"})
	e.addKeys("imp", "old")
	err := e.ns.ImportWorkSpec(e.ctx, importFixture(e))
	if !errors.Is(err, coordinate.ErrWorkSpecExists) {
		e.t.Fatalf("ImportWorkSpec over an existing spec: %v, want ErrWorkSpecExists", err)
	}
	e.checkKeys("units after refused import", e.list("imp", coordinate.WorkUnitQuery{}), []string{"old"})
	if e.getSpec("imp").Meta.Weight != coordinate.DefaultWeight {
		e.t.Error("refused import changed the existing spec")
	}
}

func testImportInvalid(e *env) {
	for _, tc := range []struct {
		name   string
		mutate func(*coordinate.ImportedWorkSpec)
		want   error
	}{
		{"blocked unit", func(in *coordinate.ImportedWorkSpec) { in.Units[0].Status = coordinate.StatusBlocked }, coordinate.ErrInvalidWorkUnit},
		{"bad status", func(in *coordinate.ImportedWorkSpec) { in.Units[1].Status = 9 }, coordinate.ErrInvalidWorkUnit},
		{"duplicate key", func(in *coordinate.ImportedWorkSpec) { in.Units[1].Key = in.Units[0].Key }, coordinate.ErrInvalidWorkUnit},
		{"bad definition", func(in *coordinate.ImportedWorkSpec) { in.Definition = enc(e.t, m{"name": 5}) }, coordinate.ErrInvalidWorkSpec},
		{"continuous not allowed", func(in *coordinate.ImportedWorkSpec) {
			in.Definition = enc(e.t, m{"name": "imp"})
			in.Control.Continuous = ptr(true)
		}, coordinate.ErrCannotBeContinuous},
		{"archived available", func(in *coordinate.ImportedWorkSpec) { in.Archived[coordinate.StatusAvailable] = 1 }, coordinate.ErrInvalidWorkSpec},
	} {
		in := importFixture(e)
		tc.mutate(in)
		if err := e.ns.ImportWorkSpec(e.ctx, in); !errors.Is(err, tc.want) {
			e.t.Errorf("%s: ImportWorkSpec error %v, want %v", tc.name, err, tc.want)
		}
		if _, err := e.ns.WorkSpec(e.ctx, "imp"); !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
			e.t.Errorf("%s: the refused import left a spec behind (%v)", tc.name, err)
		}
	}
}

// testImportMany imports more units than a backend may write in one
// statement.
func testImportMany(e *env) {
	const n = 10050
	in := &coordinate.ImportedWorkSpec{Definition: enc(e.t, m{"name": "many"})}
	for i := range n {
		st := coordinate.StatusAvailable
		if i%2 == 1 {
			st = coordinate.StatusFinished
		}
		in.Units = append(in.Units, coordinate.ImportedWorkUnit{Key: text(fmt.Sprintf("k%05d", i)), Data: coordinate.EmptyMap, Status: st})
	}
	e.importSpec(in)
	e.checkCounts("many", map[coordinate.Status]int{coordinate.StatusAvailable: n / 2, coordinate.StatusFinished: n / 2})
	if u := e.mustGet("many", "k10049"); u.Status != coordinate.StatusFinished {
		e.t.Errorf("last unit %v, want finished", u.Status)
	}
}
