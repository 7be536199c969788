package coordinatetest

import (
	"github.com/coordinated/coordinated/coordinate"
)

// fidelityTests hold backends to the Python daemon's readings that users
// can tell apart (docs/compat.md): definitions Python stored are
// stored, `max_running: 0` runs none, `max_getwork: 0` hands out one unit
// per call, synthetic continuous keys are byte strings.
var fidelityTests = []test{
	{"PythonDefinitionsStored", testFidelityDefinitionsStored},
	{"UnusableThenChainsNothing", testFidelityUnusableThen},
	{"UnusableRuntimeIsLegacy", testFidelityUnusableRuntime},
	{"MaxRunningZeroRunsNone", testFidelityMaxRunningZero},
	{"MaxRunningZeroByControl", testFidelityMaxRunningZeroByControl},
	{"MaxGetworkZeroIsOne", testFidelityMaxGetworkZero},
	{"ContinuousKeysAreBytes", testFidelityContinuousKeyBytes},
}

// testFidelityDefinitionsStored: every definition the Python daemon
// answered (True, None) to is stored and given back byte for byte.
func testFidelityDefinitionsStored(e *env) {
	defs := []m{
		{"desc": 5}, {"desc": []any{"a"}}, {"config": "settings.yaml"}, {"config": []any{1, 2}},
		{"module": 5}, {"run_function": []any{"f"}}, {"then": 5}, {"runtime": 5},
		{"priority": "high"}, {"min_gb": "lots"}, {"min_gb": []any{1}}, {"max_retries": "x"},
		{"weight": int64(1e16)}, {"interval": 1e300}, {"max_running": "2"}, {"weight": 2.7},
	}
	for i, d := range defs {
		name := "s" + string(rune('a'+i))
		d["name"] = name
		def := enc(e.t, d)
		ws, err := e.ns.SetWorkSpec(e.ctx, def)
		if err != nil {
			e.t.Errorf("SetWorkSpec(%v): %v, want it stored as Python did", d, err)
			continue
		}
		checkBytes(e.t, "SetWorkSpec definition "+name, ws.Definition, def)
		checkBytes(e.t, "WorkSpec definition "+name, e.getSpec(name).Definition, def)
	}
	if got := e.getSpec("sm").Meta.Weight; got != 1<<31-1 {
		e.t.Errorf("weight 10**16 reads as %d, want the int32 maximum", got)
	}
	if got := e.getSpec("sp").Meta.Weight; got != 2 {
		e.t.Errorf("weight 2.7 reads as %d, want int(2.7) = 2", got)
	}
}

func testFidelityUnusableThen(e *env) {
	e.spec(m{"name": "a", "then": 5})
	e.spec(m{"name": "5"})
	e.addKeys("a", "k")
	e.workOne("w")
	e.finish("a", "k", m{"output": []any{"x"}})
	e.checkCounts("5", map[coordinate.Status]int{})
	e.checkStatus("a", coordinate.StatusFinished, "k")
}

func testFidelityUnusableRuntime(e *env) {
	e.spec(m{"name": "r", "runtime": 5})
	e.addKeys("r", "k")
	a := e.workOne("w") // a legacy request: only specs without a runtime
	if a.Key.Bytes != "k" {
		e.t.Errorf("got %q, want k: a non-string runtime is no runtime", a.Key.Bytes)
	}
}

func testFidelityMaxRunningZero(e *env) {
	for _, v := range []any{0, -1, "0"} {
		e.spec(m{"name": "s", "max_running": v})
		if n, ok := e.getSpec("s").Meta.MaxRunningValue(); !ok || n != pyIntOf(v) {
			e.t.Errorf("max_running %v reads as %d, %v", v, n, ok)
		}
		e.addKeys("s", "k1", "k2")
		e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	}
	e.spec(m{"name": "s", "max_running": 1})
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	e.checkKeys("max_running 1", attemptKeys(as), []string{"k1"})
}

func pyIntOf(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case string:
		return int(x[0] - '0')
	}
	return -99
}

func testFidelityMaxRunningZeroByControl(e *env) {
	e.spec(m{"name": "s"})
	e.addKeys("s", "k1", "k2", "k3")
	e.control("s", coordinate.WorkSpecControl{MaxRunning: ptr(coordinate.EncodeMaxRunning(0))})
	if n, ok := e.getSpec("s").Meta.MaxRunningValue(); !ok || n != 0 {
		e.t.Errorf("after control max_running 0: %d, %v; want 0, set", n, ok)
	}
	e.noWork(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	e.control("s", coordinate.WorkSpecControl{MaxRunning: ptr(coordinate.EncodeMaxRunning(2))})
	as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	e.checkKeys("max_running 2", attemptKeys(as), []string{"k1", "k2"})
	e.control("s", coordinate.WorkSpecControl{MaxRunning: ptr(0)}) // unlimited
	as = e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 5})
	e.checkKeys("unlimited", attemptKeys(as), []string{"k3"})
}

func testFidelityMaxGetworkZero(e *env) {
	for _, v := range []any{0, -3} {
		e.spec(m{"name": "s", "max_getwork": v})
		e.addKeys("s", "a", "b", "c")
		as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10})
		if len(as) != 1 {
			e.t.Errorf("max_getwork %v: got %q, want one unit per call", v, attemptKeys(as))
		}
		if err := e.ns.DeleteWorkSpec(e.ctx, "s"); err != nil {
			e.t.Fatalf("DeleteWorkSpec: %v", err)
		}
	}
}

func testFidelityContinuousKeyBytes(e *env) {
	e.spec(m{"name": "c", "continuous": true})
	as := e.work(coordinate.WorkRequest{Worker: text("w")})
	if len(as) != 1 {
		e.t.Fatalf("continuous spec handed out %q, want one synthetic unit", attemptKeys(as))
	}
	if as[0].Key.Text {
		e.t.Errorf("synthetic key %q handed out as a text string, want bytes", as[0].Key.Bytes)
	}
	if u := e.mustGet("c", as[0].Key.Bytes); u.Key.Text {
		e.t.Errorf("synthetic key %q stored as a text string, want bytes", u.Key.Bytes)
	}
}
