package coordinatetest

import (
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// specTests cover work-spec definitions and control settings
// (SEMANTICS §4, DECISIONS §1-3).
var specTests = []test{
	{"Defaults", testSpecDefaults},
	{"SpecialKeys", testSpecSpecialKeys},
	{"DefinitionVerbatim", testSpecDefinitionVerbatim},
	{"InvalidRejected", testSpecInvalidRejected},
	{"InvalidReSetKeepsOld", testSpecInvalidReSetKeepsOld},
	{"ReSetRederives", testSpecReSetRederives},
	{"Control", testSpecControl},
	{"ControlCannotBeContinuous", testSpecControlCannotBeContinuous},
	{"ControlUnknown", testSpecControlUnknown},
	{"UnknownSpec", testSpecUnknown},
	{"ListOrderAndPaging", testSpecListPaging},
	{"Delete", testSpecDelete},
	{"Clear", testSpecClear},
	{"ByteAndTextNames", testSpecByteAndTextNames},
}

func testSpecDefaults(e *env) {
	ws := e.spec(m{"name": "a"})
	want := coordinate.WorkSpecMeta{Weight: 20, ThenPreempts: true}
	if ws.Meta != want {
		e.t.Errorf("SetWorkSpec meta = %+v, want defaults %+v", ws.Meta, want)
	}
	if ws.Name != text("a") {
		e.t.Errorf("name = %+v, want text %q", ws.Name, "a")
	}
	if got := e.getSpec("a").Meta; got != want {
		e.t.Errorf("WorkSpec meta = %+v, want %+v", got, want)
	}
}

func testSpecSpecialKeys(e *env) {
	cases := []struct {
		name  string
		def   m
		check func(coordinate.WorkSpecMeta) bool
	}{
		{"weight", m{"weight": 7}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 7 }},
		{"nice", m{"nice": 5}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 15 }},
		{"negative nice", m{"nice": -10}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 30 }},
		{"nice floor 1", m{"nice": 30}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 1 }},
		{"weight beats nice", m{"weight": 3, "nice": 5}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 3 }},
		{"weight 0 stored", m{"weight": 0}, func(x coordinate.WorkSpecMeta) bool { return x.Weight == 0 }},
		{"disabled", m{"disabled": true}, func(x coordinate.WorkSpecMeta) bool { return x.Paused }},
		{"not disabled", m{"disabled": false}, func(x coordinate.WorkSpecMeta) bool { return !x.Paused }},
		{"continuous", m{"continuous": true}, func(x coordinate.WorkSpecMeta) bool { return x.Continuous && x.CanBeContinuous }},
		{"not continuous", m{"continuous": false}, func(x coordinate.WorkSpecMeta) bool { return !x.Continuous && !x.CanBeContinuous }},
		{"interval int", m{"interval": 60}, func(x coordinate.WorkSpecMeta) bool { return x.Interval == time.Minute }},
		{"interval float", m{"interval": 2.5}, func(x coordinate.WorkSpecMeta) bool { return x.Interval == 2500*time.Millisecond }},
		{"interval numeric string", m{"interval": "90"}, func(x coordinate.WorkSpecMeta) bool { return x.Interval == 90*time.Second }},
		{"interval fractional string", m{"interval": "1.5"}, func(x coordinate.WorkSpecMeta) bool { return x.Interval == 1500*time.Millisecond }},
		{"max_running", m{"max_running": 4}, func(x coordinate.WorkSpecMeta) bool { return x.MaxRunning == 4 }},
		{"max_getwork", m{"max_getwork": 3}, func(x coordinate.WorkSpecMeta) bool { return x.MaxGetwork == 3 }},
		{"max_retries", m{"max_retries": 2}, func(x coordinate.WorkSpecMeta) bool { return x.MaxRetries == 2 }},
		{"then", m{"then": "next"}, func(x coordinate.WorkSpecMeta) bool { return x.Then == "next" && x.ThenPreempts }},
		{"then byte string", m{"then": []byte("next")}, func(x coordinate.WorkSpecMeta) bool { return x.Then == "next" }},
		{"then_preempts false", m{"then": "n", "then_preempts": false}, func(x coordinate.WorkSpecMeta) bool { return !x.ThenPreempts }},
		{"then_preempts true", m{"then_preempts": true}, func(x coordinate.WorkSpecMeta) bool { return x.ThenPreempts }},
		{"runtime", m{"runtime": "go"}, func(x coordinate.WorkSpecMeta) bool { return x.Runtime == "go" }},
		{"priority", m{"priority": 5}, func(x coordinate.WorkSpecMeta) bool { return x.Priority == 5 }},
		{"negative priority", m{"priority": -2}, func(x coordinate.WorkSpecMeta) bool { return x.Priority == -2 }},
		{"min_gb", m{"min_gb": 1.5}, func(x coordinate.WorkSpecMeta) bool { return x.MinGB == 1.5 }},
		{"min_gb int", m{"min_gb": 2}, func(x coordinate.WorkSpecMeta) bool { return x.MinGB == 2 }},
		{"store-only keys", m{"desc": "d", "module": "m", "run_function": "f", "config": m{"a": 1}, "other": []any{1, 2}},
			func(x coordinate.WorkSpecMeta) bool {
				return x == coordinate.WorkSpecMeta{Weight: 20, ThenPreempts: true}
			}},
	}
	for _, c := range cases {
		c.def["name"] = "s " + c.name
		ws := e.spec(c.def)
		if !c.check(ws.Meta) {
			e.t.Errorf("%s: SetWorkSpec(%v) meta = %+v", c.name, c.def, ws.Meta)
		}
		if got := e.getSpec("s " + c.name).Meta; !c.check(got) {
			e.t.Errorf("%s: WorkSpec meta after SetWorkSpec(%v) = %+v", c.name, c.def, got)
		}
	}
}

func testSpecDefinitionVerbatim(e *env) {
	// An indefinite-length map with a float16 value: only a backend that
	// stores the bytes themselves returns exactly these.
	def := coordinate.Data{0xbf,
		0x64, 'n', 'a', 'm', 'e', 0x61, 'v',
		0x61, 'x', 0xf9, 0x3c, 0x00,
		0xff}
	ws, err := e.ns.SetWorkSpec(e.ctx, def)
	if err != nil {
		e.t.Fatalf("SetWorkSpec(indefinite map): %v", err)
	}
	checkBytes(e.t, "SetWorkSpec definition", ws.Definition, def)
	checkBytes(e.t, "WorkSpec definition", e.getSpec("v").Definition, def)
	specs, _, err := e.ns.ListWorkSpecs(e.ctx, "", 0)
	if err != nil || len(specs) != 1 {
		e.t.Fatalf("ListWorkSpecs = %d specs, %v; want 1", len(specs), err)
	}
	checkBytes(e.t, "ListWorkSpecs definition", specs[0].Definition, def)
}

func testSpecInvalidRejected(e *env) {
	cases := []struct {
		name string
		def  coordinate.Data
	}{
		{"missing name", enc(e.t, m{"weight": 1})},
		{"name not a string", enc(e.t, m{"name": 5})},
		{"not a map", enc(e.t, []any{"name", "x"})},
		{"a string", enc(e.t, "x")},
		{"weight not a number", enc(e.t, m{"name": "x", "weight": "abc"})},
		{"nice not a number", enc(e.t, m{"name": "x", "nice": "abc"})},
		{"interval not numeric", enc(e.t, m{"name": "x", "interval": "soon"})},
		{"interval a list", enc(e.t, m{"name": "x", "interval": []any{1}})},
		{"max_running not a number", enc(e.t, m{"name": "x", "max_running": "many"})},
		{"max_getwork not a number", enc(e.t, m{"name": "x", "max_getwork": "many"})},
		{"truncated CBOR", coordinate.Data{0xa1, 0x64, 'n', 'a'}},
	}
	for _, c := range cases {
		ws, err := e.ns.SetWorkSpec(e.ctx, c.def)
		e.wantErr("SetWorkSpec "+c.name, err, coordinate.ErrInvalidWorkSpec)
		if err == nil {
			e.t.Errorf("SetWorkSpec %s returned %+v", c.name, ws)
		}
	}
	_, err := e.ns.WorkSpec(e.ctx, "x")
	e.wantErr("WorkSpec after rejected definitions", err, coordinate.ErrNoSuchWorkSpec)
	specs, _, err := e.ns.ListWorkSpecs(e.ctx, "", 0)
	if err != nil || len(specs) != 0 {
		e.t.Errorf("ListWorkSpecs after rejected definitions = %d specs, %v; want none", len(specs), err)
	}
}

func testSpecInvalidReSetKeepsOld(e *env) {
	e.spec(m{"name": "a", "weight": 5, "desc": "first"})
	before := e.getSpec("a")
	_, err := e.ns.SetWorkSpec(e.ctx, enc(e.t, m{"name": "a", "weight": "heavy"}))
	e.wantErr("re-set with bad weight", err, coordinate.ErrInvalidWorkSpec)
	after := e.getSpec("a")
	checkBytes(e.t, "definition after rejected re-set", after.Definition, before.Definition)
	if after.Meta != before.Meta {
		e.t.Errorf("meta after rejected re-set = %+v, want %+v", after.Meta, before.Meta)
	}
}

func testSpecReSetRederives(e *env) {
	e.spec(m{"name": "c", "continuous": true, "interval": 60, "weight": 5})
	e.addKeys("c", "real")
	// A synthetic unit at epoch sets NextContinuous to epoch+60s. The real
	// unit goes first, so drain it.
	a := e.workOne("w")
	e.finish("c", a.Key.Bytes, nil)
	synth := e.workOne("w")
	if synth.Key.Bytes == "real" {
		e.t.Fatalf("second GetWork returned the real unit again")
	}
	e.finish("c", synth.Key.Bytes, nil)
	next := e.getSpec("c").Meta.NextContinuous
	e.checkTime("NextContinuous after a synthetic unit", next, Epoch.Add(time.Minute))

	e.control("c", coordinate.WorkSpecControl{Paused: ptr(true), Weight: ptr(9), MaxRunning: ptr(3)})
	ws := e.spec(m{"name": "c", "continuous": true, "interval": 60, "weight": 6, "max_getwork": 2})
	want := coordinate.WorkSpecMeta{
		Weight: 6, Continuous: true, CanBeContinuous: true, Interval: time.Minute,
		NextContinuous: next, MaxGetwork: 2, ThenPreempts: true,
	}
	if got := e.getSpec("c").Meta; !metaEqual(got, want) {
		e.t.Errorf("meta after re-set = %+v, want %+v (control settings re-derived, NextContinuous kept)", got, want)
	}
	if !metaEqual(ws.Meta, want) {
		e.t.Errorf("SetWorkSpec returned meta %+v, want %+v", ws.Meta, want)
	}
	e.checkCounts("c", map[coordinate.Status]int{coordinate.StatusFinished: 2})
	// NextContinuous kept means no synthetic unit before epoch+60s.
	e.clock.Add(time.Second)
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
}

// metaEqual compares metas, times with Equal.
func metaEqual(a, b coordinate.WorkSpecMeta) bool {
	if !a.NextContinuous.Equal(b.NextContinuous) {
		return false
	}
	a.NextContinuous, b.NextContinuous = time.Time{}, time.Time{}
	return a == b
}

func testSpecControl(e *env) {
	e.spec(m{"name": "a", "continuous": true, "interval": 10, "max_running": 2, "weight": 4})
	e.control("a", coordinate.WorkSpecControl{Paused: ptr(true)})
	if got := e.getSpec("a").Meta; !got.Paused || got.Weight != 4 || got.MaxRunning != 2 {
		e.t.Errorf("after pausing: %+v, want paused, other settings unchanged", got)
	}
	e.control("a", coordinate.WorkSpecControl{
		Paused: ptr(false), Continuous: ptr(false), Interval: ptr(30 * time.Second),
		MaxRunning: ptr(0), Weight: ptr(11),
	})
	got := e.getSpec("a").Meta
	if got.Paused || got.Continuous || !got.CanBeContinuous || got.Interval != 30*time.Second || got.MaxRunning != 0 || got.Weight != 11 {
		e.t.Errorf("after control: %+v", got)
	}
	// Continuous can come back on: the definition allows it.
	e.control("a", coordinate.WorkSpecControl{Continuous: ptr(true), Interval: ptr(time.Duration(0))})
	got = e.getSpec("a").Meta
	if !got.Continuous || got.Interval != 0 {
		e.t.Errorf("after continuous on, interval cleared: %+v", got)
	}
	// Control settings leave the definition alone.
	checkData(e.t, "definition after control", e.getSpec("a").Definition,
		m{"name": "a", "continuous": true, "interval": 10, "max_running": 2, "weight": 4})
	// The settings control set are remembered (get_work_spec_meta shows
	// them as set, not as the definition has them) until the definition
	// is stored again.
	all := coordinate.ControlledContinuous | coordinate.ControlledInterval | coordinate.ControlledMaxRunning | coordinate.ControlledWeight
	if got := e.getSpec("a").Meta.Controlled; got != all {
		e.t.Errorf("Controlled after controlling every setting: %b, want %b", got, all)
	}
	e.spec(m{"name": "b", "continuous": 1})
	e.control("b", coordinate.WorkSpecControl{Continuous: ptr(true)})
	if got := e.getSpec("b").Meta; got.Controlled != coordinate.ControlledContinuous || !got.Continuous {
		e.t.Errorf("after continuous on over the definition's 1: %+v, want Controlled continuous only", got)
	}
	if got := e.spec(m{"name": "b", "continuous": 1}).Meta.Controlled; got != 0 {
		e.t.Errorf("SetWorkSpec returned Controlled %b, want none", got)
	}
	if got := e.getSpec("b").Meta.Controlled; got != 0 {
		e.t.Errorf("Controlled after the definition was stored again: %b, want none", got)
	}
}

func testSpecControlCannotBeContinuous(e *env) {
	e.spec(m{"name": "a", "weight": 3})
	before := e.getSpec("a").Meta
	err := e.ns.ControlWorkSpec(e.ctx, "a", coordinate.WorkSpecControl{
		Continuous: ptr(true), Paused: ptr(true), Weight: ptr(8),
	})
	e.wantErr("continuous on a non-continuous spec", err, coordinate.ErrCannotBeContinuous)
	if got := e.getSpec("a").Meta; got != before {
		e.t.Errorf("meta after failed control = %+v, want unchanged %+v", got, before)
	}
	// Turning it off is always allowed.
	e.control("a", coordinate.WorkSpecControl{Continuous: ptr(false)})
}

func testSpecControlUnknown(e *env) {
	err := e.ns.ControlWorkSpec(e.ctx, "nope", coordinate.WorkSpecControl{Paused: ptr(true)})
	e.wantErr("ControlWorkSpec unknown", err, coordinate.ErrNoSuchWorkSpec)
}

func testSpecUnknown(e *env) {
	_, err := e.ns.WorkSpec(e.ctx, "nope")
	e.wantErr("WorkSpec unknown", err, coordinate.ErrNoSuchWorkSpec)
	_, err = e.ns.CountWorkUnits(e.ctx, "nope")
	e.wantErr("CountWorkUnits unknown", err, coordinate.ErrNoSuchWorkSpec)
	err = e.ns.AddWorkUnits(e.ctx, "nope", []coordinate.WorkUnitInput{e.unit("k", m{})})
	e.wantErr("AddWorkUnits unknown", err, coordinate.ErrNoSuchWorkSpec)
	_, err = e.ns.ListWorkUnits(e.ctx, "nope", coordinate.WorkUnitQuery{})
	e.wantErr("ListWorkUnits unknown", err, coordinate.ErrNoSuchWorkSpec)
}

func testSpecListPaging(e *env) {
	for _, n := range []string{"c", "a", "\xff", "b", "d", "ab"} {
		e.spec(m{"name": cbor.ByteString(n)})
	}
	listing := func(start string, limit int) ([]string, *coordinate.Name) {
		e.t.Helper()
		specs, next, err := e.ns.ListWorkSpecs(e.ctx, start, limit)
		if err != nil {
			e.t.Fatalf("ListWorkSpecs(%q, %d): %v", start, limit, err)
		}
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name.Bytes
		}
		return names, next
	}
	cases := []struct {
		start string
		limit int
		want  []string
		next  string // "" = nil
	}{
		{"", 0, []string{"a", "ab", "b", "c", "d", "\xff"}, ""},
		{"", -1, []string{"a", "ab", "b", "c", "d", "\xff"}, ""},
		{"", 2, []string{"a", "ab"}, "b"},
		{"b", 2, []string{"b", "c"}, "d"},
		{"bb", 10, []string{"c", "d", "\xff"}, ""},
		{"d", 2, []string{"d", "\xff"}, ""},
		{"\xff\xff", 0, nil, ""},
	}
	for _, c := range cases {
		names, next := listing(c.start, c.limit)
		e.checkKeys("ListWorkSpecs("+c.start+")", names, c.want)
		switch {
		case c.next == "" && next != nil:
			e.t.Errorf("ListWorkSpecs(%q, %d) next = %q, want nil", c.start, c.limit, next.Bytes)
		case c.next != "" && (next == nil || next.Bytes != c.next):
			e.t.Errorf("ListWorkSpecs(%q, %d) next = %v, want %q", c.start, c.limit, next, c.next)
		}
	}
}

func testSpecDelete(e *env) {
	e.spec(m{"name": "a"})
	e.spec(m{"name": "b"})
	e.addKeys("a", "k1", "k2")
	e.addKeys("b", "k1")
	leased := e.work(coordinate.WorkRequest{Worker: text("w"), WorkSpecs: []string{"a"}})
	if err := e.ns.DeleteWorkSpec(e.ctx, "a"); err != nil {
		e.t.Fatalf("DeleteWorkSpec: %v", err)
	}
	_, err := e.ns.WorkSpec(e.ctx, "a")
	e.wantErr("WorkSpec after delete", err, coordinate.ErrNoSuchWorkSpec)
	_, err = e.ns.CountWorkUnits(e.ctx, "a")
	e.wantErr("CountWorkUnits after delete", err, coordinate.ErrNoSuchWorkSpec)
	e.checkCounts("b", map[coordinate.Status]int{coordinate.StatusAvailable: 1})
	// A worker finishing a unit of the deleted spec gets an error, not a crash.
	err = e.ns.UpdateWorkUnit(e.ctx, "a", "k1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
	e.wantErr("UpdateWorkUnit in a deleted spec", err, coordinate.ErrNoSuchWorkSpec)
	if len(leased) == 1 {
		err = e.ns.UpdateAttempt(e.ctx, ref(leased[0]), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished})
		if err == nil {
			e.t.Errorf("UpdateAttempt on a unit of a deleted spec succeeded")
		}
	}
	// Re-creating the spec does not bring the units back.
	e.spec(m{"name": "a"})
	e.checkCounts("a", nil)
	if got := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, WorkSpecs: []string{"a"}}); len(got) != 0 {
		e.t.Errorf("GetWork on a re-created spec returned %q", attemptKeys(got))
	}
}

func testSpecClear(e *env) {
	for _, n := range []string{"a", "b", "c"} {
		e.spec(m{"name": n})
		e.addKeys(n, "k")
	}
	n, err := e.ns.Clear(e.ctx)
	if err != nil || n != 3 {
		e.t.Errorf("Clear = %d, %v; want 3", n, err)
	}
	specs, _, err := e.ns.ListWorkSpecs(e.ctx, "", 0)
	if err != nil || len(specs) != 0 {
		e.t.Errorf("ListWorkSpecs after Clear = %d specs, %v", len(specs), err)
	}
	e.noWork(coordinate.WorkRequest{Worker: text("w")})
	// Everything works again after Clear.
	e.spec(m{"name": "a"})
	e.addKeys("a", "k2")
	if a := e.workOne("w"); a.Key.Bytes != "k2" {
		e.t.Errorf("GetWork after Clear returned %q, want k2", a.Key.Bytes)
	}
	n, err = e.ns.Clear(e.ctx)
	if err != nil || n != 1 {
		e.t.Errorf("second Clear = %d, %v; want 1", n, err)
	}
}

func testSpecByteAndTextNames(e *env) {
	ws := e.spec(m{"name": []byte("bin"), "weight": 1})
	if ws.Name != bin("bin") {
		e.t.Errorf("byte-string name = %+v, want byte kind", ws.Name)
	}
	e.spec(m{"name": "bin", "weight": 2})
	e.spec(m{"name": "txt", "weight": 1})
	e.spec(m{"name": []byte("txt"), "weight": 2})
	specs, _, err := e.ns.ListWorkSpecs(e.ctx, "", 0)
	if err != nil || len(specs) != 2 {
		e.t.Fatalf("ListWorkSpecs = %d specs, %v; want 2 (byte and text names are one spec)", len(specs), err)
	}
	for _, s := range specs {
		if s.Meta.Weight != 2 {
			e.t.Errorf("spec %q weight = %d, want 2 from the second definition", s.Name.Bytes, s.Meta.Weight)
		}
	}
	if got := e.getSpec("bin").Name; got != bin("bin") {
		e.t.Errorf("spec first set with a byte name echoes %+v, want byte kind", got)
	}
	if got := e.getSpec("txt").Name; got != text("txt") {
		e.t.Errorf("spec first set with a text name echoes %+v, want text kind", got)
	}
	e.addKeys("bin", "k")
	if a := e.workOne("w"); a.Spec != bin("bin") {
		e.t.Errorf("attempt spec name = %+v, want byte kind", a.Spec)
	}
}
